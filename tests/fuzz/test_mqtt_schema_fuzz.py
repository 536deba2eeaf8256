"""Fuzz the MQTT input gate: `CommandDecoder.decode_bytes` (schema.py over wire.py).

Properties, for any bytes on the `cmd` or `setpoint` topic:
- it never raises;
- the result is a core command, or a `Rejection` whose code is one of the documented
  codes (`MqttErrorCode`, or the engine's `ErrorCode` for a core refusal) with a message;
- a command that carries a setpoint carries one PX4 accepts *and can fly*: built by
  `translate`, sent as MAVLink 2 bytes and judged by the sim's independent validator;
- the accepted setpoint is what the document said (no silent change of a value);
- the envelope then admits it within its limits or refuses it with a reason (never
  raises), and what it admits is still flyable.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from offboardd.core.commands import COMMAND_TYPES, Command, Engage, SetSetpoint
from offboardd.core.envelope import Envelope
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcHomePosition
from offboardd.core.setpoints import Attitude, Setpoint
from offboardd.errors import ErrorCode
from offboardd.mqtt.schema import CommandDecoder
from offboardd.mqtt.schema_setpoints import setpoint_to_wire
from offboardd.mqtt.wire import MqttErrorCode, Rejection

from .budget import Cases, fuzz_settings
from .judge import HOME_ALT_M, HOME_LAT_DEG, HOME_LON_DEG, EnvelopeJudge, HomeFix, wire
from .judge import assert_px4_flies as flies
from .mqtt_strategies import (
    JSON_VALUES,
    command_documents,
    deep_nesting,
    mutated,
    serialised,
    stream_documents,
)

MAX_BYTES = 4096  # the daemon's default max_payload_bytes
CODES = {str(c) for c in MqttErrorCode} | {str(c) for c in ErrorCode}
CHANNELS = st.sampled_from(["cmd", "setpoint"])
HOME = HomeFix(HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M, 2.0, -3.0, 0.5)
FENCED = EnvelopeSettings(max_distance_m=150.0, min_altitude_m=-5.0, max_altitude_m=120.0,
                          polygon=((-100.0, -100.0), (-100.0, 140.0), (60.0, 0.0),
                                   (130.0, 130.0), (130.0, -100.0)))


def decode(decoder: CommandDecoder, channel: str, payload: bytes) -> Command | Rejection:
    result = decoder.decode_bytes(channel, payload, max_bytes=MAX_BYTES)
    if isinstance(result, Rejection):
        assert str(result.code) in CODES, result
        assert isinstance(result.message, str) and result.message, result
        assert result.command_id is None or isinstance(result.command_id, str)
    else:
        assert isinstance(result, COMMAND_TYPES), result
        assert isinstance(result.command_id, str) and result.command_id
    return result


def check_setpoint(sp: Setpoint) -> None:
    """Flyable as sent, and the envelope (plain and fenced) admits or refuses it cleanly."""
    flies(sp)
    for settings in (EnvelopeSettings(), FENCED):
        envelope = Envelope(settings)
        envelope.set_home(FcHomePosition(HOME.lat_deg, HOME.lon_deg, HOME.alt_amsl_m,
                                         HOME.north_m, HOME.east_m, HOME.down_m))
        verdict = envelope.admit(sp)
        if verdict.setpoint is None:
            assert verdict.reason is not None and verdict.message, verdict
            continue
        flies(verdict.setpoint)
        problems = EnvelopeJudge(settings, HOME).problems(wire(verdict.setpoint))
        assert not problems, (sp, verdict.setpoint, problems)


def same_values(sp: Setpoint, body: dict[str, Any]) -> None:
    """The core value holds exactly the document's numbers (attitude: normalised)."""
    if isinstance(sp, Attitude):
        norm = math.sqrt(sum(float(body[k]) ** 2 for k in "wxyz"))
        for k in "wxyz":
            assert math.isclose(getattr(sp, k), float(body[k]) / norm, abs_tol=1e-12)
        return
    for key, value in setpoint_to_wire(sp).items():
        if key in body and not isinstance(value, str):
            assert value == body[key], (key, value, body[key])


def _versioned(doc: Any) -> Any:
    return {**doc, "v": 1} if isinstance(doc, dict) else doc


RANDOM_JSON = JSON_VALUES | JSON_VALUES.map(_versioned)
DOCUMENTS = command_documents() | stream_documents()


@fuzz_settings("test_random_json_documents_never_raise")
@given(payload=serialised(RANDOM_JSON), channel=CHANNELS)
def test_random_json_documents_never_raise(payload: bytes, channel: str, cases: Cases) -> None:
    """One case: an arbitrary JSON value (objects get "v": 1 half the time), maybe damaged."""
    cases.add()
    decode(CommandDecoder(), channel, payload)


@fuzz_settings("test_mutated_commands_and_setpoints_are_commands_or_coded_rejections")
@given(payloads=st.lists(
    serialised(mutated(command_documents()) | mutated(stream_documents()) | DOCUMENTS),
    min_size=1, max_size=4), channel=CHANNELS)
def test_mutated_commands_and_setpoints_are_commands_or_coded_rejections(
    payloads: list[bytes], channel: str, cases: Cases
) -> None:
    """One case: one to four valid-then-broken documents through one decoder (its replay
    guard keeps state across them); every setpoint that gets through is flyable."""
    cases.add()
    decoder = CommandDecoder()
    for payload in payloads:
        result = decode(decoder, channel, payload)
        if isinstance(result, Engage | SetSetpoint) and result.setpoint is not None:
            cases.note("accepted_setpoint")
            check_setpoint(result.setpoint)


@fuzz_settings("test_random_payload_bytes_are_rejected_with_a_code")
@given(payload=st.binary(max_size=300) | st.integers(1, 5000).map(deep_nesting)
       | st.integers(MAX_BYTES - 2, MAX_BYTES + 2).map(lambda n: b"{" + b" " * (n - 2) + b"}"),
       channel=CHANNELS)
def test_random_payload_bytes_are_rejected_with_a_code(
    payload: bytes, channel: str, cases: Cases
) -> None:
    """One case: random bytes, a deeply nested document, or one around the size limit."""
    cases.add()
    result = decode(CommandDecoder(), channel, payload)
    assert isinstance(result, Rejection), result


@fuzz_settings("test_accepted_setpoints_are_ones_px4_accepts_and_can_fly")
@given(doc=DOCUMENTS)
def test_accepted_setpoints_are_ones_px4_accepts_and_can_fly(
    doc: dict[str, Any], cases: Cases
) -> None:
    """One case: a schema-shaped command or stream setpoint with values anywhere from
    ordinary to absurd; accepted ones carry exactly the sent values and fly."""
    cases.add()
    channel = "cmd" if "cmd" in doc else "setpoint"
    payload = json.dumps(doc, allow_nan=True).encode()
    result = decode(CommandDecoder(), channel, payload)
    if isinstance(result, Engage | SetSetpoint) and result.setpoint is not None:
        cases.note("accepted_setpoint")
        body = doc.get("setpoint", doc)
        same_values(result.setpoint, body)
        check_setpoint(result.setpoint)
