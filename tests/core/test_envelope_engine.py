"""The envelope inside the engine (pure, float time): home, refusals with nothing sent,
clamp reports that do not flood, stopping at the fence at every tick (closed loop with a
point-mass vehicle), and the breach action."""

from __future__ import annotations

import dataclasses
import math

from offboardd.core.actions import NoticeKind, RequestMessage, SendSetpoint
from offboardd.core.commands import Engage, SetSetpoint
from offboardd.core.envelope import Envelope
from offboardd.core.envelope_settings import BreachAction, EnvelopeSettings
from offboardd.core.events import (
    FcAttitude,
    FcExtendedSysState,
    FcHeartbeat,
    FcHomePosition,
    FcLocalPosition,
    LandedState,
)
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    Attitude,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.core.settings import EngineSettings
from offboardd.core.vehicle import VehicleState
from offboardd.errors import ErrorCode

from .bench import FC, Bench

HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **FC)


def fenced_bench(**envelope: object) -> Bench:
    return Bench(EngineSettings(envelope=EnvelopeSettings(**envelope)))  # type: ignore[arg-type]


def home_known(b: Bench) -> None:
    b.connect()
    b.feed(HOME)


def test_fence_needs_home_requests_it_and_refuses_engage_until_known() -> None:
    b = fenced_bench(max_distance_m=50.0)
    b.connect()
    requests = [a for _, a in b.actions(RequestMessage) if a.message_id == 242]
    assert requests, "HOME_POSITION was not requested"
    b.feed(Engage("e1", PositionNed(0, 0, -5)))
    reply = b.reply("e1")
    assert not reply.ok and reply.reason is Reason.HOME_UNKNOWN
    assert b.phase() is Phase.IDLE and not b.actions(SendSetpoint)
    b.feed(HOME)
    b.step(3.0)
    assert len([a for _, a in b.actions(RequestMessage) if a.message_id == 242]) == len(requests)
    assert b.engine.snapshot(b.now).home_known


def test_home_is_asked_for_again_where_px4_moves_it_at_arming_and_take_off() -> None:
    """PX4 sets home where it arms and again where it takes off (Commander::arm, the land
    detector's landed -> flying edge; measured on PX4 main: re-armed 10.4 m from the first
    home, the fence's centre moved there). The fence asked for it only while unknown, so it
    went on measuring from the old home until the next HOME_POSITION (every 2 s in the
    stream plan). Now each of those edges asks at once, until a HOME_POSITION answers."""
    b = fenced_bench(max_distance_m=50.0)
    home_known(b)
    b.feed(FcExtendedSysState(int(LandedState.ON_GROUND), **FC))

    def home_requests(since: float) -> int:
        return len([a for _, a in b.actions(RequestMessage, since=since) if a.message_id == 242])

    t = b.now
    b.step(3.0)
    assert home_requests(t) == 0  # home known: not asked for
    b.set_armed(True)
    b.step(1.0)  # the next heartbeat shows it armed
    assert home_requests(t) == 1
    b.step(1.0)
    assert home_requests(t) == 1  # asked for once a 2 s period...
    b.step(1.5)
    assert home_requests(t) == 2  # ...until it comes
    b.feed(dataclasses.replace(HOME, north_m=10.4))
    heard = b.now
    b.step(3.0)
    assert home_requests(heard) == 0
    took_off = b.now
    b.feed(FcExtendedSysState(int(LandedState.IN_AIR), **FC))
    b.step(0.1)
    assert home_requests(took_off) == 1
    b.feed(HOME)
    b.step(3.0)
    assert home_requests(took_off) == 1


