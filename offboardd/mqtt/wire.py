"""The MQTT wire format below the command schema: error codes, replies, JSON in and out.

Owns: the stable MQTT error codes (`MqttErrorCode`), a `Rejection` (code + human message,
never handed to the engine), the reply route (where and with what correlation a reply
goes), strict JSON loading (size limit, NaN/Infinity literals refused, object at the top,
schema version checked) and JSON encoding of outbound payloads (`"v": 1` added, non-finite
floats turned into null, enums/dataclasses/tuples made plain).

Pure: no I/O, no aiomqtt, no engine types. `schema.py` builds commands on top of this.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = 1


class MqttErrorCode(enum.StrEnum):
    """Codes that go out in replies for input refused before it reaches the engine.

    Part of the public interface: never rename one, only add. Engine refusals use
    `offboardd.errors.ErrorCode` (e.g. `command_not_allowed`) in the same `code` field.
    """

    PAYLOAD_TOO_LARGE = "payload_too_large"
    MALFORMED_JSON = "malformed_json"
    NOT_AN_OBJECT = "not_an_object"
    UNSUPPORTED_VERSION = "unsupported_version"
    MISSING_FIELD = "missing_field"
    WRONG_TYPE = "wrong_type"
    NOT_FINITE = "not_finite"
    OUT_OF_RANGE = "out_of_range"
    UNKNOWN_FIELD = "unknown_field"
    UNKNOWN_COMMAND = "unknown_command"
    UNKNOWN_SETPOINT_KIND = "unknown_setpoint_kind"
    SETPOINT_INVALID = "setpoint_invalid"  # same string as errors.ErrorCode.SETPOINT_INVALID
    CONFIRMATION_REQUIRED = "confirmation_required"
    SETPOINT_STALE = "setpoint_stale"  # seq not newer within its session, or a retired session
    RETAINED_REFUSED = "retained_refused"  # a retained command never acts (replay safety)
    INTERNAL_ERROR = "internal_error"  # offboardd failed handling a valid command (a bug)
    RATE_LIMITED = "rate_limited"  # more commands than a commander may send (mqtt/rates.py)


@dataclass(frozen=True)
class Rejection:
    """Input refused by the MQTT layer: replied to, logged, never handed to the engine."""

    code: str
    message: str
    command_id: str | None = None


@dataclass(frozen=True)
class ReplyRoute:
    """Where the reply to one inbound message goes.

    `topic` is the MQTT 5 response topic when the request named one, else the default
    reply topic. `correlation_data` is echoed unchanged (MQTT 5 only). `reply_on_success`
    is False for the high-rate setpoint topic: only refusals are replied to there, so a
    50 Hz stream does not produce 50 replies a second.
    """

    topic: str
    command_id: str | None
    correlation_data: bytes | None = None
    reply_on_success: bool = True


def reply_document(
    command_id: str | None, *, ok: bool, code: str | None, message: str, **extra: Any
) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": command_id, "ok": ok, "code": None if ok else code}
    doc["message"] = message
    doc.update(extra)
    return doc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to inf without ever spelling "Infinity"
        raise ValueError(f"{text} overflows a float and is not allowed")
    return value


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different. With a key given twice Python keeps the last,
    while whatever read the message on its way (an ACL, a proxy, a log) may have taken the
    first: `{"id":"a","id":"b"}` was answered as `b` (review). Refused as malformed."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"key {echo(key)} is given twice in one object")
            seen.add(key)
    return doc


def load_document(payload: bytes, *, max_bytes: int) -> dict[str, Any] | Rejection:
    """Bytes -> a JSON object with `"v": 1`, or a coded rejection (never raises)."""
    if len(payload) > max_bytes:
        return Rejection(
            MqttErrorCode.PAYLOAD_TOO_LARGE,
            f"payload is {len(payload)} bytes; the limit is {max_bytes}",
        )
    try:
        text = payload.decode("utf-8")
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                         object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        return Rejection(MqttErrorCode.MALFORMED_JSON, "payload is not UTF-8")
    except _DuplicateKey as exc:
        return Rejection(MqttErrorCode.MALFORMED_JSON, f"payload refused: {exc}")
    except ValueError as exc:  # JSONDecodeError is a ValueError; so are NaN/Infinity
        if "not allowed" in str(exc):
            return Rejection(MqttErrorCode.NOT_FINITE, f"JSON NaN/Infinity refused: {exc}",
                             _lenient_id(text))
        return Rejection(MqttErrorCode.MALFORMED_JSON, f"payload is not JSON: {exc}")
    except RecursionError:
        return Rejection(MqttErrorCode.MALFORMED_JSON, "payload is nested too deeply")
    if not isinstance(doc, dict):
        return Rejection(MqttErrorCode.NOT_AN_OBJECT, "payload must be a JSON object")
    command_id = peek_id(doc)
    version = doc.get("v")
    if version is None:
        return Rejection(MqttErrorCode.MISSING_FIELD, 'field "v" (schema version) is required',
                         command_id)
    if type(version) is not int or version != SCHEMA_VERSION:
        return Rejection(
            MqttErrorCode.UNSUPPORTED_VERSION,
            f"schema version {echo(version)} is not supported; use {SCHEMA_VERSION}",
            command_id,
        )
    return doc


def _lenient_id(text: str) -> str | None:
    """The id of a document refused for a NaN or an infinity, so that the refusal can
    quote it (an MQTT 3.1.1 client matches replies by id; review): read again with
    Python's own leniency, for the id only."""
    try:
        return peek_id(json.loads(text))
    except (ValueError, RecursionError):
        return None


