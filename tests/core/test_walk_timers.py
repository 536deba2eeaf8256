"""The rest of the walk: every timer and envelope row, and the FC confirmations, each
produced by a real engine with the facts its guard names; then a check that the whole
walk (this module and test_walk.py) looked up every (phase, row) of the table, except the
few the engine cannot reach, each listed with why.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from offboardd.core.commands import Arm, Disarm, Hold, Land, Release, Rtl
from offboardd.core.envelope_settings import BreachAction, EnvelopeSettings
from offboardd.core.events import (
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    AckResult,
    FcHomePosition,
    FcLinkDown,
    FcParamValue,
)
from offboardd.core.machine import Fact, Machine, Rule, Trigger
from offboardd.core.machine_table import MACHINE
from offboardd.core.modes import Px4Mode
from offboardd.core.motion_commands import FollowPath, Goto
from offboardd.core.motion_settings import MotionSettings, OnLeaseLapse
from offboardd.core.reasons import Phase
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings, LossAction

from . import test_walk as walk
from .bench import FC, Bench

UP = walk.UP
OFFBOARD = Px4Mode.OFFBOARD


@dataclass
class Case:
    name: str
    settings: EngineSettings
    setup: Callable[[Bench], None]  # brings the bench to the phase
    fire: Callable[[Bench], object]  # makes the trigger happen
    trigger: Trigger
    facts: dict[Fact, bool] = field(default_factory=dict)
    back: Phase = Phase.IDLE  # where the table's BACK leads from this setup


def _flying_a_goto(b: Bench) -> None:
    b.engage(UP)
    b.feed(Goto("g", PositionNed(30, 0, -5), speed_m_s=3.0))


def _motion(trigger: Trigger, *, engage: bool, quote: bool = False) -> Callable[[Bench], None]:
    there = PositionNed(3, 0, -5)

    def fire(b: Bench) -> None:
        token = b.engine.resume_token if quote else None
        b.feed(Goto("m", there, engage=engage, resume=token) if trigger is Trigger.GOTO
               else FollowPath("m", (there,), engage=engage, resume=token))
    return fire


def _commander_gone(b: Bench) -> None:
    b.commander_alive = False
    b.step(b.settings.command_timeout_s + 0.01)


def _hold_over(b: Bench) -> None:
    b.step(b.settings.hold_s + 0.01)


def _offboard_then_warmup_end(b: Bench) -> None:
    b.set_mode(OFFBOARD)  # PX4 took OFFBOARD by itself once setpoints flowed (§3)
    b.step(1.0)


def _engaging_switched_unseen(b: Bench) -> None:
    """ENGAGING, armed; PX4 took OFFBOARD, but its CURRENT_MODE was lost and no HEARTBEAT
    came since (the review's finding 3)."""
    b.fc.armed = True
    walk._engaging(b)
    b.heartbeat_alive = False
    b.fc.custom_mode = OFFBOARD.custom_mode


def _unanswered(b: Bench) -> None:
    b.step(b.settings.mode_confirm_timeout_s + 0.05)


def _warmup_flown(b: Bench, arm: bool = False) -> None:
    """WARMUP, armed, after a failsafe that kept OFFBOARD as PX4's intended mode: PX4 is
    back in OFFBOARD 30 ms after the first setpoint and flies the stream (§3)."""
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_RTL.custom_mode
    walk._warmup(b, arm)
    b.step(0.03)
    b.set_mode(OFFBOARD)
    b.step(0.05)


def _warmup_flying(b: Bench) -> None:
    """WARMUP, armed, PX4 still in its failsafe mode: the next setpoint's OFFBOARD is next."""
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_RTL.custom_mode
    walk._warmup(b)


def _stall(b: Bench) -> None:
    b.step(0.5)
    b.now += 0.7  # the shell was stuck longer than COM_OF_LOSS_T / 2
    b.step(0.0)


def _estimate_lost(b: Bench) -> None:
    b.position_alive = False
    b.step(1.0)


def _forwarding_off(b: Bench) -> None:
    b.feed(FcParamValue("MAV_FWDEXTSP", 0, **FC))  # a GCS's PARAM_SET, broadcast by PX4
    b.step(1.0)


def _fc_silent(b: Bench) -> None:
    b.fc_alive = False
    b.step(0.95)  # 0.9 x COM_OF_LOSS_T (1 s) and a little


def _unheard_at_ends(b: Bench) -> None:
    """Heard in bursts (a HEARTBEAT 0.6 s before each warm-up end and 0.2 s after it,
    nothing else): never silent for 0.9 s, unheard at every end: restarted twice, failed
    at the third."""
    b.fc_alive = False
    for burst in range(3):
        end = b.engine.engage.warmup_deadline()
        assert end is not None and end - 0.6 > b.now
        b.step(end - 0.6 - b.now)
        b.feed(b.fc.heartbeat())
        b.step(0.61)
        if burst < 2:
            b.step(0.19)
            b.feed(b.fc.heartbeat())


def _silent(b: Bench) -> None:
    b.step(8.0)  # the FC never reports the mode / the arming


def _refuse_mode(b: Bench) -> None:
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)