def test_setpoint_outside_the_fence_is_refused_and_never_sent() -> None:
    b = fenced_bench(max_distance_m=50.0)
    home_known(b)
    b.engage(PositionNed(0, 0, -5))
    t = b.now
    b.feed(SetSetpoint("far", PositionNed(60.0, 0.0, -5.0)))
    b.step(0.5)
    reply = b.reply("far")
    assert not reply.ok and reply.code is ErrorCode.COMMAND_NOT_ALLOWED
    assert reply.reason is Reason.FENCE_DISTANCE and "max_distance_m = 50" in reply.message
    sent = {a.setpoint for _, a in b.actions(SendSetpoint, since=t)}
    assert sent == {PositionNed(0, 0, -5)}
    assert any(n.reason is Reason.FENCE_DISTANCE for n in b.notices(NoticeKind.WARNING))
    assert b.phase() is Phase.ACTIVE


def test_clamp_is_in_every_reply_but_noticed_once_per_change() -> None:
    b = Bench(EngineSettings(envelope=EnvelopeSettings(max_horizontal_speed_m_s=5.0)))
    b.engage(PositionNed(0, 0, -5))
    for i in range(5):
        b.feed(SetSetpoint(f"fast{i}", VelocityNed(8.0, 6.0, 0.0)))
        b.step(0.05)
    assert all("max_horizontal_speed_m_s = 5" in b.reply(f"fast{i}").message for i in range(5))
    clamps = [n for n in b.notices(NoticeKind.WARNING)
              if n.reason is Reason.LIMIT_HORIZONTAL_SPEED]  # fmt: skip
    assert len(clamps) == 1
    streamed = b.actions(SendSetpoint)[-1][1].setpoint
    assert isinstance(streamed, VelocityNed)
    assert math.hypot(streamed.north_m_s, streamed.east_m_s) <= 5.0 + 1e-9


def test_breach_holds_then_asks_for_the_breach_action() -> None:
    b = fenced_bench(polygon=((-20.0, -20.0), (-20.0, 20.0), (20.0, 20.0), (20.0, -20.0)),
                     breach_action=BreachAction.LAND)  # fmt: skip
    home_known(b)
    b.engage(Attitude(1, 0, 0, 0, 0.5))  # attitude is not steered by the fence
    b.step(0.3)  # inside: breach detection armed
    t = b.now
    b.fc.north_m = 23.0  # pushed out (wind, a tilted attitude) beyond the 1 m tolerance
    b.step(0.3)
    failsafes = [n for n in b.notices(NoticeKind.FAILSAFE) if n.reason is Reason.FENCE_BREACH]
    assert len(failsafes) == 1 and "3.0 m outside the polygon" in failsafes[0].message
    assert [m for _, m in b.mode_requests(since=t)][:1] == [Px4Mode.AUTO_LAND]
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=t)]
    first_hold = next(i for i, sp in enumerate(sent) if isinstance(sp, PositionVelocityNed))
    assert all(sp == PositionVelocityNed(23.0, 0, -5, 0, 0, 0) for sp in sent[first_hold:])
    b.set_mode(Px4Mode.AUTO_LAND)
    b.step(0.2)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.FENCE_BREACH


# -- closed loop: a point mass flown by the shaped setpoints --------------------------------


def fly(env: Envelope, sp: Setpoint, yaw_rad: float = 0.0, seconds: float = 20.0) -> tuple[
    list[float], list[float], float]:  # fmt: skip
    """20 Hz stream, 10 Hz telemetry, a velocity loop of gain 4/s and 5 m/s² (like PX4's and
    the sim's), acceleration setpoints flown directly. Returns end position, velocity and
    the highest horizontal speed seen."""
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
    pos, vel = [0.0, 0.0, -10.0], [0.0, 0.0, 0.0]
    dt, cmd, top = 0.01, sp, 0.0
    for k in range(int(seconds / dt)):
        now = k * dt
        if k % 10 == 0:
            vs.fold(FcLocalPosition(k * 10, *pos, *vel, **FC), now)
            vs.fold(FcAttitude(k * 10, 0.0, 0.0, yaw_rad, **FC), now)
        if k % 5 == 0:
            cmd, _ = env.shape(sp, vs, now)
        if isinstance(cmd, AccelerationNed):
            acc = [cmd.north_m_s2, cmd.east_m_s2, cmd.down_m_s2]
        else:
            if isinstance(cmd, VelocityBody):
                c, s = math.cos(yaw_rad), math.sin(yaw_rad)
                want = [c * cmd.forward_m_s - s * cmd.right_m_s,
                        s * cmd.forward_m_s + c * cmd.right_m_s, cmd.down_m_s]  # fmt: skip
            elif isinstance(cmd, PositionNed):  # the hold on a fence line: PX4's position loop
                target = [cmd.north_m, cmd.east_m, cmd.down_m]
                want = [min(5.0, max(-5.0, 0.95 * (t - p))) for t, p in zip(target, pos,
                                                                             strict=True)]
            else:
                assert isinstance(cmd, VelocityNed)
                want = [cmd.north_m_s, cmd.east_m_s, cmd.down_m_s]
            acc = [4.0 * (w - v) for w, v in zip(want, vel, strict=True)]
        norm = math.sqrt(sum(a * a for a in acc))
        acc = [a * min(1.0, 5.0 / norm) if norm else 0.0 for a in acc]
        for i in range(3):
            vel[i] += acc[i] * dt
            pos[i] += vel[i] * dt
        top = max(top, math.hypot(vel[0], vel[1]))
    return pos, vel, top


