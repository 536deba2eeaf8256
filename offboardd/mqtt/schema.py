"""Command JSON (schema v1) <-> core commands, and the setpoint replay guard.

Command topic (`cmd`), one JSON object per command:

    {"v": 1, "id": "c1", "cmd": "engage", "arm": true,
     "setpoint": {"kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -5}}
    {"v": 1, "id": "c2", "cmd": "setpoint", "session": "s1", "seq": 3, "setpoint": {...}}
    {"v": 1, "id": "c3", "cmd": "release" | "hold" | "land" | "rtl" | "arm" | "heartbeat"}
    {"v": 1, "id": "c4", "cmd": "disarm", "force": false}
    {"v": 1, "id": "c5", "cmd": "emergency_stop", "confirm": true}

Setpoint topic (`setpoint`), flat, high rate, `id` optional:

    {"v": 1, "session": "s1", "seq": 17, "kind": "velocity_ned", "north_m_s": 1, ...}

`CommandDecoder.decode` returns a core command or a coded `Rejection`; it never raises,
so nothing invalid ever reaches the engine. It holds the replay guard's state (one per
bridge, no module globals). Pure: no I/O.
"""

from __future__ import annotations

from collections import deque
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from offboardd.core.commands import (
    Arm,
    Command,
    CommanderHeartbeat,
    CommandKind,
    Disarm,
    EmergencyStop,
    Engage,
    Hold,
    Land,
    Release,
    Rtl,
    SetSetpoint,
)
from offboardd.errors import OffboarddError, SetpointError
from offboardd.mqtt.schema_setpoints import (
    SETPOINT_TABLE,
    WireModel,
    setpoint_from_wire,
    setpoint_to_wire,
)
from offboardd.mqtt.wire import MqttErrorCode, Rejection, load_document, peek_id

CommandId = Annotated[str, Field(min_length=1, max_length=128)]
SessionId = Annotated[str, Field(min_length=1, max_length=64)]
Seq = Annotated[int, Field(ge=0, le=2**53)]  # JSON-safe integer range (IEEE double)

_PYDANTIC_CODES = {
    "missing": MqttErrorCode.MISSING_FIELD,
    "extra_forbidden": MqttErrorCode.UNKNOWN_FIELD,
    "finite_number": MqttErrorCode.NOT_FINITE,
    "greater_than_equal": MqttErrorCode.OUT_OF_RANGE,
    "less_than_equal": MqttErrorCode.OUT_OF_RANGE,
    "greater_than": MqttErrorCode.OUT_OF_RANGE,
    "less_than": MqttErrorCode.OUT_OF_RANGE,
    "string_too_short": MqttErrorCode.OUT_OF_RANGE,
    "string_too_long": MqttErrorCode.OUT_OF_RANGE,
}


class _Envelope(WireModel):
    v: Literal[1]
    id: CommandId


class _Sequenced(_Envelope):
    session: SessionId | None = None
    seq: Seq | None = None


class EngageWire(_Sequenced):
    cmd: Literal["engage"]
    arm: bool = False
    setpoint: dict[str, Any] | None = None  # None: hold where the vehicle is


class SetpointCommandWire(_Sequenced):
    cmd: Literal["setpoint"]
    setpoint: dict[str, Any]


class BareCommandWire(_Envelope):
    cmd: Literal["release", "hold", "land", "rtl", "arm", "heartbeat"]


class DisarmWire(_Envelope):
    cmd: Literal["disarm"]
    force: bool = False


class EmergencyStopWire(_Envelope):
    cmd: Literal["emergency_stop"]
    confirm: bool = False


class SetpointStreamWire(WireModel):
    v: Literal[1]
    session: SessionId
    seq: Seq
    id: CommandId | None = None


