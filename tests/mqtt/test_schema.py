"""Schema v1, pure: every command, every setpoint kind, every malformed class, replay."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from offboardd.core.motion_commands import FollowPath, Goto, Orbit, Stop, Yaw, YawMode
from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    Attitude,
    BodyRates,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    SetpointKind,
    VelocityBody,
    VelocityNed,
)
from offboardd.mqtt.queries import FlightsQuery
from offboardd.mqtt.schema import (
    COMMAND_NAMES,
    CommandDecoder,
    ReplayGuard,
    SeqRepeated,
    encode_command,
    encode_stream_setpoint,
)
from offboardd.mqtt.schema_setpoints import SETPOINT_TABLE
from offboardd.mqtt.wire import Rejection, encode_document, to_jsonable

MAX_BYTES = 4096

SETPOINTS: list[Setpoint] = [
    PositionNed(1.0, -2.0, -10.0, yaw_rad=0.5),
    PositionNed(0.0, 0.0, -3.0, yaw_rate_rad_s=0.2),
    VelocityNed(1.0, 0.5, -0.2),
    VelocityBody(2.0, 0.0, 0.0, yaw_rate_rad_s=0.3),
    AccelerationNed(0.1, 0.2, 0.0, yaw_rad=1.0),
    PositionVelocityNed(1, 2, -3, 0.5, 0.5, 0.0),
    PositionVelocityNed(1, 2, -3, 0.5, 0.5, 0.0, north_m_s2=0.1, east_m_s2=0.0, down_m_s2=0.0),
    GlobalPosition(47.397742, 8.545594, 488.0),
    GlobalPosition(47.397742, 8.545594, 10.0, altitude_frame=AltitudeFrame.RELATIVE),
    Attitude(1.0, 0.0, 0.0, 0.0, thrust=0.5),
    BodyRates(0.0, 0.1, -0.1, thrust=0.6),
]

COMMANDS: list[Command] = [
    Engage("e1", setpoint=PositionNed(0, 0, -5), arm=True),
    Engage("e2"),
    SetSetpoint("s1", VelocityNed(1, 0, 0)),
    Release("r1"), Hold("h1"), Land("l1"), Rtl("t1"), Arm("a1"), Arm("a2", resume="K_iJzR5GgeXs"),
    Hold("h2", resume="tok"), Land("l2", resume="tok"), Rtl("t2", resume="tok"),
    Disarm("d1"), Disarm("d2", force=True),
    EmergencyStop("x1", confirm=True),
    CommanderHeartbeat("hb1"),
    CommanderHeartbeat("hb2", ack=False),
    # issue 16: the motions (yaw in degrees on the wire: a round trip keeps 90 exactly)
    Goto("g1", PositionNed(5, 0, -5), speed_m_s=3.0, yaw=Yaw(YawMode.FACE_TRAVEL),
         engage=True, arm=True),
    Goto("g2", GlobalPosition(47.1, 8.5, 20.0, AltitudeFrame.RELATIVE)),
    FollowPath("p1", (PositionNed(5, 0, -5), PositionNed(5, 5, -5)), corner_radius_m=0.0,
               yaw=Yaw(YawMode.FIXED, math.radians(90))),
    Orbit("o1", PositionNed(0, 5, -5), radius_m=5.0, turns=2.5, clockwise=False),
    Stop("st1"),
    # the hold's resume token (mqtt-api.md, the lease)
    SetSetpoint("s2", VelocityNed(1, 0, 0), resume="tok"),
    Goto("g3", PositionNed(5, 0, -5), resume="tok"),
    FollowPath("p2", (PositionNed(5, 0, -5),), resume="tok"),
    Orbit("o2", PositionNed(0, 5, -5), radius_m=5.0, resume="tok"),
    Stop("st2", resume="tok"),
]


def decode(payload: bytes | dict[str, Any], channel: str = "cmd",
           decoder: CommandDecoder | None = None) -> Command | FlightsQuery | Rejection:
    if isinstance(payload, dict):
        payload = json.dumps(payload).encode()
    return (decoder or CommandDecoder()).decode_bytes(channel, payload, max_bytes=MAX_BYTES)


def code_of(result: object) -> str:
    assert isinstance(result, Rejection), result
    assert result.message
    return str(result.code)


def test_tables_cover_every_kind_and_command() -> None:
    assert set(SETPOINT_TABLE) == {str(k) for k in SetpointKind}
    assert set(COMMAND_NAMES) == {str(k) for k in CommandKind}
    assert {type(s).kind for s in SETPOINTS} == set(SetpointKind)
    assert {type(c).kind for c in COMMANDS} == set(CommandKind)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.command_id)
def test_every_command_round_trips(command: Command) -> None:
    assert decode(encode_document(encode_command(command))) == command


@pytest.mark.parametrize("setpoint", SETPOINTS, ids=lambda s: str(type(s).kind))
def test_every_setpoint_kind_round_trips_on_both_topics(setpoint: Setpoint) -> None:
    as_command = encode_command(SetSetpoint("c", setpoint), session="s", seq=1)
    assert decode(encode_document(as_command)) == SetSetpoint("c", setpoint)
    stream = encode_stream_setpoint(setpoint, session="s", seq=1)
    assert decode(encode_document(stream), "setpoint") == SetSetpoint("s:1", setpoint)


def test_a_stream_setpoint_carries_the_resume_token_and_refuses_a_bad_one() -> None:
    stream = encode_stream_setpoint(VelocityNed(1, 0, 0), session="s", seq=1, resume="tok")
    assert decode(encode_document(stream), "setpoint") == SetSetpoint(
        "s:1", VelocityNed(1, 0, 0), resume="tok")
    assert code_of(decode({**stream, "v": 1, "seq": 2, "resume": "x" * 65}, "setpoint")) == (
        "out_of_range")
    assert code_of(decode({**stream, "v": 1, "seq": 3, "resume": 7}, "setpoint")) == "wrong_type"
    assert code_of(decode({"v": 1, "id": "h", "cmd": "heartbeat", "resume": "tok"})) == (
        "unknown_field")  # a heartbeat never resumes: it takes no token


def test_stream_setpoint_example_from_the_docs() -> None:
    doc = {"v": 1, "session": "abc", "seq": 17, "kind": "position_ned", "north_m": 1,
           "east_m": 2, "down_m": -3, "yaw_rad": 0}
    assert decode(doc, "setpoint") == SetSetpoint("abc:17", PositionNed(1, 2, -3, yaw_rad=0.0))


HOVER = {"kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -5}
ENGAGE = {"v": 1, "id": "a", "cmd": "engage"}


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"{", "malformed_json"),
        (b"\xc3\x28", "malformed_json"),
        (b"[" * 100_000, "payload_too_large"),
        (b"[" * 1500 + b"]" * 1500, "malformed_json"),  # nested past the recursion limit
        (b'"engage"', "not_an_object"),
        (b'{"v":1,"id":"a","cmd":"engage","setpoint":{"kind":"position_ned","north_m":NaN,'
         b'"east_m":0,"down_m":0}}', "not_finite"),
        (b'{"v":1,"id":"a","cmd":"hold","x":-Infinity}', "not_finite"),
        (b'{"v":1,"id":"dup","id":"dup2","cmd":"hold"}', "malformed_json"),
        (b'{"v":1,"id":"a","cmd":"hold","not allowed":1,"not allowed":2}', "malformed_json"),
        (b'{"v":1,"id":"a","cmd":"engage","setpoint":{"kind":"position_ned","north_m":1,'
         b'"east_m":0,"down_m":-5,"down_m":-50}}', "malformed_json"),
        ({"id": "a", "cmd": "hold"}, "missing_field"),
        ({"v": "1", "id": "a", "cmd": "hold"}, "unsupported_version"),
        ({"v": 1, "cmd": "hold"}, "missing_field"),
        ({"v": 1, "id": "", "cmd": "hold"}, "out_of_range"),
        ({"v": 1, "id": 7, "cmd": "hold"}, "wrong_type"),
        ({"v": 1, "id": "a"}, "missing_field"),
        ({"v": 1, "id": "a", "cmd": "fly_away"}, "unknown_command"),
        ({"v": 1, "id": "a", "cmd": 3}, "unknown_command"),
        ({"v": 1, "id": "a", "cmd": "hold", "please": True}, "unknown_field"),
        ({"v": 1, "id": "a", "cmd": "engage", "arm": "yes"}, "wrong_type"),
        ({"v": 1, "id": "a", "cmd": "engage", "setpoint": [1, 2]}, "wrong_type"),
        (ENGAGE | {"setpoint": {"kind": "warp"}}, "unknown_setpoint_kind"),
        (ENGAGE | {"setpoint": {"north_m": 1}}, "missing_field"),
        (ENGAGE | {"setpoint": {**HOVER, "north_m": "1"}}, "wrong_type"),
        (ENGAGE | {"setpoint": {**HOVER, "north_m": True}}, "wrong_type"),
        (ENGAGE | {"setpoint": {**HOVER, "north_m": 1e6}}, "out_of_range"),
        (ENGAGE | {"setpoint": {**HOVER, "yaw_deg": 90}}, "unknown_field"),
        ({"v": 1, "id": "a", "cmd": "engage",
          "setpoint": {**HOVER, "yaw_rad": 0.1, "yaw_rate_rad_s": 0.1}}, "setpoint_invalid"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "attitude", "w": 0.5,
          "x": 0, "y": 0, "z": 0, "thrust": 0.5}}, "setpoint_invalid"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "body_rates",
          "roll_rate_rad_s": 0, "pitch_rate_rad_s": 0, "yaw_rate_rad_s": 0, "thrust": 1.5}},
         "out_of_range"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "position_velocity_ned",
          "north_m": 0, "east_m": 0, "down_m": 0, "north_m_s": 0, "east_m_s": 0, "down_m_s": 0,
          "north_m_s2": 1}}, "setpoint_invalid"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "global_position",
          "lat_deg": 91, "lon_deg": 0, "alt_m": 0}}, "out_of_range"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "global_position",
          "lat_deg": 1, "lon_deg": 0, "alt_m": 0, "altitude_frame": "agl"}}, "wrong_type"),
        ({"v": 1, "id": "a", "cmd": "setpoint"}, "missing_field"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "session": "s", "setpoint": HOVER},
         "missing_field"),
        ({"v": 1, "id": "a", "cmd": "emergency_stop"}, "confirmation_required"),
        ({"v": 1, "id": "a", "cmd": "emergency_stop", "confirm": False}, "confirmation_required"),
        ({"v": 1, "id": "a", "cmd": "emergency_stop", "confirm": 1}, "wrong_type"),
        ({"v": 1, "id": "a", "cmd": "disarm", "force": "true"}, "wrong_type"),
    ],
)
def test_malformed_commands_get_stable_codes(payload: bytes | dict[str, Any], code: str) -> None:
    assert code_of(decode(payload)) == code


@pytest.mark.parametrize(
    ("doc", "code"),
    [
        ({"v": 1, "seq": 1, **HOVER}, "missing_field"),
        ({"v": 1, "session": "s", **HOVER}, "missing_field"),
        ({"v": 1, "session": "s", "seq": -1, **HOVER}, "out_of_range"),
        ({"v": 1, "session": "s", "seq": 1.5, **HOVER}, "wrong_type"),
        ({"v": 1, "session": "s", "seq": 1, "cmd": "engage", **HOVER}, "unknown_field"),
        ({"v": 1, "session": "s", "seq": 1}, "missing_field"),
        ({"v": 1, "session": "s", "seq": 1, **HOVER, "down_m": None}, "wrong_type"),
    ],
)
def test_malformed_stream_setpoints_get_stable_codes(doc: dict[str, Any], code: str) -> None:
    assert code_of(decode(doc, "setpoint")) == code


@pytest.mark.parametrize("doc", [
    {"v": 1, "cmd": "k" * 30_000},
    {"v": "9" * 30_000},
    {"v": 1, "id": "a", "cmd": "hold", "k" * 30_000: 1},
    {"v": 1, "id": "a", "cmd": "engage", "setpoint": {"kind": "k" * 30_000}},
    {"v": 1, "id": "a", "cmd": "engage",
     "setpoint": {"kind": "position_ned", "north_m": "n" * 30_000}},
])  # fmt: skip
def test_a_refusal_quotes_a_long_value_cut_short(doc: dict[str, Any]) -> None:
    """A 30 KB unknown name must not come back as a 30 KB reply and journal line (found by
    a new-user walk-through: only wrong-type strings were cut)."""
    payload = json.dumps(doc).encode()  # (the daemon's own limit is 32 KB: under it)
    result = CommandDecoder().decode_bytes("cmd", payload, max_bytes=len(payload))
    assert isinstance(result, Rejection)
    assert len(result.message) < 500, result.message[:120]
    assert "kkkkkkkk" in result.message or "99999999" in result.message or "nnnn" in result.message


def test_rejection_quotes_the_command_id_when_it_has_one() -> None:
    result = decode({"v": 1, "id": "abc", "cmd": "fly"})
    assert isinstance(result, Rejection) and result.command_id == "abc"
    assert "fly" in result.message


def test_replay_old_and_repeated_setpoints_dropped_new_session_starts_over() -> None:
    decoder = CommandDecoder()

    def send(session: str, seq: int) -> Command | FlightsQuery | Rejection:
        return decode({"v": 1, "session": session, "seq": seq, **HOVER}, "setpoint", decoder)

    assert isinstance(send("a", 5), SetSetpoint)
    assert code_of(send("a", 5)) == "setpoint_stale"  # repeated
    assert code_of(send("a", 3)) == "setpoint_stale"  # older
    assert isinstance(send("a", 6), SetSetpoint)
    assert isinstance(send("b", 0), SetSetpoint)  # a new commander session starts over
    assert code_of(send("a", 100)) == "setpoint_stale"  # the replaced session stays dead
    # engage and setpoint commands on the cmd topic share the guard when they carry a session
    stale = {"v": 1, "id": "x", "cmd": "setpoint", "session": "b", "seq": 0, "setpoint": HOVER}
    assert code_of(decode(stale, decoder=decoder)) == "setpoint_stale"


def test_a_cmd_command_repeating_its_last_seq_is_stale_but_carries_itself() -> None:
    """So that the runtime answers a copy of an engage as the repeat it is (replies.py);
    an older seq, or the setpoint topic's, is plain stale."""
    decoder = CommandDecoder()
    engage = {"v": 1, "id": "e", "cmd": "engage", "session": "s", "seq": 4, "setpoint": HOVER}
    first = decode(engage, decoder=decoder)
    assert isinstance(first, Engage)
    again = decode(engage, decoder=decoder)
    assert isinstance(again, SeqRepeated) and again.command == first
    assert again.code == "setpoint_stale"
    older = decode({**engage, "seq": 3}, decoder=decoder)
    assert isinstance(older, Rejection) and not isinstance(older, SeqRepeated)
    stream = {"v": 1, "session": "t", "seq": 1, **HOVER}
    assert isinstance(decode(stream, "setpoint", decoder), SetSetpoint)
    assert not isinstance(decode(stream, "setpoint", decoder), SeqRepeated)