def _refuse_arm(b: Bench) -> None:
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.TEMPORARILY_REJECTED)


def _refuse_mode_twice(b: Bench) -> None:
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)  # AUTO.LOITER
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)  # AUTO.LAND, the last fallback


def _fenced_active(b: Bench) -> None:
    b.connect()
    b.feed(FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **FC))
    b.engage(UP)
    b.step(0.3)  # seen inside: breach detection armed


def _fenced_holding(b: Bench) -> None:
    _fenced_active(b)
    _commander_gone(b)


def _pushed_out(b: Bench) -> None:
    b.fc.north_m = 60.0
    b.step(0.3)


def _plain_hold_request(b: Bench) -> None:
    b.connect()
    b.feed(Hold("h0"))


def _holding_loss_releasing(b: Bench) -> None:
    b.engage(UP)
    _commander_gone(b)
    _hold_over(b)


def _taken_hold_request(b: Bench) -> None:
    walk._preempted(b)
    b.feed(Hold("h0", resume=b.engine.resume_token))


def _quoting(kind: type[Hold | Land | Rtl], quote: bool) -> Callable[[Bench], object]:
    return lambda b: b.feed(kind("c", resume=b.engine.resume_token if quote else None))


def _loss_handover_superseded(b: Bench) -> None:
    _holding_loss_releasing(b)
    b.feed(Land("l0", resume=b.engine.resume_token))


def _disarm_on_command(b: Bench) -> None:
    b.feed(Disarm("d0"))
    b.set_armed(False)
    b.feed(b.fc.heartbeat())


def _armed(b: Bench) -> None:
    b.set_armed(True)
    b.feed(b.fc.heartbeat())


def _engaging_arm(b: Bench) -> None:
    walk._warmup(b, arm=True)
    b.step(1.0)


def _no_estimate_active(b: Bench) -> None:
    b.engage(UP)
    b.position_alive = False
    b.step(1.0)


F = Fact
S = EngineSettings
FENCED = S(envelope=EnvelopeSettings(max_distance_m=50.0, breach_action=BreachAction.LAND))
# hold / land / rtl during a hand-over: a repeat joins it, another mode supersedes it
COMMANDS: dict[Trigger, type[Hold | Land | Rtl]] = {
    Trigger.HOLD: Hold, Trigger.LAND: Land, Trigger.RTL: Rtl}


def _releasing_for(b: Bench, trigger: Trigger) -> None:
    b.engage(UP)
    b.feed(COMMANDS[trigger](f"first-{trigger.value}"))


def _ask(trigger: Trigger) -> Callable[[Bench], object]:
    return lambda b: b.feed(COMMANDS[trigger](f"again-{trigger.value}"))


def _pending(trigger: Trigger) -> Callable[[Bench], None]:
    return lambda b: _releasing_for(b, trigger)


FIRST_MODE = {Trigger.HOLD: Px4Mode.AUTO_LOITER, Trigger.LAND: Px4Mode.AUTO_LAND,
              Trigger.RTL: Px4Mode.AUTO_RTL}


def _in_phase_fc_in(phase: Phase, trigger: Trigger) -> Callable[[Bench], None]:
    def setup(b: Bench) -> None:
        walk.RECIPES[phase](b)
        b.set_mode(FIRST_MODE[trigger])
        b.step(0.1)
        assert b.phase() is phase
    return setup


