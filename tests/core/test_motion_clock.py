"""A motion's clock waits for a vehicle that trails it (core/motion_clock.py), in the pure
engine with injected time: PX4 ramping its take-off, flying slower than the plan, or not
moving at all. The planned point keeps within about `max_lead_m` of the vehicle, the
stream never steps, `motion_done` comes only with the vehicle near the end, and a motion
that waits long says so once."""

from __future__ import annotations

import itertools
import math

import pytest

from offboardd.core.actions import NoticeKind, SendSetpoint
from offboardd.core.motion_clock import PX4_FOLLOWS_S, lead_m
from offboardd.core.motion_commands import Goto, Stop
from offboardd.core.motion_profile import MotionState
from offboardd.core.motion_settings import MotionSettings
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed, PositionVelocityNed
from offboardd.core.settings import EngineSettings
from offboardd.errors import ConfigError

from .bench import Bench, speed_m_s

TICK_S = 0.05


def _at(b: Bench) -> tuple[float, float, float]:
    return b.fc.north_m, b.fc.east_m, b.fc.down_m


def _fly_capped(b: Bench, seconds: float, speed_m_s: float) -> None:
    """A vehicle that flies toward the last position streamed at no more than
    `speed_m_s` (0: it stays where it is), stepped a tick at a time."""
    for _ in range(round(seconds / TICK_S)):
        sent = b.actions(SendSetpoint)
        if sent and isinstance(sp := sent[-1][1].setpoint, PositionNed | PositionVelocityNed):
            here, there = _at(b), (sp.north_m, sp.east_m, sp.down_m)
            gap = math.dist(here, there)
            move = min(gap, speed_m_s * TICK_S)
            if gap > 1e-9:
                b.fc.north_m, b.fc.east_m, b.fc.down_m = (
                    h + (t - h) * move / gap for h, t in zip(here, there, strict=True))
            v = speed_m_s if gap > speed_m_s * TICK_S else 0.0
            b.fc.velocity_m_s = tuple(  # type: ignore[assignment]
                (t - h) / gap * v if gap > 1e-9 else 0.0 for h, t in zip(here, there, strict=True))
        b.step(TICK_S)


def _worst_speed_change_m_s2(stream: list[tuple[float, PositionVelocityNed]]) -> float:
    return max(abs(speed_m_s(c) - speed_m_s(a)) / max(t1 - t0, 1e-3)
               for (t0, a), (t1, c) in itertools.pairwise(stream))


def _active() -> Bench:
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    return b


def test_a_vehicle_that_does_not_move_holds_the_planned_point_near_it_and_no_done() -> None:
    """Before: the goto ran on alone and reported motion_done 20 m from the vehicle."""
    b = _active()
    t0 = b.now
    b.feed(Goto("g", PositionNed(20, 0, -5), speed_m_s=5.0))
    assert b.reply("g").ok
    _fly_capped(b, 20.0, 0.0)
    stream = b.streamed_motion(t0)
    farthest = max(math.dist((sp.north_m, sp.east_m, sp.down_m), (0, 0, -5)) for _, sp in stream)
    assert 1.5 <= farthest <= 2.5, farthest  # max_lead_m 2: slowed in time (about)
    assert b.notices(NoticeKind.MOTION_DONE) == []
    assert speed_m_s(stream[-1][1]) < 0.05  # waiting, not pushing on
    assert _worst_speed_change_m_s2(stream) <= 3.0 + 0.3  # the acceleration limit, no step
    waiting = [n for n in b.notices(NoticeKind.WARNING) if n.reason is Reason.VEHICLE_TRAILING]
    assert len(waiting) == 1 and waiting[0].command_id == "g", waiting
    shown = b.engine.snapshot(b.now).motion
    assert shown is not None and shown["clock_rate"] < 0.05 and shown["lead_m"] >= 2.0


def test_once_the_vehicle_moves_the_motion_goes_on_and_ends_with_it_near_the_end() -> None:
    b = _active()
    b.feed(Goto("g", PositionNed(20, 0, -5), speed_m_s=5.0))
    _fly_capped(b, 4.0, 0.0)  # a take-off that does not come yet
    t_moving = b.now
    done_at: list[float] = []
    for _ in range(400):
        _fly_capped(b, TICK_S, 5.0)
        if b.notices(NoticeKind.MOTION_DONE):
            done_at.append(b.now)
            break
    assert done_at, "never done"
    assert math.dist(_at(b), (20, 0, -5)) <= 1.0 + 1e-6  # within half of max_lead_m
    assert done_at[0] - t_moving >= 20.0 / 5.0  # not before the vehicle could get there
    assert _worst_speed_change_m_s2(b.streamed_motion(t_moving)) <= 3.0 + 0.3