def test_replay_guard_forgets_only_beyond_its_bound() -> None:
    guard = ReplayGuard(retired_sessions=2)
    for session in "abcd":
        assert guard.check(session, 0) is None
    assert guard.check("a", 1) is None  # retired long ago: forgotten, accepted as new
    assert guard.check("c", 1) is not None


def test_invalid_setpoint_does_not_advance_the_sequence() -> None:
    decoder = CommandDecoder()
    bad = {"v": 1, "session": "s", "seq": 9, **HOVER, "north_m": "x"}
    assert code_of(decode(bad, "setpoint", decoder)) == "wrong_type"
    assert isinstance(decode({"v": 1, "session": "s", "seq": 1, **HOVER}, "setpoint", decoder),
                      SetSetpoint)


def test_encode_document_is_versioned_and_never_emits_nan() -> None:
    doc = json.loads(encode_document({"v": 7, "gap_s": math.inf, "phase": SetpointKind.ATTITUDE,
                                      "q": (1.0, math.nan)}))
    assert doc == {"v": 1, "gap_s": None, "phase": "attitude", "q": [1.0, None]}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_encode_document_fast_path_matches_the_plain_walk(doc: dict[str, object]) -> None:
    """Plain documents skip `to_jsonable`; the bytes must be the same as with it."""
    walked = {"v": 1, **to_jsonable(doc)}
    walked["v"] = 1
    assert encode_document(doc) == json.dumps(
        walked, allow_nan=False, separators=(",", ":")).encode("utf-8")
