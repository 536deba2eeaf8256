"""Motion commands in the engine: plan, check the whole path, then fly it (issue 16).

The table (machine_table) says where goto / path / orbit / stop are accepted; this is
what an accepted one does. It plans from where the running motion is (what is being
streamed: no step) or, with none, from the vehicle's estimate; it checks the whole path
against the fence (motion_fence: a concave polygon too, and the altitude limits) and
refuses the whole motion with the first point outside; then the stream flies it.
An engaging goto / path starts from rest where the vehicle is, and waits there until
ACTIVE.

A lease lapse stops a running motion jerk-limited (`smooth_hold`) before the hold; with
motion.on_lease_lapse = finish an accepted motion may end first, at most
motion.max_unleased_s (`finishing_allowed`, `let_finish`).

Pure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from offboardd.core.engage_gate import engage_blocked
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.machine import Do, Rule
from offboardd.core.motion import Start, plan
from offboardd.core.motion_commands import MotionCommand, Stop
from offboardd.core.motion_fence import first_point_outside
from offboardd.core.motion_profile import PlanError
from offboardd.core.motion_settings import OnLeaseLapse
from offboardd.core.reasons import Phase, Reason

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine



def _start(eng: OffboardEngine, now: float, *, at_rest: bool = False) -> Start | None:
    running = eng.feed.motion or eng.feed.rests_on
    if running is not None:
        # A finished one too: its end is what is streamed, and the vehicle, done within
        # half of max_lead_m of it (motion_clock), is still closing in; from the estimate
        # the setpoint would step back to where the vehicle is.
        st = running.state_at(now)
        return Start(st.position, st.velocity, st.acceleration, running.setpoint_at(now).yaw_rad)
    # Where the vehicle is, as the hold would fly it: a valid estimate, and finite (a NaN
    # position or heading from the FC would make every planned setpoint unflyable).
    here = eng.vehicle.hold_setpoint(now)
    if here is None:
        return None
    # An engaging motion starts from rest, as an engage without a setpoint holds: its
    # start is streamed through the warm-up and begins at OFFBOARD, a second or more on,
    # by when the FC's own hold has braked. From the estimated velocity it streamed a
    # position held still with a speed beside it (review).
    velocity = ((0.0, 0.0, 0.0) if at_rest
                else _within_limits(eng.vehicle.local_velocity_ned(), eng.settings.envelope))
    return Start((here.north_m, here.east_m, here.down_m), velocity, (0.0, 0.0, 0.0),
                 here.yaw_rad)


def _within_limits(velocity: tuple[float, float, float], env: EnvelopeSettings
                   ) -> tuple[float, float, float]:
    """The estimated velocity a motion starts from, within the envelope's speeds: a
    planned motion streams nothing faster than those (a bad estimate of 50 m/s once
    planned a 400 m stop: review)."""
    north, east, down = velocity
    horizontal = math.hypot(north, east)
    if horizontal > env.max_horizontal_speed_m_s:
        shrink = env.max_horizontal_speed_m_s / horizontal
        north, east = north * shrink, east * shrink
    return north, east, min(max(down, -env.max_up_speed_m_s), env.max_down_speed_m_s)


def on_motion(eng: OffboardEngine, rule: Rule, cmd: MotionCommand, now: float) -> bool:
    v, out = eng.vehicle, eng.out
    if not eng.fc_up or v.target is None:
        return out.refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
    engaging = rule.to is Phase.WARMUP
    if engaging and engage_blocked(eng, cmd.command_id):
        return False
    start = _start(eng, now, at_rest=engaging)
    if start is None:
        return out.refuse(cmd.command_id, Reason.ESTIMATE_MISSING,
                          f"{cmd.kind.value} plans from where the vehicle is: it needs a "
                          "valid local position estimate")
    speed = 0.0 if isinstance(cmd, Stop) else cmd.speed_m_s
    lim = eng.settings.motion.limits(eng.settings.envelope, speed)
    running = eng.feed.motion
    flying = running if running is not None and not running.done(now) else None
    try:
        if isinstance(cmd, Stop) and flying is not None:
            motion = flying.stop_on_path(cmd, now, lim)  # on the path: inside its fence
        else:  # a replacement that must stop first stops on the running path too
            stop_first = None if flying is None else flying.path_stop(now, lim)
            motion = plan(cmd, start, lim, eng.envelope.home, stop_first)
    except PlanError as exc:
        return out.refuse(cmd.command_id, Reason.MOTION_INVALID, f"{cmd.kind.value}: {exc}")
    motion.lead_vehicle(eng.settings.motion.max_lead_m, lim)
    refusal = first_point_outside(motion, eng.envelope)
    note = ""
    if refusal is not None and isinstance(cmd, Stop) and flying is None:
        # Never refused: refused, it left the vehicle flying on whatever it streamed before,
        # an attitude towards the fence (review, 2026-11-29). It stops where the vehicle is,
        # braking as PX4's position control does (its own, harder, limits); just outside,
        # that point is held shaped by the fence as any setpoint is (fence_checked False).
        note = f"; its braking would leave the fence ({refusal[1]}): held where it is"
        at_rest = Start(start.position, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), start.yaw_rad)
        motion = plan(cmd, at_rest, lim, eng.envelope.home, None)
        motion.lead_vehicle(eng.settings.motion.max_lead_m, lim)
        refusal = first_point_outside(motion, eng.envelope)
    elif refusal is not None:
        return out.refuse(cmd.command_id, refusal[0], f"{cmd.kind.value} refused: {refusal[1]}")
    motion.fence_checked = refusal is None
    summary = (f"{cmd.kind.value} accepted: {motion.profile.flown_m:.1f} m in "
               f"{motion.profile.duration_s:.1f} s{note}")
    if engaging:
        eng.guard.rearm_breach()
        eng.engage.begin(cmd.command_id, getattr(cmd, "arm", False), "", v.custom_mode, now)
        eng.last_ack = None
        eng.lease.grant(now, eng.commander)
        eng.move(rule, f"{summary}; streaming its start for {eng.settings.warmup_s:g} s "
                       "before OFFBOARD")
        eng.feed.start(motion, v.target, now)
        return True  # answered like an engage, once ACTIVE
    eng.feed.send_now(motion, v.target, now)
    if Do.GRANT_LEASE in rule.does:  # resuming from HOLDING
        eng.lease.grant(now, eng.commander)
    eng.move(rule, f"a {cmd.kind.value} resumed offboard control")
    out.reply_ok(cmd.command_id, summary)
    return True


def smooth_hold(eng: OffboardEngine, now: float) -> bool:
    """A lease lapse with a motion running: replace it by a jerk-limited stop (the
    motion is reported aborted, lease_lapsed) and hold where that ends. False: no motion."""
    if eng.feed.motion is None:
        return False
    start = _start(eng, now)  # exactly what is being streamed: the stop has no step
    assert start is not None
    running = eng.feed.motion
    eng.feed.abort_motion(Reason.LEASE_LAPSED, "the commander's lease lapsed")
    lim = eng.settings.motion.limits(eng.settings.envelope, 0.0)
    stop = (running.stop_on_path(Stop("lease-lapse"), now, lim) if not running.done(now)
            else plan(Stop("lease-lapse"), start, lim, None)
            ).lead_vehicle(eng.settings.motion.max_lead_m, lim)
    stop.internal = True
    stop.begin(now)
    eng.feed.send_now(stop, eng.vehicle.target, now)
    return True


def finishing_allowed(eng: OffboardEngine, now: float) -> bool:
    """Fact.MOTION_FINISHING: on_lease_lapse = finish and a commanded motion is under way
    that has not had its extension yet."""
    motion = eng.feed.motion
    return (eng.settings.motion.on_lease_lapse is OnLeaseLapse.FINISH and motion is not None
            and not motion.internal and not motion.done(now)
            and motion.unleased_until_s is None)


def let_finish(eng: OffboardEngine, now: float) -> float:
    """Keep the lease until the motion ends, at most max_unleased_s: the lapse comes
    again then (and the hold follows). Returns the new lease end."""
    motion = eng.feed.motion
    assert motion is not None
    until = min(motion.end_time_s(now), now + eng.settings.motion.max_unleased_s)
    motion.unleased_until_s = until
    eng.lease.grant_until(until)  # for nobody: a live commander takes it with the token
    eng.new_epoch()
    return until
