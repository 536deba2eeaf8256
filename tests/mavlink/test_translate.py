"""The kind -> message/frame/type_mask table against px4-offboard.md §2 (and the masks
MAVSDK sends), outbound messages through a real codec, inbound messages -> core events."""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offboardd.core import events as ev
from offboardd.core.actions import (
    AUTOPILOT_VERSION_ID,
    CURRENT_MODE_ID,
    ArmDisarm,
    Notice,
    NoticeKind,
    Reply,
    RequestMessage,
    RequestMode,
    RequestParams,
    SendCompanionHeartbeat,
    SendSetpoint,
    SetMessageInterval,
    Target,
)
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase
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
from offboardd.errors import SetpointError
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.params import encode_param_value
from offboardd.mavlink.translate import (
    SETPOINT_WIRE,
    WANTED_MESSAGE_IDS,
    InboundTranslator,
    SetpointMessages,
    frame_of,
    messages_for,
    type_mask,
)

PX4 = Target(1, 1)

# (setpoint, MAVSDK's mask for the same thing, message id, frame) — px4-offboard.md §2
MAVSDK_CASES: list[tuple[Setpoint, int, int, int | None]] = [
    (PositionNed(1, 2, -3, yaw_rad=0.5), 2552, 84, 1),
    (VelocityNed(1, 0, 0, yaw_rad=0.5), 2503, 84, 1),
    (VelocityBody(1, 0, 0, yaw_rate_rad_s=0.1), 1479, 84, 8),
    (AccelerationNed(0, 0, -1), 3135, 84, 1),
    (PositionVelocityNed(1, 2, -3, 0.5, 0, 0, yaw_rad=0.2), 2496, 84, 1),
    (
        PositionVelocityNed(
            1, 2, -3, 0.5, 0, 0, yaw_rad=0.2, north_m_s2=0.1, east_m_s2=0, down_m_s2=0
        ),
        2048,
        84,
        1,
    ),
    (GlobalPosition(47.4, 8.5, 500, yaw_rad=0.0), 2552, 86, 5),
    (Attitude(1, 0, 0, 0, 0.5), 7, 82, None),
    (BodyRates(0.1, 0, 0, 0.5), 128, 82, None),
]


@pytest.mark.parametrize(("sp", "mask", "msg_id", "frame"), MAVSDK_CASES)
def test_masks_match_mavsdk_and_px4_table(
    sp: Setpoint, mask: int, msg_id: int, frame: int | None
) -> None:
    assert type_mask(sp) == mask
    assert SETPOINT_WIRE[sp.kind].message_id == msg_id
    assert frame_of(sp) == frame


def test_table_covers_every_kind_and_never_sets_forbidden_bits() -> None:
    assert set(SETPOINT_WIRE) == set(SetpointKind)
    for sp, *_ in MAVSDK_CASES:
        mask = type_mask(sp)
        if isinstance(sp, Attitude | BodyRates):
            # THROTTLE_IGNORE (64) zeroes a multicopter's thrust; roll/pitch rates paired.
            assert not mask & dialect.ATTITUDE_TARGET_TYPEMASK_THROTTLE_IGNORE
            assert bool(mask & 1) == bool(mask & 2)
        else:
            assert not mask & dialect.POSITION_TARGET_TYPEMASK_FORCE_SET
            # x/y (and vx/vy, ax/ay) are ignored together; each group is all or nothing.
            for group in (7, 56, 448):
                assert mask & group in (0, group)
            assert mask & 511 != 511, "at least one of position/velocity/acceleration"


def test_yaw_bits_follow_the_setpoint() -> None:
    assert type_mask(PositionNed(0, 0, 0)) == 2552 | 1024
    assert type_mask(PositionNed(0, 0, 0, yaw_rate_rad_s=0.2)) == 56 | 448 | 1024
    assert type_mask(VelocityBody(1, 0, 0)) == 1479  # yaw rate 0.0 is sent, yaw ignored


def test_global_altitude_frames() -> None:
    assert frame_of(GlobalPosition(0, 0, 0, AltitudeFrame.AMSL)) == 5
    assert frame_of(GlobalPosition(0, 0, 0, AltitudeFrame.RELATIVE)) == 6
    assert frame_of(GlobalPosition(0, 0, 0, AltitudeFrame.TERRAIN)) == 11


def roundtrip(action: object) -> list:  # type: ignore[type-arg]
    tx, rx = MavlinkCodec(1, 191), MavlinkCodec(1, 1)
    out = []
    for msg in messages_for(action):  # type: ignore[arg-type]
        out.extend(rx.decode(tx.encode(msg)))
    return out