keys = st.sampled_from(["v", "id", "cmd", "session", "seq", "kind", "setpoint", "arm", "force",
                        "confirm", "north_m", "east_m", "down_m", "thrust", "w", "lat_deg"])
near_valid = st.dictionaries(keys, json_values | st.sampled_from(
    [1, "engage", "setpoint", "emergency_stop", "position_ned", "attitude", HOVER, True]),
    max_size=8)


@settings(max_examples=300, deadline=None)
@given(doc=json_values | near_valid, channel=st.sampled_from(["cmd", "setpoint"]))
def test_random_json_never_raises(doc: Any, channel: str) -> None:
    payload = json.dumps(doc).encode()  # NaN/Infinity literals included
    result = CommandDecoder().decode_bytes(channel, payload, max_bytes=MAX_BYTES)
    assert isinstance(result, Rejection | Engage | SetSetpoint | Release | Hold | Land | Rtl
                      | Arm | Disarm | EmergencyStop | CommanderHeartbeat)


@settings(max_examples=200, deadline=None)
@given(payload=st.binary(max_size=200))
def test_random_bytes_never_raise(payload: bytes) -> None:
    assert isinstance(CommandDecoder().decode_bytes("cmd", payload, max_bytes=MAX_BYTES),
                      Rejection)


# -- the hand-written field checks (schema_fields.py): messages, order, strictness ----------