_COMMAND_MODELS: dict[str, type[WireModel]] = {
    "engage": EngageWire, "setpoint": SetpointCommandWire, "disarm": DisarmWire,
    "emergency_stop": EmergencyStopWire,
    **{name: BareCommandWire for name in ("release", "hold", "land", "rtl", "arm", "heartbeat")},
}
_BARE: dict[str, type[Release | Hold | Land | Rtl | Arm | CommanderHeartbeat]] = {
    "release": Release, "hold": Hold, "land": Land, "rtl": Rtl, "arm": Arm,
         "heartbeat": CommanderHeartbeat}


def _rejection(exc: ValidationError, command_id: str | None, where: str = "") -> Rejection:
    first = exc.errors()[0]
    field = where + ".".join(str(part) for part in first["loc"])
    code = _PYDANTIC_CODES.get(first["type"], MqttErrorCode.WRONG_TYPE)
    if first["type"] == "literal_error" and field in ("cmd", "v"):
        code = MqttErrorCode.UNKNOWN_COMMAND if field == "cmd" else \
            MqttErrorCode.UNSUPPORTED_VERSION
    return Rejection(code, f"{field or 'payload'}: {first['msg']}", command_id)


class ReplayGuard:
    """Drops setpoints that are not newer than the last one of their commander session.

    A new session id starts over (a restarted commander); the ids of sessions it replaced
    are remembered (a bounded number) so their late or replayed setpoints are dropped too.
    """

    def __init__(self, retired_sessions: int = 32) -> None:
        self.session: str | None = None
        self.last_seq = -1
        self._retired: deque[str] = deque(maxlen=retired_sessions)

    def check(self, session: str, seq: int) -> str | None:
        """None when fresh (and remembered); else why it is dropped."""
        if session == self.session:
            if seq <= self.last_seq:
                return f"seq {seq} is not newer than {self.last_seq} in session {session!r}"
        elif session in self._retired:
            return f"session {session!r} was replaced by a newer one"
        else:
            if self.session is not None:
                self._retired.append(self.session)
            self.session = session
        self.last_seq = seq
        return None


class CommandDecoder:
    """JSON documents (already loaded, `"v"` checked) -> core commands or rejections."""

    def __init__(self) -> None:
        self.replay = ReplayGuard()

    def decode_bytes(self, channel: str, payload: bytes, *, max_bytes: int) -> Command | Rejection:
        """Size, JSON, version, schema, core validity and replay, in that order."""
        loaded = load_document(payload, max_bytes=max_bytes)
        if isinstance(loaded, Rejection):
            return loaded
        return self.decode(channel, loaded)

    def decode(self, channel: str, document: dict[str, Any]) -> Command | Rejection:
        try:
            if channel == "setpoint":
                return self._decode_stream(document)
            return self._decode_command(document)
        except OffboarddError as exc:  # a core constructor refused (e.g. command_id)
            return Rejection(exc.code, exc.message, peek_id(document))

    def _decode_command(self, doc: dict[str, Any]) -> Command | Rejection:
        command_id = peek_id(doc)
        name = doc.get("cmd")
        if name is None:
            return Rejection(MqttErrorCode.MISSING_FIELD, 'field "cmd" is required', command_id)
        if not isinstance(name, str) or name not in _COMMAND_MODELS:
            return Rejection(MqttErrorCode.UNKNOWN_COMMAND,
                             f"unknown command {name!r}; one of {sorted(_COMMAND_MODELS)}",
                             command_id)
        try:
            model = _COMMAND_MODELS[name].model_validate(doc)
        except ValidationError as exc:
            return _rejection(exc, command_id)
        if isinstance(model, EngageWire | SetpointCommandWire):
            return self._decode_sequenced(model)
        if isinstance(model, DisarmWire):
            return Disarm(model.id, force=model.force)
        if isinstance(model, EmergencyStopWire):
            if not model.confirm:
                return Rejection(MqttErrorCode.CONFIRMATION_REQUIRED,
                                 'emergency_stop force-disarms in flight: add "confirm": true',
                                 model.id)
            return EmergencyStop(model.id, confirm=True)
        assert isinstance(model, BareCommandWire)
        command: Command = _BARE[model.cmd](model.id)
        return command

    def _decode_sequenced(self, model: EngageWire | SetpointCommandWire) -> Command | Rejection:
        if (model.session is None) != (model.seq is None):
            return Rejection(MqttErrorCode.MISSING_FIELD,
                             '"session" and "seq" go together: give both or neither', model.id)
        setpoint = None
        if model.setpoint is not None:
            built = _setpoint(model.setpoint, model.id, "setpoint.")
            if isinstance(built, Rejection):
                return built
            setpoint = built
        if model.session is not None and model.seq is not None:
            stale = self.replay.check(model.session, model.seq)
            if stale is not None:
                return Rejection(MqttErrorCode.SETPOINT_STALE, stale, model.id)
        if isinstance(model, EngageWire):
            return Engage(model.id, setpoint=setpoint, arm=model.arm)
        assert setpoint is not None
        return SetSetpoint(model.id, setpoint)

    def _decode_stream(self, doc: dict[str, Any]) -> Command | Rejection:
        command_id = peek_id(doc)
        envelope = {k: doc[k] for k in ("v", "session", "seq", "id") if k in doc}
        try:
            head = SetpointStreamWire.model_validate(envelope)
        except ValidationError as exc:
            return _rejection(exc, command_id)
        command_id = head.id or f"{head.session}:{head.seq}"
        body = {k: value for k, value in doc.items() if k not in envelope}
        built = _setpoint(body, command_id)
        if isinstance(built, Rejection):
            return built
        stale = self.replay.check(head.session, head.seq)
        if stale is not None:
            return Rejection(MqttErrorCode.SETPOINT_STALE, stale, command_id)
        return SetSetpoint(command_id, built)