def test_local_setpoint_message_fields() -> None:
    sp = PositionVelocityNed(1, 2, -3, 0.5, -0.5, 0.1, yaw_rad=0.3)
    (m,) = roundtrip(SendSetpoint(PX4, sp))
    assert m.get_type() == "SET_POSITION_TARGET_LOCAL_NED"
    assert (m.target_system, m.target_component, m.coordinate_frame) == (1, 1, 1)
    assert (m.x, m.y, m.z) == (1, 2, -3)
    assert (m.vx, m.vy) == (0.5, -0.5) and m.vz == pytest.approx(0.1)
    assert m.yaw == pytest.approx(0.3) and m.type_mask == 2496


def test_body_velocity_message() -> None:
    (m,) = roundtrip(SendSetpoint(PX4, VelocityBody(2, 1, -0.5, 0.25)))
    assert (m.coordinate_frame, m.type_mask) == (8, 1479)
    assert (m.vx, m.vy, m.vz, m.yaw_rate) == (2, 1, -0.5, 0.25)


def test_global_and_attitude_messages() -> None:
    (g,) = roundtrip(
        SendSetpoint(PX4, GlobalPosition(47.3977419, 8.5455938, 488.5, AltitudeFrame.RELATIVE))
    )
    assert (g.lat_int, g.lon_int, g.coordinate_frame) == (473977419, 85455938, 6)
    assert g.alt == pytest.approx(488.5)
    (a,) = roundtrip(SendSetpoint(PX4, Attitude(1, 0, 0, 0, 0.5)))
    assert a.get_type() == "SET_ATTITUDE_TARGET" and a.type_mask == 7
    assert list(a.q) == [1, 0, 0, 0] and a.thrust == 0.5
    (r,) = roundtrip(SendSetpoint(PX4, BodyRates(0.1, -0.2, 0.3, 0.6)))
    assert r.type_mask == 128 and r.body_yaw_rate == pytest.approx(0.3)


def test_commands_target_px4_exactly() -> None:
    target = Target(7, 1)
    (mode,) = roundtrip(RequestMode(target, Px4Mode.OFFBOARD))
    assert (mode.command, mode.target_system, mode.target_component) == (176, 7, 1)
    assert (mode.param1, mode.param2, mode.param3) == (1, 6, 0)
    (loiter,) = roundtrip(RequestMode(target, Px4Mode.AUTO_LOITER))
    assert (loiter.param2, loiter.param3) == (4, 3)
    (arm,) = roundtrip(ArmDisarm(target, arm=True))
    assert (arm.command, arm.param1, arm.param2, arm.target_system) == (400, 1, 0, 7)
    (kill,) = roundtrip(ArmDisarm(target, arm=False, force=True))
    assert (kill.param1, kill.param2) == (0, 21196)
    (req,) = roundtrip(RequestMessage(target, AUTOPILOT_VERSION_ID))
    assert (req.command, req.param1) == (512, 148)
    (interval,) = roundtrip(SetMessageInterval(target, CURRENT_MODE_ID, 500_000))
    assert (interval.command, interval.param1, interval.param2) == (511, 436, 500_000)
    reads = roundtrip(RequestParams(target, ("COM_OF_LOSS_T", "MAV_FWDEXTSP")))
    assert [r.param_id for r in reads] == ["COM_OF_LOSS_T", "MAV_FWDEXTSP"]
    assert {(r.target_system, r.param_index) for r in reads} == {(7, -1)}


def test_companion_heartbeat_identity() -> None:
    (hb,) = roundtrip(SendCompanionHeartbeat(1, 191))
    assert (hb.type, hb.autopilot) == (18, 8)  # ONBOARD_CONTROLLER, INVALID: never GCS


def test_replies_and_notices_are_not_for_the_fc() -> None:
    assert messages_for(Reply.success("x", "ok")) == []
    assert messages_for(Notice(NoticeKind.WARNING, "w", Phase.IDLE)) == []


def decode_from_px4(msg: object) -> list:  # type: ignore[type-arg]
    tx, rx = MavlinkCodec(1, 1), MavlinkCodec(1, 191, wanted_ids=WANTED_MESSAGE_IDS)
    return rx.decode(tx.encode(msg))