def rejection(payload: bytes | dict[str, Any], channel: str = "cmd",
              decoder: CommandDecoder | None = None) -> Rejection:
    result = decode(payload, channel, decoder)
    assert isinstance(result, Rejection), result
    return result


STREAM = {"v": 1, "session": "s", "seq": 1, **HOVER}


@pytest.mark.parametrize(
    ("payload", "channel", "code", "message"),
    [
        (ENGAGE | {"setpoint": {**HOVER, "north_m": 1e9}}, "cmd", "out_of_range",
         "setpoint.north_m: must be between -100000.0 and 100000.0, not 1000000000.0"),
        (STREAM | {"north_m": -100001}, "setpoint", "out_of_range",
         "north_m: must be between -100000.0 and 100000.0, not -100001"),
        (ENGAGE | {"setpoint": {**HOVER, "north_m": "1"}}, "cmd", "wrong_type",
         "setpoint.north_m: must be a number, not the string '1'"),
        (ENGAGE | {"setpoint": {**HOVER, "east_m": True}}, "cmd", "wrong_type",
         "setpoint.east_m: must be a number, not true"),
        (ENGAGE | {"setpoint": {**HOVER, "down_m": None}}, "cmd", "wrong_type",
         "setpoint.down_m: must be a number, not null"),
        (ENGAGE | {"setpoint": {"kind": "position_ned", "north_m": 0, "east_m": 0}}, "cmd",
         "missing_field", "setpoint.down_m: is required"),
        (STREAM | {"seq": 3.0}, "setpoint", "wrong_type", "seq: must be an integer, not 3.0"),
        (STREAM | {"seq": 2**53 + 1}, "setpoint", "out_of_range",
         "seq: must be between 0 and 9007199254740992, not 9007199254740993"),
        (STREAM | {"session": "x" * 65}, "setpoint", "out_of_range",
         "session: must be 1 to 64 characters long, not 65"),
        ({"v": 1, "id": "x" * 129, "cmd": "hold"}, "cmd", "out_of_range",
         "id: must be 1 to 128 characters long, not 129"),
        ({"v": 1, "id": "a", "cmd": "engage", "arm": "yes"}, "cmd", "wrong_type",
         "arm: must be true or false, not the string 'yes'"),
        ({"v": 1, "id": "a", "cmd": "engage", "setpoint": [1]}, "cmd", "wrong_type",
         "setpoint: must be an object, not an array"),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "global_position",
          "lat_deg": 1, "lon_deg": 0, "alt_m": 0, "altitude_frame": "agl"}}, "cmd", "wrong_type",
         "setpoint.altitude_frame: must be one of 'amsl', 'relative', 'terrain', "
         "not the string 'agl'"),
    ],
)
def test_refusals_name_the_field_and_the_limit(payload: dict[str, Any], channel: str,
                                               code: str, message: str) -> None:
    result = rejection(payload, channel)
    assert (result.code, result.message) == (code, message)