def fenced(**kw: object) -> Envelope:
    env = Envelope(EnvelopeSettings(**kw))  # type: ignore[arg-type]
    env.set_home(HOME)
    return env


def test_velocity_leg_stops_inside_the_fence() -> None:
    pos, vel, _ = fly(fenced(max_distance_m=30.0), VelocityNed(6.0, 0.0, 0.0))
    assert 28.0 <= pos[0] <= 30.0 and math.hypot(*vel) < 0.05  # margin 1 m: ~29 m


def test_body_velocity_is_rotated_by_heading_before_the_fence() -> None:
    square = ((-50.0, -50.0), (-50.0, 25.0), (50.0, 25.0), (50.0, -50.0))
    pos, vel, _ = fly(fenced(polygon=square), VelocityBody(5.0, 0.0, 0.0), yaw_rad=math.pi / 2)
    assert 23.0 <= pos[1] <= 25.0 and abs(pos[0]) < 0.1 and math.hypot(*vel) < 0.05


def test_climb_stops_below_max_altitude() -> None:
    pos, vel, _ = fly(fenced(max_altitude_m=20.0), VelocityNed(0.0, 0.0, -3.0))
    assert 18.0 <= -pos[2] <= 20.0 and abs(vel[2]) < 0.05


def test_acceleration_setpoint_stops_inside_and_holds_the_speed_limit() -> None:
    env = fenced(max_distance_m=60.0, max_horizontal_speed_m_s=8.0)
    pos, vel, top = fly(env, AccelerationNed(2.0, 0.0, 0.0), seconds=30.0)
    assert 58.0 <= pos[0] <= 60.0 and top <= 8.0 * 1.05 and math.hypot(*vel) < 0.05
    _, _, free_top = fly(fenced(max_horizontal_speed_m_s=8.0), AccelerationNed(2.0, 0.0, 0.0))
    assert 7.0 <= free_top <= 8.0 * 1.05  # no fence: the speed limit alone still holds


def test_without_a_usable_position_a_fenced_stream_stops() -> None:
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
    nan = float("nan")
    vs.fold(FcLocalPosition(1000, nan, 0.0, -5.0, 0.0, 0.0, 0.0, **FC), 0.0)
    out, why = fenced(max_distance_m=30.0).shape(VelocityNed(3.0, 1.0, -1.0, yaw_rad=1.0), vs, 0.0)
    assert out == VelocityNed(0.0, 0.0, 0.0, yaw_rad=1.0)
    assert why is not None and why[0] is Reason.FENCE_STOP
    stale, _ = fenced(max_distance_m=30.0).shape(VelocityNed(3.0, 0.0, 0.0), vs, 5.0)
    assert stale == VelocityNed(0.0, 0.0, 0.0)
    free = AccelerationNed(1.0, 0.0, 0.0)  # no fence: nothing to stop for
    assert fenced().shape(free, vs, 0.0) == (free, None)