CASES = [
    Case("warmup done", S(), walk._warmup, lambda b: b.step(1.05), Trigger.WARMUP_DONE,
         {F.FC_IN_OFFBOARD: False}),
    Case("warmup done, PX4 already in OFFBOARD", S(), walk._warmup, _offboard_then_warmup_end,
         Trigger.WARMUP_DONE, {F.FC_IN_OFFBOARD: True, F.ARM_WANTED: False}),
    Case("warmup done, PX4 already in OFFBOARD, arm", S(), lambda b: walk._warmup(b, arm=True),
         _offboard_then_warmup_end, Trigger.WARMUP_DONE,
         {F.FC_IN_OFFBOARD: True, F.ARM_WANTED: True}),
    Case("warmup stalled", S(), walk._warmup, _stall, Trigger.WARMUP_STALLED),
    Case("warmup estimate lost", S(), walk._warmup, _estimate_lost, Trigger.WARMUP_ESTIMATE_LOST,
         {F.FC_FLIES_STREAM: False}),
    Case("warmup blocked", S(), walk._warmup, _forwarding_off, Trigger.WARMUP_BLOCKED,
         {F.FC_FLIES_STREAM: False}),
    Case("lease lapsed in warmup", S(), walk._warmup, _commander_gone, Trigger.LEASE_LAPSED,
         {F.FC_FLIES_STREAM: False}),
    # PX4 took OFFBOARD by itself in the warm-up (review finding 5)
    Case("OFFBOARD by PX4 in warmup", S(), _warmup_flying, lambda b: b.set_mode(OFFBOARD),
         Trigger.FC_OFFBOARD, {F.FC_FLIES_STREAM: True}),
    Case("warmup estimate lost, PX4 flies", S(), _warmup_flown, _estimate_lost,
         Trigger.WARMUP_ESTIMATE_LOST, {F.FC_FLIES_STREAM: True}),
    Case("warmup blocked, PX4 flies", S(), _warmup_flown, _forwarding_off,
         Trigger.WARMUP_BLOCKED, {F.FC_FLIES_STREAM: True}),
    Case("lease lapsed in warmup, PX4 flies, hold", S(hold_s=5.0, command_timeout_s=0.5),
         _warmup_flown,
         _commander_gone, Trigger.LEASE_LAPSED,
         {F.FC_FLIES_STREAM: True, F.HOLD_POSSIBLE: True}),
    Case("lease lapsed in warmup, PX4 flies, no hold, px4",
         S(hold_s=0.0, command_timeout_s=0.5, command_loss_action=LossAction.PX4),
         _warmup_flown, _commander_gone,
         Trigger.LEASE_LAPSED,
         {F.FC_FLIES_STREAM: True, F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: True}),
    Case("lease lapsed in warmup, PX4 flies, no hold, command",
         S(hold_s=0.0, command_timeout_s=0.5), _warmup_flown,
         _commander_gone, Trigger.LEASE_LAPSED,
         {F.FC_FLIES_STREAM: True, F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: False}),
    Case("FC silent in warmup", S(), walk._warmup, _fc_silent, Trigger.FC_SILENT,
         {F.FC_ARMED: False}),
    Case("FC silent in warmup, armed", S(), _warmup_flying, _fc_silent, Trigger.FC_SILENT,
         {F.FC_ARMED: True}),
    Case("FC unheard at warm-up ends", S(), walk._warmup, _unheard_at_ends,
         Trigger.WARMUP_UNHEARD, {F.FC_FLIES_STREAM: False}),
    Case("FC unheard at warm-up ends, PX4 flies", S(), _warmup_flown, _unheard_at_ends,
         Trigger.WARMUP_UNHEARD, {F.FC_FLIES_STREAM: True}),
    Case("release in warmup, PX4 flies", S(), _warmup_flown,
         lambda b: b.feed(Release("r1")), Trigger.RELEASE, {F.FC_FLIES_STREAM: True}),
    *[Case(f"{asked.value} in warmup, PX4 flies", S(), _warmup_flown, _ask(asked), asked,
           {F.FC_FLIES_STREAM: True}) for asked in COMMANDS],
    Case("lease lapsed engaging, hold", S(hold_s=5.0), _engaging_switched_unseen, _commander_gone,
         Trigger.LEASE_LAPSED, {F.OFFBOARD_UNSEEN: True, F.HOLD_POSSIBLE: True}),
    Case("lease lapsed engaging, no hold, px4", S(hold_s=0.0, command_loss_action=LossAction.PX4),
         _engaging_switched_unseen, _commander_gone, Trigger.LEASE_LAPSED,
         {F.OFFBOARD_UNSEEN: True, F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: True}),
    Case("lease lapsed engaging, no hold, command", S(hold_s=0.0), _engaging_switched_unseen,
         _commander_gone, Trigger.LEASE_LAPSED,
         {F.OFFBOARD_UNSEEN: True, F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: False}),
    Case("lease lapsed engaging, nothing flies", S(), walk._engaging, _commander_gone,
         Trigger.LEASE_LAPSED, {F.OFFBOARD_UNSEEN: False}),
    Case("lease lapsed arming, hold", S(hold_s=5.0), walk._arming, _commander_gone,
         Trigger.LEASE_LAPSED, {F.HOLD_POSSIBLE: True}),
    Case("lease lapsed arming, no hold, px4", S(hold_s=0.0, command_loss_action=LossAction.PX4),
         walk._arming, _commander_gone, Trigger.LEASE_LAPSED,
         {F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: True}),
    Case("lease lapsed arming, no hold, command", S(hold_s=0.0), walk._arming,
         _commander_gone, Trigger.LEASE_LAPSED,
         {F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: False}),
    Case("lease lapsed, hold", S(hold_s=5.0), lambda b: b.engage(UP), _commander_gone,
         Trigger.LEASE_LAPSED, {F.HOLD_POSSIBLE: True, F.MOTION_FINISHING: False}),
    Case("lease lapsed, motion finishes", S(motion=MotionSettings(
        on_lease_lapse=OnLeaseLapse.FINISH)), _flying_a_goto, _commander_gone,
         Trigger.LEASE_LAPSED, {F.MOTION_FINISHING: True}),
    Case("lease lapsed, no hold, px4", S(hold_s=0.0, command_loss_action=LossAction.PX4),
         lambda b: b.engage(UP), _commander_gone, Trigger.LEASE_LAPSED,
         {F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: True, F.MOTION_FINISHING: False}),
    Case("lease lapsed, no estimate, land", S(command_loss_action=LossAction.LAND),
         _no_estimate_active, _commander_gone, Trigger.LEASE_LAPSED,
         {F.HOLD_POSSIBLE: False, F.PX4_LOSS_ACTION: False, F.MOTION_FINISHING: False}),
    Case("hold expired, px4", S(hold_s=1.0, command_loss_action=LossAction.PX4), walk._holding,
         _hold_over, Trigger.HOLD_EXPIRED, {F.PX4_LOSS_ACTION: True}),
    Case("hold expired, hold", S(hold_s=1.0), walk._holding, _hold_over, Trigger.HOLD_EXPIRED,
         {F.PX4_LOSS_ACTION: False}),
    Case("OFFBOARD never confirmed", S(), walk._engaging, _silent,
         Trigger.OFFBOARD_RETRIES_EXHAUSTED, {F.OFFBOARD_REFUSED: False,
                                              F.OFFBOARD_UNSEEN: False}),
    Case("OFFBOARD never confirmed nor reported, armed", S(mode_retries=0),
         _engaging_switched_unseen, _unanswered, Trigger.OFFBOARD_RETRIES_EXHAUSTED,
         {F.OFFBOARD_REFUSED: False, F.OFFBOARD_UNSEEN: True}),
    Case("OFFBOARD refused to the end", S(mode_retries=0), walk._engaging, _refuse_mode,
         Trigger.OFFBOARD_RETRIES_EXHAUSTED, {F.OFFBOARD_REFUSED: True}),
    Case("arming never confirmed", S(), walk._arming, _silent, Trigger.ARM_RETRIES_EXHAUSTED,
         {F.ARM_REFUSED: False}),
    Case("arming refused to the end", S(mode_retries=0), walk._arming, _refuse_arm,
         Trigger.ARM_RETRIES_EXHAUSTED, {F.ARM_REFUSED: True}),
    Case("hand-over refused, fallback left", S(mode_retries=0), walk._releasing, _refuse_mode,
         Trigger.HANDOVER_REFUSED),
    Case("hand-over refused to the end", S(mode_retries=0), walk._releasing, _refuse_mode_twice,
         Trigger.HANDOVER_EXHAUSTED, {F.STREAMING: True}),
    Case("plain mode request refused", S(mode_retries=0), _plain_hold_request, _refuse_mode,
         Trigger.HANDOVER_EXHAUSTED, {F.STREAMING: False}),
    Case("FC lost during a plain mode request", S(), _plain_hold_request,
         lambda b: b.feed(FcLinkDown()), Trigger.FC_LOST, {F.STREAMING: False}),
    Case("FC rebooted during a plain mode request", S(), _plain_hold_request, walk._rebooted,
         Trigger.FC_REBOOTED, {F.STREAMING: False}),
    Case("another mode during a plain mode request", S(), _plain_hold_request,
         lambda b: b.set_mode(Px4Mode.ALTCTL), Trigger.FC_MODE_TAKEN, {F.STREAMING: False}),
    Case("motors cut during a plain mode request", S(), _plain_hold_request, walk._motors_cut,
         Trigger.FC_MOTORS_CUT, {F.STREAMING: False}),
    Case("breach while active", FENCED, _fenced_active, _pushed_out, Trigger.FENCE_BREACH),
    Case("breach while holding", FENCED, _fenced_holding, _pushed_out, Trigger.FENCE_BREACH),
    Case("OFFBOARD reported", S(), walk._engaging, lambda b: b.set_mode(OFFBOARD),
         Trigger.FC_OFFBOARD, {F.ARM_WANTED: False}),
    Case("OFFBOARD reported, arm", S(), _engaging_arm, lambda b: b.set_mode(OFFBOARD),
         Trigger.FC_OFFBOARD, {F.ARM_WANTED: True}),
    Case("armed", S(), walk._arming, _armed, Trigger.FC_ARMED),
    Case("disarmed on command", S(), walk._active, _disarm_on_command,
         Trigger.FC_DISARMED_ON_COMMAND),
    Case("commanded mode taken", S(), walk._releasing,
         lambda b: b.set_mode(Px4Mode.AUTO_LOITER), Trigger.FC_MODE_HANDED_OVER,
         {F.FAILSAFE_HANDOVER: False, F.TAKEN_HANDOVER: False}),
    *[Case(f"{asked.value} while {pending.value} is pending", S(),
           _pending(pending), _ask(asked), asked,
           {F.SAME_ASK_PENDING: asked is pending, F.TAKEN_HANDOVER: False})
      for pending, asked in itertools.product(COMMANDS, COMMANDS)],
    # asked while the vehicle was taken: superseded only quoting the token; it stays taken
    Case("commanded mode taken, asked from preempted", S(), _taken_hold_request,
         lambda b: b.set_mode(Px4Mode.AUTO_LOITER), Trigger.FC_MODE_HANDED_OVER,
         {F.FAILSAFE_HANDOVER: False, F.TAKEN_HANDOVER: True}, back=Phase.PREEMPTED),
    *[Case(f"land while preempted's hold is pending (token: {quote})", S(),
           _taken_hold_request, _quoting(Land, quote), Trigger.LAND,
           {F.SAME_ASK_PENDING: False, F.TAKEN_HANDOVER: True, F.RESUME_QUOTED: quote})
      for quote in (False, True)],
    *[Case(f"{asked.value} during the loss action's hand-over (token: {quote})",
           S(hold_s=1.0), _holding_loss_releasing, _quoting(COMMANDS[asked], quote), asked,
           {F.SAME_ASK_PENDING: False, F.TAKEN_HANDOVER: True, F.RESUME_QUOTED: quote})
      for asked in COMMANDS for quote in (False, True)],
    Case("a land superseding the loss action's hand-over taken", S(hold_s=1.0),
         _loss_handover_superseded, lambda b: b.set_mode(Px4Mode.AUTO_LAND),
         Trigger.FC_MODE_HANDED_OVER, {F.FAILSAFE_HANDOVER: False, F.TAKEN_HANDOVER: True},
         back=Phase.FAILSAFE),
    *[Case(f"{asked.value} in {phase.value}, FC already there", S(),
           _in_phase_fc_in(phase, asked), _ask(asked), asked, {F.FC_IN_ASKED_MODE: True})
      for phase in (Phase.IDLE, Phase.FAILSAFE, Phase.PREEMPTED) for asked in COMMANDS],
    *[Case(f"{trigger.value} (engage: {asked}, token: {quote}) in {phase.value}", S(),
           walk.RECIPES[phase], _motion(trigger, engage=asked, quote=quote), trigger,
           {F.ENGAGE_ASKED: asked, F.RESUME_QUOTED: quote})
      for phase in (Phase.IDLE, Phase.FAILSAFE, Phase.PREEMPTED)
      for trigger in (Trigger.GOTO, Trigger.PATH) for asked in (False, True)
      for quote in ((False,) if phase is Phase.IDLE else (False, True))],
    *[Case(f"arm (token: True) in {phase.value}", S(), walk.RECIPES[phase],
           lambda b: b.feed(Arm("c", resume=b.engine.resume_token)), Trigger.ARM,
           {F.RESUME_QUOTED: True})
      for phase in (Phase.FAILSAFE, Phase.PREEMPTED)],
    *[Case(f"FC silent in {phase.value}", S(hold_s=5.0), walk.RECIPES[phase], _fc_silent,
           Trigger.FC_SILENT)
      for phase in (Phase.ENGAGING, Phase.ARMING, Phase.ACTIVE, Phase.HOLDING, Phase.RELEASING)],
    Case("loss action's mode taken", S(hold_s=1.0), _holding_loss_releasing,
         lambda b: b.set_mode(Px4Mode.AUTO_LOITER), Trigger.FC_MODE_HANDED_OVER,
         {F.FAILSAFE_HANDOVER: True}),
]  # fmt: skip