def test_an_unknown_field_message_lists_the_fields_the_object_takes() -> None:
    result = rejection(ENGAGE | {"setpoint": {**HOVER, "yaw_deg": 90}})
    assert result.code == "unknown_field"
    assert result.message.startswith("setpoint.yaw_deg: unknown field; position_ned takes ")
    assert "yaw_rad" in result.message
    assert rejection({"v": 1, "": 0, "id": "a", "cmd": "hold"}).message.startswith("payload: ")


@pytest.mark.parametrize(
    ("payload", "channel", "code", "field"),
    [
        # known fields in declaration order first, then unknown fields in document order
        ({"zz": 1, "v": 1, "id": 7, "cmd": "hold", "aa": 2}, "cmd", "wrong_type", "id"),
        ({"v": 1, "zz": 1, "id": "a", "cmd": "hold", "aa": 2}, "cmd", "unknown_field", "zz"),
        ({"v": 1, "id": "a", "cmd": "engage", "arm": 1, "session": ""}, "cmd",
         "out_of_range", "session"),
        (ENGAGE | {"session": "s", "setpoint": {**HOVER, "zz": 1, "north_m": "x"}}, "cmd",
         "missing_field", '"session" and "seq"'),  # pairing before the setpoint
        (ENGAGE | {"setpoint": {"north_m": "x", "zz": 1}}, "cmd", "missing_field",
         'field "setpoint.kind"'),  # the kind before its fields
        # the stream: envelope (v, session, seq, id), then kind, then fields, then unknown
        ({"v": 1, "session": "s", "seq": -1, "id": "", "kind": "warp"}, "setpoint",
         "out_of_range", "seq"),
        ({"v": 1, "session": "s", "seq": 1, "id": 5, "kind": "warp"}, "setpoint",
         "wrong_type", "id"),
        ({"v": 1, "session": "s", "seq": 1, "zz": 1, "kind": "warp"}, "setpoint",
         "unknown_setpoint_kind", "unknown setpoint kind"),
        (STREAM | {"zz": 1, "down_m": None, "north_m": 1e9}, "setpoint", "out_of_range",
         "north_m"),
        (STREAM | {"zz": 1, "yaw_rad": 7.0}, "setpoint", "out_of_range", "yaw_rad"),
        (STREAM | {"zz": 1, "yaw_rad": 1.0, "yaw_rate_rad_s": 1.0}, "setpoint",
         "unknown_field", "zz"),  # the schema before the core's checks
    ],
)
def test_the_first_error_in_check_order_is_reported(
    payload: dict[str, Any], channel: str, code: str, field: str
) -> None:
    result = rejection(payload, channel)
    assert result.code == code and result.message.startswith(field), result