def test_inbound_messages_become_events() -> None:
    tr = InboundTranslator()
    d = dialect
    msgs = [
        d.MAVLink_heartbeat_message(2, 12, 129, Px4Mode.OFFBOARD.custom_mode, 4, 3),
        d.MAVLink_current_mode_message(0, 393216, 393216),
        d.MAVLink_command_ack_message(176, 1),
        d.MAVLink_param_value_message(b"COM_OBL_RC_ACT", encode_param_value(5, 6), 6, 10, 1),
        d.MAVLink_param_value_message(b"COM_OF_LOSS_T", 0.5, 9, 10, 2),
        d.MAVLink_autopilot_version_message(
            0xFFFF, 0x010F0200, 0, 0, 0, [0] * 8, [0] * 8, [0] * 8, 0, 0, 0
        ),
        d.MAVLink_local_position_ned_message(1234, 1, 2, -3, 0.1, 0.2, 0.3),
        d.MAVLink_global_position_int_message(1234, 473977419, 85455938, 488500, 10000, 0, 0, 0, 0),
        d.MAVLink_attitude_message(1234, 0.1, 0.2, 1.5, 0, 0, 0),
        d.MAVLink_extended_sys_state_message(0, 2),
        d.MAVLink_estimator_status_message(0, 0x3F, 0, 0, 0, 0, 0, 0, 0, 0),
        d.MAVLink_statustext_message(2, b"Failsafe activated"),
        d.MAVLink_sys_status_message(*[0] * 13),  # not wanted: filtered by the codec
    ]
    got: list[Any] = []
    for m in msgs:
        for decoded in decode_from_px4(m):
            got.extend(tr.events(decoded, now=1.0))
    types = [type(e) for e in got]
    assert types == [
        ev.FcHeartbeat,
        ev.FcCurrentMode,
        ev.FcCommandAck,
        ev.FcParamValue,
        ev.FcParamValue,
        ev.FcAutopilotVersion,
        ev.FcLocalPosition,
        ev.FcGlobalPosition,
        ev.FcAttitude,
        ev.FcExtendedSysState,
        ev.FcEstimatorStatus,
        ev.FcStatusText,
    ]
    hb = got[0]
    assert hb.armed and hb.autopilot == 12 and (hb.source_system, hb.source_component) == (1, 1)
    assert (got[2].target_system, got[2].target_component) == (0, 0)  # the ACK names no one
    assert got[3].value == 5 and isinstance(got[3].value, int)  # byte-wise, not 7e-45
    assert got[4].value == pytest.approx(0.5)
    assert got[7].lat_deg == pytest.approx(47.3977419) and got[7].alt_relative_m == 10.0
    assert got[8].yaw_rad == pytest.approx(1.5)
    assert got[11].text == "Failsafe activated" and got[11].severity == 2


def test_an_acks_addressee_comes_through() -> None:
    ack = dialect.MAVLink_command_ack_message(511, 4, 0, 0, 255, 190)
    (event,) = InboundTranslator().events(decode_from_px4(ack)[0], now=1.0)
    assert isinstance(event, ev.FcCommandAck)
    assert (event.command, event.result, event.target_system, event.target_component) == (
        511, 4, 255, 190)


def test_chunked_statustext_is_joined() -> None:
    tr = InboundTranslator()
    first = "x" * 50
    a = decode_from_px4(dialect.MAVLink_statustext_message(3, first.encode(), 7, 0))
    b = decode_from_px4(dialect.MAVLink_statustext_message(3, b"tail", 7, 1))
    assert tr.events(a[0], 0.0) == []
    (done,) = tr.events(b[0], 0.01)
    assert isinstance(done, ev.FcStatusText)
    assert done.text == first + "tail"


def test_core_constants_match_the_dialect() -> None:
    assert ev.MAV_AUTOPILOT_PX4 == dialect.MAV_AUTOPILOT_PX4
    assert ev.MAV_AUTOPILOT_INVALID == dialect.MAV_AUTOPILOT_INVALID
    assert ev.MAV_MODE_FLAG_SAFETY_ARMED == dialect.MAV_MODE_FLAG_SAFETY_ARMED
    assert ev.MAV_CMD_DO_SET_MODE == dialect.MAV_CMD_DO_SET_MODE
    assert ev.MAV_CMD_COMPONENT_ARM_DISARM == dialect.MAV_CMD_COMPONENT_ARM_DISARM
    assert ev.AckResult.TEMPORARILY_REJECTED == dialect.MAV_RESULT_TEMPORARILY_REJECTED
    assert ev.LandedState.ON_GROUND == dialect.MAV_LANDED_STATE_ON_GROUND
    for status in ev.SystemStatus:
        assert status == getattr(dialect, f"MAV_STATE_{status.name}")
    assert CURRENT_MODE_ID == dialect.MAVLINK_MSG_ID_CURRENT_MODE
    assert AUTOPILOT_VERSION_ID == dialect.MAVLINK_MSG_ID_AUTOPILOT_VERSION
    assert struct.calcsize("<i") == 4