def test_a_vehicle_slower_than_the_plan_is_led_by_at_most_max_lead() -> None:
    """PX4's own MPC_XY_VEL_MAX at 2 m/s under a goto planned at 6: the point waits for it
    instead of running 40 m ahead (before: 19 m ahead at the plan's end), and says once
    that PX4 flies slower than planned."""
    b = _active()
    t0 = b.now
    b.feed(Goto("g", PositionNed(40, 0, -5), speed_m_s=6.0))
    leads = []
    for _ in range(round(25.0 / TICK_S)):
        _fly_capped(b, TICK_S, 2.0)
        sp = b.streamed_motion(t0)[-1][1]
        leads.append(math.dist((sp.north_m, sp.east_m, sp.down_m), _at(b)))
        if b.notices(NoticeKind.MOTION_DONE):
            break
    assert b.notices(NoticeKind.MOTION_DONE), "never done"
    # max_lead_m, and PX4's natural lag behind a moving plan at the 2 m/s it flies
    assert max(leads) <= 2.0 + PX4_FOLLOWS_S * 2.0, max(leads)
    assert 1.0 <= sorted(leads)[len(leads) // 2] <= 2.0 + PX4_FOLLOWS_S * 2.0  # paced
    waiting = [n for n in b.notices(NoticeKind.WARNING) if n.reason is Reason.VEHICLE_TRAILING]
    assert len(waiting) == 1, waiting


def test_an_engaging_goto_from_the_ground_waits_for_the_take_off() -> None:
    """PX4 ramps its take-off (MPC_TKO_RAMP_T): the vehicle first climbs ~3 s after arming.
    Before: a 5 m goto up reported motion_done while the vehicle was still on the ground."""
    b = Bench()
    b.fc.down_m = 0.0
    b.connect()
    b.commander_alive = True
    b.auto_fc()
    b.feed(Goto("g", PositionNed(0, 0, -5), speed_m_s=2.0, engage=True, arm=True))
    b.step(b.settings.warmup_s + 1.0)
    assert b.phase() is Phase.ACTIVE
    _fly_capped(b, 3.0, 0.0)  # spool-up and PX4's ramp: still on the ground
    assert b.notices(NoticeKind.MOTION_DONE) == []
    above_m = -min(sp.down_m for _, sp in b.streamed_motion(0.0))
    assert above_m <= 3.0, above_m  # the planned point waited ~2 m above the vehicle
    _fly_capped(b, 8.0, 2.0)
    assert [n.command_id for n in b.notices(NoticeKind.MOTION_DONE)] == ["g"]
    assert b.fc.down_m == pytest.approx(-5.0, abs=1.0)


def test_a_stop_while_the_clock_waits_starts_from_the_speed_streamed() -> None:
    """A stop on the path is timed from the running clock's rate: starting from the
    profile's own speed would step the stream's velocity up."""
    b = _active()
    t0 = b.now
    b.feed(Goto("g", PositionNed(30, 0, -5), speed_m_s=6.0))
    _fly_capped(b, 3.0, 1.0)  # trails: the clock runs slow
    motion = b.engine.feed.motion
    assert motion is not None
    assert motion.clock.rate < 0.7, motion.clock.rate
    b.feed(Stop("s"))
    assert b.reply("s").ok
    _fly_capped(b, 6.0, 1.0)
    stream = b.streamed_motion(t0)
    assert _worst_speed_change_m_s2(stream) <= 3.0 + 0.3
    assert [n.command_id for n in b.notices(NoticeKind.MOTION_DONE)] == ["s"]


def test_with_max_lead_0_the_clock_runs_on_time_as_planned() -> None:
    b = Bench(EngineSettings(motion=MotionSettings(max_lead_m=0.0)))
    b.engage(PositionNed(0, 0, -5))
    b.feed(Goto("g", PositionNed(10, 0, -5), speed_m_s=5.0))
    _fly_capped(b, 6.0, 0.0)
    assert [n.command_id for n in b.notices(NoticeKind.MOTION_DONE)] == ["g"]


def test_without_an_estimate_the_clock_runs_on_time() -> None:
    """Blind, nothing says the vehicle trails: the plan is flown as timed (the envelope
    has its own rules for a lost estimate)."""
    b = _active()
    b.feed(Goto("g", PositionNed(10, 0, -5), speed_m_s=5.0))
    b.position_alive = False
    b.step(6.0)
    assert [n.command_id for n in b.notices(NoticeKind.MOTION_DONE)] == ["g"]


def test_the_lead_counts_lagging_and_beside_never_ahead() -> None:
    moving_north = MotionState((10.0, 0.0, -5.0), (3.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0, 10.0)
    assert lead_m(moving_north, (8.0, 0.0, -5.0)) == pytest.approx(2.0)  # behind
    assert lead_m(moving_north, (12.0, 0.0, -5.0)) == pytest.approx(0.0)  # ahead
    assert lead_m(moving_north, (10.0, 1.5, -5.0)) == pytest.approx(1.5)  # beside
    at_rest = MotionState((10.0, 0.0, -5.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0, 10.0)
    assert lead_m(at_rest, (11.0, 0.0, -5.0)) == pytest.approx(1.0)  # the end: any way


@pytest.mark.parametrize("lead", [0.5, -1.0, math.nan, 51.0])
def test_a_lead_no_estimate_could_keep_is_refused(lead: float) -> None:
    with pytest.raises(ConfigError):
        MotionSettings(max_lead_m=lead)


def test_the_next_motion_starts_from_the_end_still_streamed_not_from_the_vehicle() -> None:
    """Done within a metre of its end, the vehicle still closes in: a goto sent then is
    planned from the end being streamed. From the estimate, the setpoint stepped back
    to the vehicle, 0.4 m behind (the e2e test's 6.4 m leg where 6 were asked)."""
    b = _active()
    b.feed(Goto("g1", PositionNed(10, 0, -5), speed_m_s=3.0))
    for _ in range(400):
        _fly_capped(b, TICK_S, 1.5)
        if b.notices(NoticeKind.MOTION_DONE):
            break
    assert 0.05 < math.dist(_at(b), (10, 0, -5)) <= 1.0
    t_next = b.now
    b.feed(Goto("g2", PositionNed(10, 6, -5), speed_m_s=3.0))
    assert "6.0 m" in b.reply("g2").message
    first = b.streamed_motion(t_next)[0][1]
    assert (first.north_m, first.east_m, first.down_m) == pytest.approx((10, 0, -5), abs=1e-6)