@pytest.mark.parametrize(
    ("payload", "channel", "accepted"),
    [
        (ENGAGE | {"setpoint": {**HOVER, "yaw_rad": None}}, "cmd", True),  # null: absent
        (ENGAGE | {"setpoint": None, "session": None, "seq": None}, "cmd", True),
        (STREAM | {"id": None}, "setpoint", True),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "global_position",
          "lat_deg": 1, "lon_deg": 0, "alt_m": 0, "altitude_frame": None}}, "cmd", False),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": {"kind": "velocity_body",
          "forward_m_s": 1, "right_m_s": 0, "down_m_s": 0, "yaw_rate_rad_s": None}}, "cmd",
         False),  # its default is 0.0, not null
        (ENGAGE | {"arm": None}, "cmd", False),
        ({"v": 1, "id": "a", "cmd": "setpoint", "setpoint": None}, "cmd", False),
        (STREAM | {"session": None}, "setpoint", False),
    ],
)
def test_null_means_absent_only_where_the_default_is_null(
    payload: dict[str, Any], channel: str, accepted: bool
) -> None:
    result = decode(payload, channel)
    assert isinstance(result, Rejection) != accepted, result
    if not accepted:
        assert code_of(result) == "wrong_type"


def test_numbers_are_strict_json_numbers_and_ranges_are_inclusive() -> None:
    at_limits = STREAM | {"north_m": -100_000, "east_m": 100_000.0, "down_m": -0.0,
                          "yaw_rad": 2 * math.pi}
    result = decode(at_limits, "setpoint")
    assert result == SetSetpoint("s:1", PositionNed(-100_000.0, 100_000.0, -0.0,
                                                    yaw_rad=2 * math.pi))
    assert isinstance(result, SetSetpoint) and isinstance(result.setpoint, PositionNed)
    assert type(result.setpoint.north_m) is float  # an int is read as a float
    assert math.copysign(1.0, result.setpoint.down_m) == -1.0  # -0.0 kept as sent
    just_over = math.nextafter(2 * math.pi, math.inf)
    assert code_of(decode(STREAM | {"yaw_rad": just_over}, "setpoint")) == "out_of_range"
    assert code_of(decode(STREAM | {"seq": True}, "setpoint")) == "wrong_type"
    assert decode(STREAM | {"seq": 2**53}, "setpoint") == SetSetpoint(f"s:{2**53}",
                                                                      PositionNed(0, 0, -5))
    # an integer literal too big for a double (1e400 as digits): not a number we can hold
    huge = b'{"v":1,"session":"s","seq":1,"kind":"position_ned","north_m":1' + b"0" * 400 \
        + b',"east_m":0,"down_m":0}'
    assert code_of(decode(huge, "setpoint")) == "wrong_type"
    assert code_of(decode(STREAM | {"north_m": 2**63}, "setpoint")) == "out_of_range"


