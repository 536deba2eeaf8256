"""A running motion stops on its own path (found by review: it braked in a straight line
along the direction of travel, which is not the path; near the fence an operator's
`stop` was refused and the orbit flew on, and the lease-lapse stop, never fence-checked,
streamed and then held a position 0.7 m outside the fence)."""

from __future__ import annotations

import math

from offboardd.core.actions import SendSetpoint
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcHomePosition
from offboardd.core.motion_commands import Goto, Orbit, Stop
from offboardd.core.reasons import Phase
from offboardd.core.setpoints import Attitude, PositionNed, PositionVelocityNed
from offboardd.core.settings import EngineSettings
from tests.core.bench import FC, Bench

HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **FC)
FENCE_M = 10.5  # max_distance_m: the 10 m orbit below is inside it, as the planner checks


def _orbiting() -> Bench:
    b = Bench(EngineSettings(hold_s=10.0, envelope=EnvelopeSettings(max_distance_m=FENCE_M)),
              follow=True)
    b.connect()
    b.feed(HOME)
    b.engage(PositionNed(0, 0, -5))
    b.feed(Orbit("o", PositionNed(0, 0, -5), radius_m=10.0, speed_m_s=4.5, turns=5))
    assert b.reply("o").ok  # the whole orbit was checked inside the fence
    b.step(12.0)  # on the circle at 4.5 m/s
    return b


def _streamed_motion(b: Bench, seconds: float) -> list[PositionVelocityNed]:
    """What the next `seconds` stream: a planned motion's points, nothing else."""
    t = b.now
    b.step(seconds)
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=t)]
    pvs = [sp for sp in sent if isinstance(sp, PositionVelocityNed)]
    assert len(pvs) == len(sent)
    return pvs


def test_a_stop_near_the_fence_is_obeyed_and_stays_inside() -> None:
    b = _orbiting()
    b.feed(Stop("s"))
    reply = b.reply("s")
    # docs/motion.md: `stop` = "a jerk-limited stop ... then holds there"; it should never
    # be the one command that cannot be obeyed while a checked motion is flying
    assert reply.ok, f"{reply.reason}: {reply.message}"
    motion = b.engine.feed.motion
    assert motion is not None
    shown = motion.progress(b.now)  # the stretch it brakes over, not the orbit's rest
    assert shown["progress"] < 0.05 and shown["distance_to_go_m"] < 8.0, shown
    pvs = _streamed_motion(b, 5.0)
    worst_m = max(math.hypot(sp.north_m, sp.east_m) for sp in pvs)
    worst_a = max(math.dist((0, 0, 0), (sp.north_m_s2 or 0.0, sp.east_m_s2 or 0.0,
                                        sp.down_m_s2 or 0.0)) for sp in pvs)
    assert worst_m <= FENCE_M and worst_a <= 3.0 * 1.05, (worst_m, worst_a)
    assert math.hypot(pvs[-1].north_m_s, pvs[-1].east_m_s) < 1e-6
    assert b.phase() is Phase.ACTIVE


def test_a_lease_lapse_stop_streams_and_holds_inside_the_fence() -> None:
    b = _orbiting()
    b.commander_alive = False
    t = b.now
    b.step(6.0)  # lease lapses (1 s), the jerk-limited stop (~2 s), then holding
    assert b.phase() is Phase.HOLDING
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=t)]
    worst = max(math.hypot(sp.north_m, sp.east_m) for sp in sent)  # type: ignore[union-attr]
    held = sent[-1]
    # docs/safety-envelope.md: position setpoints outside the fence are never sent
    assert worst <= FENCE_M, (
        f"streamed a position {worst:.2f} m from home (fence {FENCE_M} m); now holding "
        f"{math.hypot(held.north_m, held.east_m):.2f} m from home")  # type: ignore[union-attr]


def test_a_replacing_motion_near_the_fence_stops_on_the_running_path_first() -> None:
    """A goto that does not continue the running motion stops first. That stop was a
    straight line along the direction of travel: from an orbit near the fence it left
    the fence, and "go back to the centre", the operator's natural command there, was
    refused (named as left out by the session-24 review). It now stops on the orbit's
    own path, which was checked, then flies to the centre."""
    b = _orbiting()
    b.feed(Goto("g", PositionNed(0, 0, -5), speed_m_s=3.0))
    reply = b.reply("g")
    assert reply.ok, f"{reply.reason}: {reply.message}"
    motion = b.engine.feed.motion
    assert motion is not None
    shown = motion.progress(b.now)  # the new motion's own progress, not the orbit's
    assert shown["progress"] < 0.05 and shown["leg"] == 0 and shown["legs"] == 2, shown
    # the braking stretch on the circle (~7 m from 4.5 m/s) and the 10 m in: not the
    # rest of the orbit's five turns (~250 m), which is not flown
    flown_m = float(reply.message.split("accepted: ")[1].split(" m")[0])
    assert 15.0 < flown_m < 19.0 and abs(shown["distance_to_go_m"] - flown_m) < 0.5, (
        reply.message, shown)
    pvs = _streamed_motion(b, 12.0)
    worst_m = max(math.hypot(sp.north_m, sp.east_m) for sp in pvs)
    assert worst_m <= FENCE_M, worst_m
    end = pvs[-1]
    assert math.hypot(end.north_m, end.east_m) < 1e-6 and end.north_m_s == 0.0
    assert b.engine.feed.motion is None and b.phase() is Phase.ACTIVE  # done


def test_a_stop_with_nothing_running_whose_braking_leaves_the_fence_holds_there() -> None:
    """Flying an attitude towards the fence, 1 m short of it at 2 m/s: the jerk-limited stop
    along the way would end 0.4 m outside, and the `stop` was refused: the attitude flew
    on (review, 2026-11-29). It is never refused: it holds where the vehicle is."""
    b = Bench(EngineSettings(envelope=EnvelopeSettings(max_distance_m=20.0)))
    b.fc.north_m, b.fc.velocity_m_s = 19.0, (2.0, 0.0, 0.0)
    b.connect()
    b.feed(HOME)
    b.engage(Attitude(0.9990482, 0.0, 0.0436194, 0.0, 0.6))  # ~5 degrees nose down
    b.fc.north_m, b.fc.velocity_m_s = 19.0, (2.0, 0.0, 0.0)
    b.step(0.2)
    t = b.now
    b.feed(Stop("s"))
    reply = b.reply("s")
    assert reply.ok and "held where it is" in reply.message, reply.message
    b.step(2.0)
    sent = {a.setpoint for _, a in b.actions(SendSetpoint, since=t)}
    assert sent and all(isinstance(sp, PositionVelocityNed) and sp.north_m == 19.0
                        and (sp.north_m_s, sp.east_m_s, sp.down_m_s) == (0, 0, 0)
                        for sp in sent), sent
    assert b.phase() is Phase.ACTIVE