def peek_id(doc: object) -> str | None:
    """The command id of a document, if it has a usable one (for correlating refusals)."""
    if isinstance(doc, dict):
        value = doc.get("id")
        if isinstance(value, str) and 0 < len(value) <= 128:
            return value
    return None


def peek_id_bytes(payload: bytes, *, max_bytes: int, stream: bool = False) -> str | None:
    """The id a refusal of `payload` quotes. `stream`: a setpoint-topic message, whose id
    without an `id` is "<session>:<seq>" (a retained one was refused with "id": null:
    review)."""
    loaded = load_document(payload, max_bytes=max_bytes)
    if isinstance(loaded, Rejection):
        return loaded.command_id
    command_id = peek_id(loaded)
    session, seq = loaded.get("session"), loaded.get("seq")
    if command_id is None and stream and isinstance(session, str) and type(seq) is int:
        return stream_id(session, seq)
    return command_id


def stream_id(session: str, seq: int) -> str:
    """What a refusal quotes for a setpoint-topic message without an `id`."""
    return f"{session}:{seq}"


def to_jsonable(value: Any) -> Any:
    """Plain JSON data: non-finite floats -> None, enums -> value, dataclasses -> dict."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


# One encoder for every outbound document (json.dumps with options builds one per call).
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def encode_document(doc: Mapping[str, Any]) -> bytes:
    """Outbound JSON with the schema version first; never emits NaN/Infinity."""
    try:
        # Telemetry is plain already (finite floats or None, str keys): no walk needed.
        # The encoder refuses anything else (NaN, an enum, a dataclass, a set...).
        text = _ENCODER.encode(_versioned(doc))
    except (TypeError, ValueError):
        text = _ENCODER.encode(_versioned(to_jsonable(doc)))
    return text.encode("utf-8")


def _versioned(doc: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"v": SCHEMA_VERSION}  # first, and never the caller's "v"
    body.update(doc)
    body["v"] = SCHEMA_VERSION
    return body


ECHO_CHARS = 40  # of a client's string quoted back in a refusal (and so in the log)


def echo(value: Any) -> str:
    """A client's value quoted back in a refusal, never longer than ECHO_CHARS: a 30 KB
    unknown name must not come back as a 30 KB reply and journal line."""
    if type(value) is str:
        return repr(value[:ECHO_CHARS]) + ("…" if len(value) > ECHO_CHARS else "")
    return describe(value)


def describe(value: Any) -> str:
    """A short JSON-flavoured description of a value for a message (never huge)."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        if abs(value) < 10**20:
            return str(value)
        # not str(value): it refuses ints of over 4300 digits (CPython's int_max_str_digits)
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    if type(value) is float:
        return repr(value)
    if type(value) is str:
        return f"the string {echo(value)}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"