def test_decode_refuses_non_finite_numbers_even_past_the_json_loader() -> None:
    # load_document refuses NaN/Infinity literals; decode() itself must too (second layer)
    decoder = CommandDecoder()
    for bad in (math.nan, math.inf, -math.inf):
        for channel, doc in (("setpoint", STREAM | {"north_m": bad}),
                             ("cmd", ENGAGE | {"setpoint": {**HOVER, "yaw_rad": bad}})):
            result = decoder.decode(channel, doc)
            assert isinstance(result, Rejection) and result.code == "not_finite", result


def test_a_string_with_a_lone_surrogate_is_refused() -> None:
    # json.loads turns the escape "\ud800" into a str that is not valid Unicode text
    result = rejection(b'{"v":1,"id":"a","cmd":"hold","x":0}'.replace(b'"a"', b'"a\\ud800"'))
    assert result.code == "wrong_type" and result.message.startswith("id: ")
    assert code_of(decode(b'{"v":1,"session":"\\udfff","seq":1,"kind":"position_ned",'
                          b'"north_m":0,"east_m":0,"down_m":0}', "setpoint")) == "wrong_type"


def test_the_schema_does_not_load_pydantic() -> None:
    # RSS budget (issue 9): pydantic and its validators cost ~10 MB; nothing may bring it back
    code = ("import sys, offboardd.mqtt.schema, offboardd.mqtt.bridge; "
            "print(sorted(m for m in sys.modules if m.startswith('pydantic')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_flights_is_a_query_with_a_bounded_limit() -> None:
    assert decode({"v": 1, "id": "q", "cmd": "flights"}) == FlightsQuery("q", 20)
    assert decode({"v": 1, "id": "q", "cmd": "flights", "limit": 200}) == FlightsQuery("q", 200)
    for bad in (0, 201, -1, 2.5, "5", None):
        refused = decode({"v": 1, "id": "q", "cmd": "flights", "limit": bad})
        assert isinstance(refused, Rejection), bad


def test_replay_guard_remembers_the_sessions_of_a_long_day() -> None:
    """Found by review: 32 sessions were kept, and a replay of the 33rd-newest accepted."""
    guard = ReplayGuard()
    for i in range(1000):
        assert guard.check(f"s{i}", 5) is None
    assert guard.check("s0", 100) is not None


def test_one_commanders_session_never_retires_anothers() -> None:
    """Found by review: with one sequence for all commanders, a non-holder's single setpoint
    (refused by the engine afterwards) made every later setpoint of the holder's stale."""
    guard = ReplayGuard()
    assert guard.check("holder", 1, "reply/a") is None
    assert guard.check("other", 1, "reply/b") is None
    assert guard.check("holder", 2, "reply/a") is None  # the holder's sequence goes on
    assert guard.check("holder", 2, "reply/a") is not None  # and is still guarded
    assert guard.check("newer", 1, "reply/a") is None  # a restarted commander...
    assert guard.check("holder", 3, "reply/a") is not None  # ...retires its old session
    assert guard.check("holder", 9, "reply/c") is not None  # for everyone


def test_replay_guard_forgets_the_least_recent_commander_beyond_its_bound() -> None:
    guard = ReplayGuard(commanders=2)
    assert guard.check("a", 5, "ra") is None
    assert guard.check("b", 5, "rb") is None
    assert guard.check("a", 6, "ra") is None
    assert guard.check("c", 5, "rc") is None  # rb forgotten, not retired
    assert guard.check("b", 6, "rb") is None  # goes on (and ra, now least recent, goes)
    assert guard.check("a", 7, "ra") is None  # forgotten too: goes on


def test_a_forgotten_commanders_session_is_still_guarded() -> None:
    """Found by review: each OffboardClient run is a commander (its own reply inbox) with
    one session, never replaced and so never retired. Beyond 1,024 later commanders its
    session was forgotten outright, and a replay of its setpoints accepted from seq 0."""
    guard = ReplayGuard()
    assert guard.check("run0", 100, "reply/run0") is None
    for i in range(1, 2000):  # 2,000 later runs (~ a few days of missions)
        assert guard.check(f"run{i}", 1, f"reply/run{i}") is None
    assert guard.check("run0", 5, "reply/run0") is not None  # the replay: stale
    assert guard.check("run0", 5, "reply/spy") is not None  # from anywhere
    assert guard.check("run0", 101, "reply/run0") is None  # still alive: it goes on
    assert guard.check("run0", 101, "reply/run0") is not None


def test_a_live_session_replayed_through_another_route_is_still_stale() -> None:
    guard = ReplayGuard()
    for seq in (1, 2, 3):
        assert guard.check("s", seq, "reply/a") is None
    assert guard.check("s", 1, "reply/spy") is not None  # a replay, wherever it comes from
    assert guard.check("s", 4, "reply/a") is None  # and the commander's sequence goes on


@pytest.mark.parametrize("payload", [
    b'{"v":1,"id":"n1","cmd":"hold","x":NaN}',
    b'{"v":1,"id":"n1","cmd":"hold","x":-Infinity}',
    b'{"v":1,"id":"n1","cmd":"hold","x":1e400}',
])
def test_a_not_finite_refusal_quotes_the_commands_id(payload: bytes) -> None:
    """Found by review: the refusal said "id": null, and an MQTT 3.1.1 client, which matches
    replies by id, waited for its answer until it timed out."""
    result = decode(payload)
    assert isinstance(result, Rejection) and result.code == "not_finite"
    assert result.command_id == "n1"


def test_an_unknown_word_is_wrong_type_for_a_motions_yaw_as_for_altitude_frame() -> None:
    """Both are a word not among the choices: one code for one mistake (the yaw's read
    out_of_range: review, 2026-11-29)."""
    path = {"v": 1, "id": "p", "cmd": "path", "yaw": "face_center",
            "waypoints": [{"kind": "position_ned", "north_m": 2, "east_m": 2, "down_m": -5}]}
    assert code_of(decode(path)) == "wrong_type"
    frame = {**ENGAGE, "setpoint": {"kind": "global_position", "lat_deg": 47, "lon_deg": 8,
                                    "alt_m": 5, "altitude_frame": "agl"}}
    assert code_of(decode(frame)) == "wrong_type"