def test_body_velocity_is_never_turned_by_a_stale_heading() -> None:
    """Found by review: the heading's age was never checked (the position's was). With the
    only ATTITUDE a minute old (north) and the vehicle since turned east, a closed loop
    flew a body-frame velocity to 97 m east with the fence at 25 m. A stale heading is now
    no heading: the velocity is held at zero, as with none."""
    env = Envelope(EnvelopeSettings(polygon=_EAST_FACE_SQUARE))
    env.set_home(_HOME)
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
    vs.fold(FcAttitude(0, 0.0, 0.0, 0.0, **FC), 0.0)  # heading north, then ATTITUDE stops
    true_yaw = math.pi / 2  # the vehicle has since turned east (a yaw-rate command)
    pos, vel = [0.0, 0.0, -10.0], [0.0, 0.0, 0.0]
    sp, dt = VelocityBody(5.0, 0.0, 0.0), 0.01
    cmd: Setpoint = sp
    for k in range(int(20.0 / dt)):
        now = 60.0 + k * dt  # the only ATTITUDE is a minute old
        if k % 10 == 0:  # LOCAL_POSITION_NED keeps coming: the position estimate is fresh
            vs.fold(FcLocalPosition(60_000 + k * 10, *pos, *vel, **FC), now)
        if k % 5 == 0:
            cmd, _ = env.shape(sp, vs, now)
        if isinstance(cmd, VelocityBody):  # PX4 rotates by its *current* heading
            c, s = math.cos(true_yaw), math.sin(true_yaw)
            want = [c * cmd.forward_m_s - s * cmd.right_m_s,
                    s * cmd.forward_m_s + c * cmd.right_m_s, cmd.down_m_s]
        else:
            assert isinstance(cmd, PositionNed)
            want = [max(-5.0, min(5.0, 0.95 * (t - p)))
                    for t, p in zip((cmd.north_m, cmd.east_m, cmd.down_m), pos, strict=True)]
        for i in range(3):
            vel[i] += max(-5.0, min(5.0, 4.0 * (want[i] - vel[i]))) * dt
            pos[i] += vel[i] * dt
    # expected: stop 1 m (stop_margin_m) inside the east face, as with a fresh heading
    # (tests/core/test_envelope_engine.py::test_body_velocity_is_rotated_by_heading...)
    assert pos[1] <= 25.0, f"flew to east {pos[1]:.1f} m, fence at 25 m"


_HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **FC)
_EAST_FACE_SQUARE = ((-50.0, -50.0), (-50.0, 25.0), (50.0, 25.0), (50.0, -50.0))


def test_a_shaped_acceleration_never_tilts_past_max_tilt() -> None:
    # The speed limit's and the fence's braking (up to max_acceleration_m_s2) is an
    # acceleration setpoint too: PX4 tilts atan(|a_h| / g) for it (measured on PX4 SIH
    # main: 8 m/s² flew at 38.8°), so it must stay within max_tilt_deg.
    limit = math.tan(math.radians(10.0)) * 9.80665
    for env in (Envelope(EnvelopeSettings(max_tilt_deg=10.0, max_acceleration_m_s2=8.0,
                                          max_horizontal_speed_m_s=2.0)),
                fenced(max_tilt_deg=10.0, max_acceleration_m_s2=8.0, max_distance_m=20.0)):
        vs = VehicleState(estimate_timeout_s=0.5)
        vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
        vs.fold(FcLocalPosition(1000, 15.0, 0.0, -5.0, 6.0, 0.0, 0.0, **FC), 0.0)
        vs.fold(FcAttitude(1000, 0.0, 0.0, 0.0, **FC), 0.0)
        out, why = env.shape(AccelerationNed(0.0, 1.0, 0.0), vs, 0.0)
        assert isinstance(out, AccelerationNed) and why is not None
        assert out.north_m_s2 < -1.0  # braking
        assert math.hypot(out.north_m_s2, out.east_m_s2) <= limit + 1e-9