def _setpoint(doc: dict[str, Any], command_id: str | None, where: str = "") -> Any:
    kind = doc.get("kind")
    if kind is None:
        return Rejection(MqttErrorCode.MISSING_FIELD, f'field "{where}kind" is required',
                         command_id)
    if not isinstance(kind, str) or kind not in SETPOINT_TABLE:
        return Rejection(MqttErrorCode.UNKNOWN_SETPOINT_KIND,
                         f"unknown setpoint kind {kind!r}; one of {sorted(SETPOINT_TABLE)}",
                         command_id)
    try:
        model = SETPOINT_TABLE[kind][0].model_validate(doc)
        return setpoint_from_wire(model)
    except ValidationError as exc:
        return _rejection(exc, command_id, where)
    except SetpointError as exc:
        return Rejection(MqttErrorCode.SETPOINT_INVALID, exc.message, command_id)


# -- encoding (used by the Python client and by tests) -------------------------------------

def encode_command(command: Command, *, session: str | None = None,
                   seq: int | None = None) -> dict[str, Any]:
    """The JSON object (without "v": `wire.encode_document` adds it) for a core command."""
    doc: dict[str, Any] = {"id": command.command_id, "cmd": str(command.kind)}
    if isinstance(command, Engage | SetSetpoint):
        if session is not None and seq is not None:
            doc.update(session=session, seq=seq)
        if isinstance(command, Engage):
            doc["arm"] = command.arm
        if command.setpoint is not None:
            doc["setpoint"] = setpoint_to_wire(command.setpoint)
    elif isinstance(command, Disarm):
        doc["force"] = command.force
    elif isinstance(command, EmergencyStop):
        doc["confirm"] = command.confirm
    return doc


def encode_stream_setpoint(setpoint: Any, *, session: str, seq: int,
                           command_id: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"session": session, "seq": seq}
    if command_id is not None:
        doc["id"] = command_id
    doc.update(setpoint_to_wire(setpoint))
    return doc


COMMAND_NAMES: tuple[str, ...] = tuple(str(kind) for kind in CommandKind)