def run_case(case: Case) -> None:
    b = Bench(case.settings)
    case.setup(b)
    before = b.phase()
    b.log.clear()
    case.fire(b)
    rule = MACHINE.rule(before, case.trigger, case.facts.__getitem__)
    assert rule in MACHINE.listed(before, case.trigger), "a case must exercise a row"
    walk.expect(b, rule, before, case.back)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_timers_envelope_and_fc_confirmations_do_what_the_table_says(case: Case) -> None:
    run_case(case)


# (phase, trigger) rows the engine cannot reach, and why: listed, not silently skipped.
UNREACHABLE: dict[tuple[Phase, Trigger], str] = {
    (Phase.ARMING, Trigger.FC_DISARMED): "ARMING is entered disarmed and left once armed",
    (Phase.ARMING, Trigger.FC_DISARMED_ON_COMMAND): "the same; and disarm is refused there",
    (Phase.HOLDING, Trigger.FC_DISARMED_ON_COMMAND): "needs a disarm sent in ACTIVE that the "
    "FC shows only after the lease lapsed; the ACTIVE row is walked",
}


@contextmanager
def recording(machine: Machine) -> Iterator[set[tuple[Phase, int]]]:
    seen: set[tuple[Phase, int]] = set()
    lookup = machine.rule

    def rule(phase: Phase, trigger: Trigger, fact: Callable[[Fact], bool]) -> Rule:
        found = lookup(phase, trigger, fact)
        seen.add((phase, id(found)))
        return found

    machine.rule = rule  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del machine.rule


def test_the_walk_looks_up_every_row_in_every_phase() -> None:
    with recording(MACHINE) as seen:
        for phase, trigger in itertools.product(Phase, walk.COMMANDS):
            walk.test_every_command_in_every_phase_does_what_the_table_says(phase, trigger)
        for phase, inject in itertools.product(Phase, walk.FC_EVENTS):
            walk.test_fc_events_in_every_phase_do_what_the_table_says(phase, inject)
        for case in CASES:
            run_case(case)
        for phase, trigger in walk.QUOTED:
            walk.test_what_quotes_the_token_takes_control(phase, trigger)
    missing = sorted(
        (phase.value, str(rule.trigger), str(rule.to), ", ".join(map(str, rule.when)))
        for rule in MACHINE.rules
        for phase in rule.phases
        if (phase, id(rule)) not in seen and (phase, rule.trigger) not in UNREACHABLE
    )
    assert missing == []