def test_px4_mode_values_from_the_reference() -> None:
    # px4-offboard.md §4
    assert Px4Mode.OFFBOARD.custom_mode == 393216
    assert Px4Mode.POSCTL.custom_mode == 196608
    assert Px4Mode.AUTO_LOITER.custom_mode == 50593792
    assert Px4Mode.AUTO_LAND.custom_mode == 100925440
    assert Px4Mode.AUTO_RTL.custom_mode == 84148224
    assert Px4Mode.AUTO_TAKEOFF.custom_mode == 33816576


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(min_value=-100, max_value=100),
    st.none(),
)


def build(kind: SetpointKind, v: list[float | None]) -> Setpoint:
    """Construct a setpoint of `kind` from raw numbers (None where optional)."""
    n = [0.0 if x is None else x for x in v]
    opt = v[3]
    if kind is SetpointKind.POSITION_NED:
        return PositionNed(n[0], n[1], n[2], yaw_rad=opt)
    if kind is SetpointKind.VELOCITY_NED:
        return VelocityNed(n[0], n[1], n[2], yaw_rate_rad_s=opt)
    if kind is SetpointKind.VELOCITY_BODY:
        return VelocityBody(n[0], n[1], n[2], n[3])
    if kind is SetpointKind.ACCELERATION_NED:
        return AccelerationNed(n[0], n[1], n[2], yaw_rad=opt)
    if kind is SetpointKind.POSITION_VELOCITY_NED:
        return PositionVelocityNed(
            n[0], n[1], n[2], n[3], n[4], n[5], north_m_s2=v[6], east_m_s2=v[7], down_m_s2=v[8]
        )
    if kind is SetpointKind.GLOBAL_POSITION:
        return GlobalPosition(n[0], n[1], n[2], yaw_rad=opt)
    if kind is SetpointKind.ATTITUDE:
        return Attitude(n[0], n[1], n[2], n[3], n[4])
    return BodyRates(n[0], n[1], n[2], n[4])


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(list(SetpointKind)), values=st.lists(NUMBERS, min_size=9, max_size=9))
def test_anything_constructible_goes_out_as_a_message_px4_accepts_and_can_fly(
    kind: SetpointKind, values: list[float | None]
) -> None:
    try:
        sp = build(kind, values)
    except SetpointError:
        return
    (m,) = roundtrip(SendSetpoint(PX4, sp))
    fields = {k: getattr(m, k) for k in m.get_fieldnames() if isinstance(getattr(m, k), float)}
    assert all(math.isfinite(x) for x in fields.values()), fields
    assert (m.target_system, m.target_component) == (1, 1)
    if m.get_type() == "SET_ATTITUDE_TARGET":
        assert 0.0 <= m.thrust <= 1.0 and not m.type_mask & 64
        assert math.isclose(sum(q * q for q in m.q), 1.0, rel_tol=1e-5)
        assert m.type_mask in (7, 128)
    else:
        assert m.coordinate_frame in (1, 8, 5, 6, 11)
        mask = m.type_mask
        assert not mask & 512 and mask & 511 != 511
        for group in (7, 56, 448):
            assert mask & group in (0, group)
        if m.coordinate_frame == 8:
            assert mask & 7 == 7 and mask & 56 == 0  # BODY_NED: velocity, all three axes


def test_setpoint_messages_build_a_held_setpoint_once() -> None:
    """The stream repeats one setpoint object while it holds: its message is built once
    (the codec then re-sequences the frame); a new setpoint or a new target builds anew."""
    messages = SetpointMessages()
    hover, target = PositionNed(1.0, 2.0, -3.0), Target(1, 1)
    (first,) = messages.messages_for(SendSetpoint(target, hover))
    (again,) = messages.messages_for(SendSetpoint(target, hover))
    assert again is first
    (moved,) = messages.messages_for(SendSetpoint(target, PositionNed(1.0, 2.0, -4.0)))
    assert moved is not first and moved.z == -4.0
    (other_fc,) = messages.messages_for(SendSetpoint(Target(2, 1), PositionNed(1.0, 2.0, -4.0)))
    assert other_fc.target_system == 2
    heartbeat = SendCompanionHeartbeat(1, 191)
    assert [m.get_type() for m in messages.messages_for(heartbeat)] == ["HEARTBEAT"]
