"""Failsafes and hand-overs, the engine's side: the lease lapsing, HOLDING, the
commander-loss action, the fence breach, preemption, the FC gone, and every hand-over to
another FC mode (release, hold/land/rtl, loss action, breach action) as it progresses.

Each function turns what happened into a trigger, asks the table (machine_table) where
it leads, does what the row says and moves there. The hand-over's own bookkeeping is
engine_handover.Handovers; the hold setpoint comes from VehicleState. Pure.

Must not: name a next phase; the table does.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from offboardd.core.actions import NoticeKind, RequestMode
from offboardd.core.engine_handover import Step
from offboardd.core.engine_motion import let_finish, smooth_hold
from offboardd.core.machine import Do, Outcome, Rule, Trigger
from offboardd.core.machine_table import ENGAGE_STEPS, MACHINE, TAKEN
from offboardd.core.modes import Px4Mode, mode_name
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import Attitude, BodyRates, Setpoint
from offboardd.core.settings import ESCALATION

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine

# Where the table looks at a breach at all: a cheap test for every LOCAL_POSITION_NED.
_BREACH_PHASES = frozenset(p for p in Phase if MACHINE.listed(p, Trigger.FENCE_BREACH))
_ENGAGE_PHASES = ENGAGE_STEPS | {Phase.ARMING}  # an engage under way (its hand-over ends it)


def fail_pending(eng: OffboardEngine, reason: Reason, message: str, *,
                 resume: str | None = None) -> None:
    """Answer every operator command still waiting for the FC: it will not happen."""
    eng.out.reply_fail(eng.engage.take_id(), reason, message, resume=resume)
    handover = eng.handover.take()
    for waiting in [] if handover is None else handover.command_ids:
        eng.out.reply_fail(waiting, reason, message, resume=resume)
    pending = eng.arms.take()
    if pending is not None:
        eng.out.reply_fail(pending.command_id, reason, message, resume=resume)


def preempt(eng: OffboardEngine, rule: Rule, message: str) -> None:
    """The FC took control away: stop at once and never take it back by ourselves."""
    reason = rule.reason_for(None)
    assert reason is not None
    eng.stop_stream()
    fail_pending(eng, reason, message)
    eng.move(rule, message + "; stopped streaming")


def abandon(eng: OffboardEngine, trigger: Trigger, now: float, message: str) -> None:
    """The FC is gone or rebooted: stop whatever we were doing with the vehicle."""
    rule = eng.rule(trigger, now)
    reason = rule.reason_for(None)
    assert reason is not None
    if Do.STOP_STREAM in rule.does:
        if trigger is Trigger.FC_REBOOTED:  # on the ground, booting: nothing to leave it
            eng.stop_stream()
        else:  # unheard, it may still fly our stream
            stop_on_a_stop(eng, now)
    eng.move(rule, message)
    fail_pending(eng, reason, message, resume=eng.reply_token())


def stop_on_a_stop(eng: OffboardEngine, now: float) -> None:
    """Stop streaming, the last frame a stop (`_still`), never the commander's setpoint:
    where PX4 takes no action on the offboard loss (COM_OBL_RC_ACT 0-2 without RC and
    NAV_RCL_ACT 0 or 7, v1.17+) it stays in OFFBOARD flying the last setpoint it got
    [SITL main and v1.17.0: a 1 m/s velocity flew on at 0.8-0.94 m/s for 10 s; the daemon's
    `px4` loss action left it flying 4.9 m in 6 s] (review). Never after a takeover: a
    setpoint would bring PX4 back into an OFFBOARD it still intends (§3)."""
    still = _still(eng, now) if eng.feed.running else None
    if still is not None and eng.vehicle.target is not None:
        eng.feed.send_last(still, eng.vehicle.target, now)
    eng.stop_stream()


def fail_back(eng: OffboardEngine, rule: Rule, message: str, reason: Reason) -> None:
    """An engage that failed with nothing of ours flying (the table's BACK): stop, go back
    where it was made from, and fail it naming the token to quote next there."""
    eng.stop_stream()
    eng.move(rule, f"engage failed: {message}", reason)
    eng.out.reply_fail(eng.engage.take_id(), reason, message, resume=eng.reply_token())


# -- lease, hold, loss action ----------------------------------------------------------------


def lease_lapsed(eng: OffboardEngine, now: float) -> None:
    eng.lease.end()
    rule = eng.rule(Trigger.LEASE_LAPSED, now)
    if rule.to is Outcome.BACK:  # no (more) requests for a vanished commander; nothing flies
        fail_back(eng, rule, f"commander lease lapsed in {eng.phase.value}",
                  Reason.LEASE_LAPSED)
        return
    if Do.REPLY_FAIL in rule.does:  # the engage's steps, PX4 perhaps in OFFBOARD: no engage
        # and no more requests, but no vehicle left to PX4's loss action either (review)
        fail_pending(eng, Reason.LEASE_LAPSED, f"commander lease lapsed in "
                     f"{eng.phase.value}, PX4 perhaps in OFFBOARD")
    if rule.to is Outcome.STAY:  # motion.on_lease_lapse = finish
        kept_s = let_finish(eng, now) - now
        eng.out.notice(NoticeKind.FAILSAFE, "commander lease lapsed; the motion finishes "
                       f"first (at most {kept_s:.1f} s), then holds", Reason.LEASE_LAPSED)
        return
    hold = eng.vehicle.hold_setpoint(now)
    if rule.to is not Phase.HOLDING:
        why = "no position estimate to hold on" if hold is None else "hold_s is 0"
        loss_action(eng, rule, now, f"commander lease lapsed; {why}")
        return
    assert hold is not None  # Fact.HOLD_POSSIBLE
    hold_s = eng.settings.hold_s
    if not smooth_hold(eng, now):  # a motion stops jerk-limited; a setpoint: hold here
        eng.feed.send_now(hold, eng.vehicle.target, now)
    eng.hold_end_s = now + hold_s
    eng.move(rule, f"commander lease lapsed; holding position for {hold_s:g} s")
    eng.out.notice(NoticeKind.FAILSAFE, "holding position", Reason.LEASE_LAPSED)


def loss_action(eng: OffboardEngine, rule: Rule, now: float, why: str) -> None:
    """The commander is gone and no hold (left): `rule` says PX4's own action
    (FAILSAFE: stop streaming) or command_loss_action (RELEASING: a hand-over)."""
    action = eng.settings.command_loss_action
    if rule.to is Phase.FAILSAFE:
        stop_on_a_stop(eng, now)
        message = (
            f"{why}; stopped streaming: PX4's offboard-loss action "
            f"({eng.checks.loss_action_name() or 'COM_OBL_RC_ACT'}) follows"
        )
        eng.move(rule, message)
        eng.out.notice(NoticeKind.FAILSAFE, message, Reason.LOSS_ACTION)
        return
    eng.out.notice(
        NoticeKind.FAILSAFE, f"{why}; commander loss action: {action.value}", Reason.LOSS_ACTION
    )
    start_handover(eng, rule, ESCALATION[action.value], None, now, failsafe=True)


def hand_back(eng: OffboardEngine, rule: Rule, now: float, message: str,
              reason: Reason) -> None:
    """An engage that failed once PX4 may fly our stream (OFFBOARD asked for with no
    answer either way, or taken by PX4 itself in the warm-up): release_mode, streaming
    until the FC reports it, rather than a stop that would leave PX4 in OFFBOARD to its
    offboard-loss action (review)."""
    chain = ESCALATION[eng.settings.release_mode.value]
    eng.out.notice(NoticeKind.FAILSAFE, f"engage failed: {message}; PX4 may fly the stream "
                   f"(OFFBOARD): handing over to {chain[0].label}", reason)
    start_handover(eng, rule, chain, None, now, failsafe=False, reason=reason)


def check_breach(eng: OffboardEngine, now: float) -> None:
    """The vehicle is outside the fence while ours (drift, wind, an attitude setpoint
    the fence cannot steer): hold here, then hand over to the breach action."""
    if eng.phase not in _BREACH_PHASES or not eng.envelope.fence_enabled:
        return  # (asked for every LOCAL_POSITION_NED: no table lookup without a fence)
    rule = eng.rule(Trigger.FENCE_BREACH, now)
    if rule.to is Outcome.IGNORE:
        return
    message = eng.guard.breach(eng.vehicle, now)
    if message is None:
        return
    eng.out.notice(NoticeKind.FAILSAFE, message, Reason.FENCE_BREACH)
    action = eng.envelope.settings.breach_action
    start_handover(eng, rule, ESCALATION[action.value], None, now, failsafe=True)


# -- hand-over (release, hold/land/rtl, loss action, breach action) --------------------------


def start_handover(
    eng: OffboardEngine,
    rule: Rule,
    chain: tuple[Px4Mode, ...],
    command_id: str | None,
    now: float,
    *,
    failsafe: bool,
    reason: Reason | None = None,
) -> None:
    """Ask the FC for chain[0] (escalating on refusal); streaming goes on, if it was on,
    until the FC reports the mode, so PX4 never sees an offboard loss meanwhile. What is
    streamed meanwhile is never the commander's last setpoint (a velocity, a motion, or
    pushing out of the fence): it has no lease behind it any more, and a silent FC can
    make the hand-over last seconds (`_still`). `reason`: the one the engine names among
    the row's, kept to the hand-over's end."""
    hold = _still(eng, now) if eng.feed.running else None
    if hold is not None:
        eng.feed.send_now(hold, eng.vehicle.target, now)
    previous = eng.handover.current
    for waiting in [] if previous is None else previous.command_ids:
        eng.out.reply_fail(waiting, Reason.SUPERSEDED, "superseded by a newer command")
    eng.lease.end()
    reason = rule.reason_for(reason)
    assert reason is not None  # every HAND_OVER row names its reasons
    lapsed = failsafe or eng.phase is Phase.HOLDING  # the commander's lease is over
    taken = (lapsed or eng.phase in TAKEN or (previous is not None and previous.taken)
             or (eng.phase in _ENGAGE_PHASES and eng.left_from in TAKEN))
    eng.handover.start(
        chain, command_id, reason, failsafe=failsafe, taken=taken,
        streaming=eng.feed.running, start_custom_mode=eng.vehicle.custom_mode, now=now,
    )  # fmt: skip
    if lapsed:  # a plain hold/land/rtl's success (no failsafe's) goes back to failsafe
        eng.left_from = Phase.FAILSAFE
    eng.move(rule, f"requesting {chain[0].label}", reason)


def _still(eng: OffboardEngine, now: float) -> Setpoint | None:
    """What a hand-over streams: a hold where the vehicle is, when there is a "here";
    without one (no position estimate) an attitude or body-rate stream levels off
    (`_level`), and a velocity, body velocity, acceleration or running motion becomes
    zero velocity (VehicleState.stop_setpoint: 8 m/s flew on for 10 s after a lapse
    without a position, review). None: a position setpoint, a fixed point already, streams
    on. Zero velocity goes out even when our own view has no velocity estimate either,
    rather than stopping the stream: that view may only be a LOCAL_POSITION_NED trimmed or
    lost on the link while PX4 still flies the stream, and stopping would let the old
    velocity fly COM_OF_LOSS_T more, then hand the vehicle to COM_OBL_RC_ACT instead of the
    mode asked for. When PX4 has no velocity either, it flies neither setpoint (§1: the
    estimate a setpoint needs) and is in its own failsafe, whose mode ends the hand-over
    (taken, or the one asked for) and the stream; should its estimate come back first,
    zero velocity is the one thing safe for it to fly."""
    v = eng.vehicle
    return (v.hold_setpoint(now) or _level(eng)
            or v.stop_setpoint(eng.feed.setpoint, now, moving=eng.feed.motion is not None))


def _level(eng: OffboardEngine) -> Attitude | BodyRates | None:
    """The stream levelled (VehicleState.level_setpoint), its thrust kept within the
    envelope's: it is ours, not a commander's, and admission never saw it."""
    level = eng.vehicle.level_setpoint(eng.feed.setpoint)
    if level is None:
        return None
    limits = eng.envelope.settings
    thrust = min(max(level.thrust, limits.min_thrust), limits.max_thrust)
    return dataclasses.replace(level, thrust=thrust)


def handover_progress(eng: OffboardEngine, now: float, *, reported: bool = False) -> None:
    """The hand-over's turn: on a mode report (`reported`) or a timer."""
    v, handovers = eng.vehicle, eng.handover
    h = handovers.current
    if h is None:
        return
    seen = handovers.report(v, fresh=reported)
    if seen is Step.REACHED:
        rule = eng.rule(Trigger.FC_MODE_HANDED_OVER, now)
        handovers.take()
        eng.stop_stream()
        reached = v.mode if v.mode is not None else h.target_mode
        message = f"FC reports {reached.label}" + (
            f" (after escalating from {h.chain[0].label})" if h.index else ""
        )
        eng.move(rule, message, h.reason)
        for waiting in h.command_ids:
            eng.out.reply_ok(waiting, message, h.reason, resume=eng.reply_token())
        return
    if seen is Step.TAKEN:
        rule = eng.rule(Trigger.FC_MODE_TAKEN, now)
        taken = f"FC switched to {mode_name(v.custom_mode)}"
        if Do.STOP_STREAM in rule.does:  # we flew it: a takeover
            preempt(eng, rule, f"{taken} during the handover")
        else:  # a plain mode request: someone chose another mode; we never ask over it
            message = f"{taken} before it took {h.target_mode.label}; not asked again"
            reason = rule.reason_for(None)
            assert reason is not None
            handovers.take()
            eng.move(rule, message)
            for waiting in h.command_ids:
                eng.out.reply_fail(waiting, reason, message, resume=eng.reply_token())
        return
    step = handovers.poll(now)
    if step is Step.SEND:
        if v.target is not None:
            eng.out.emit(RequestMode(v.target, h.target_mode))
    elif step is Step.REFUSED:
        eng.go(Trigger.HANDOVER_REFUSED, now, "")
        refused = handovers.escalate(now)
        eng.out.notice(
            NoticeKind.FAILSAFE,
            f"FC refused {refused.label}; escalating to {h.target_mode.label}",
            Reason.ESCALATED,
        )
        handover_progress(eng, now)
    elif step is Step.EXHAUSTED:
        _handover_exhausted(eng, now)


def _handover_exhausted(eng: OffboardEngine, now: float) -> None:
    rule = eng.rule(Trigger.HANDOVER_EXHAUSTED, now)
    h = eng.handover.take()
    assert h is not None
    refused = h.target_mode
    reason = Reason.MODE_REFUSED if h.retrier.last_refused else Reason.MODE_TIMEOUT
    if rule.to is Outcome.BACK:  # a plain mode request (the vehicle was not ours): no failsafe
        message = f"FC did not take {refused.label}: {eng.diagnosis(now)}"
        eng.move(rule, message, reason)
        for waiting in h.command_ids:
            eng.out.reply_fail(waiting, reason, message, resume=eng.reply_token())
        return
    message = (
        f"FC refused {refused.label} and every fallback; stopped streaming, PX4's "
        f"offboard-loss action follows: {eng.diagnosis(now)}"
    )
    eng.stop_stream()
    eng.move(rule, message)
    eng.out.notice(NoticeKind.FAILSAFE, message, Reason.ESCALATED)
    for waiting in h.command_ids:
        eng.out.reply_fail(waiting, reason, message)
