"""Operator commands: the table says which phase accepts which command (machine_table);
this module is what an accepted command does, and the operator arm/disarm part.

A command the phase does not accept gets a coded refusal naming phase and command, and
does not renew the lease: only accepted commands do. Replies that depend on the FC
(engage, arm, a mode) are sent later, when the outcome is known. Pure.

Owns: the command handlers, ArmRequests (an operator arm/disarm waiting for HEARTBEAT),
ALLOWED (derived from the table, for readers of the old name). Must not: choose a phase;
every move is the table's (OffboardEngine.move).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from offboardd.core.actions import ArmDisarm, NoticeKind
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
from offboardd.core.engage_gate import engage_blocked
from offboardd.core.engine_failsafe import fail_pending, start_handover
from offboardd.core.engine_handover import MAX_JOINED
from offboardd.core.engine_motion import on_motion
from offboardd.core.events import LandedState
from offboardd.core.machine import Do, Outcome, Rule, Trigger
from offboardd.core.machine_table import LEASED, MACHINE, TAKEN
from offboardd.core.modes import mode_name
from offboardd.core.motion_commands import MOTION_TYPES
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import Setpoint
from offboardd.core.settings import ESCALATION

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine

ALLOWED: dict[CommandKind, frozenset[Phase]] = {k: MACHINE.allowed(k) for k in CommandKind}
_TRIGGERS = {k: Trigger.of_command(k) for k in CommandKind}
# In FAILSAFE / PREEMPTED these quote the token themselves (machine_table: an arm or a mode
# request written before the takeover must not act on the vehicle); the rest re-engage.
_QUOTE_THEMSELVES = frozenset({CommandKind.ARM, CommandKind.HOLD, CommandKind.LAND,
                               CommandKind.RTL})

# The mode chain each hand-over command asks for (None: the configured release_mode).
_MODE_CHAINS: dict[CommandKind, str | None] = {
    CommandKind.RELEASE: None,
    CommandKind.HOLD: "hold",
    CommandKind.LAND: "land",
    CommandKind.RTL: "rtl",
}


@dataclass
class PendingArm:
    """An operator arm/disarm waiting for HEARTBEAT to show the new state."""

    command_id: str
    arm: bool
    deadline_s: float


class ArmRequests:
    """At most one operator arm/disarm in flight; a newer one supersedes it."""

    def __init__(self) -> None:
        self.pending: PendingArm | None = None

    def wait(self, pending: PendingArm) -> None:
        self.pending = pending

    def take(self) -> PendingArm | None:
        pending, self.pending = self.pending, None
        return pending

    @property
    def disarm_expected(self) -> bool:
        return self.pending is not None and not self.pending.arm

    def expired(self, now: float) -> PendingArm | None:
        """The pending request, taken, if HEARTBEAT did not show it in time."""
        if self.pending is not None and now >= self.pending.deadline_s:
            return self.take()
        return None

    def deadline(self) -> float:
        return math.inf if self.pending is None else self.pending.deadline_s


def on_command(eng: OffboardEngine, cmd: Command, now: float) -> None:
    eng.command_in_hand = cmd  # for the facts its rule may depend on (Fact.ENGAGE_ASKED)
    rule = eng.rule(_TRIGGERS[cmd.kind], now)
    eng.command_in_hand = None
    if rule.to is Outcome.REFUSE:
        if rule.reasons == (Reason.NOT_IN_CONTROL,):
            ended = "never engaged" if eng.reason is None else eng.reason.value
            token = eng.resume_token
            eng.out.refuse(cmd.command_id, Reason.NOT_IN_CONTROL,
                           f"{cmd.kind.value} refused: not in control (phase "
                           f"{eng.phase.value}: {ended}); {_how_to_take_control(eng, cmd)}",
                           resume=token)
            return
        eng.out.refuse(
            cmd.command_id,
            Reason.PHASE_NOT_ALLOWED,
            f"{cmd.kind.value} is not allowed in phase {eng.phase.value}",
        )
        return
    taking_over = (isinstance(cmd, _TIED) and eng.phase in LEASED
                   and not eng.lease.holds(eng.commander))
    if taking_over and not (isinstance(cmd, _FLOWN) and eng.quotes_token(cmd)):
        token = eng.resume_token
        eng.out.refuse(cmd.command_id, Reason.NOT_IN_CONTROL,
                       f"{cmd.kind.value} refused: the lease is another commander's (phase "
                       f"{eng.phase.value}); a commander is its reply route, so if it is you, "
                       "send this with the engage's MQTT 5 response topic; to take over, "
                       f'send a setpoint or motion with "resume": "{token}"', resume=token)
        return
    accepted: bool
    if isinstance(cmd, Engage):
        accepted = _engage(eng, rule, cmd, now)
    elif isinstance(cmd, SetSetpoint):
        accepted = _setpoint(eng, rule, cmd, now)
    elif isinstance(cmd, Release | Hold | Land | Rtl):
        accepted = _handover_command(eng, rule, cmd, now)
    elif isinstance(cmd, Arm | Disarm):
        accepted = _arm_disarm(eng, rule, cmd, now)
    elif isinstance(cmd, EmergencyStop):
        accepted = _emergency_stop(eng, rule, cmd, now)
    elif isinstance(cmd, MOTION_TYPES):
        accepted = on_motion(eng, rule, cmd, now)
    else:
        assert isinstance(cmd, CommanderHeartbeat)
        accepted = _heartbeat(eng, cmd)
    if accepted and taking_over:  # it quoted the token, and what it sent is flown
        eng.lease.pass_to(eng.commander)  # (a refused one takes nothing: review)
        eng.new_epoch()
        eng.out.reply_fail(eng.engage.take_id(), Reason.NOT_IN_CONTROL,
                           "another commander took control with the token")
    if accepted:
        eng.lease.renew(now, eng.commander)  # its holder's only


def _how_to_take_control(eng: OffboardEngine, cmd: Command) -> str:
    """What a `not_in_control` refusal tells its sender to do instead."""
    token, phase = eng.resume_token, eng.phase
    releasing = phase is Phase.RELEASING
    if token is not None and cmd.kind in _QUOTE_THEMSELVES and (phase in TAKEN or releasing):
        return f'{cmd.kind.value} with "resume": "{token}"'
    if releasing:
        return "engage once the hand-over has ended"
    if token is None:
        return "engage to fly"
    if phase in TAKEN:
        return f'engage with "resume": "{token}"'
    return f'to resume, send a setpoint or motion with "resume": "{token}"'


# What flies the vehicle, and with a heartbeat what keeps a lease: in a leased phase only
# the lease's holder sends them. Anyone else takes over by quoting the engine's token,
# which changes whenever control changes hands: a message written before (a dead
# commander's late backlog) can never quote it (found by review, twice).
_FLOWN = (SetSetpoint, *MOTION_TYPES)
_TIED = (*_FLOWN, CommanderHeartbeat, Arm)  # an arm in ACTIVE starts the holder's flight


def _heartbeat(eng: OffboardEngine, cmd: CommanderHeartbeat) -> bool:
    eng.out.reply_ok(cmd.command_id, "lease renewed")  # the holder's (on_command)
    return True


def _engage(eng: OffboardEngine, rule: Rule, cmd: Engage, now: float) -> bool:
    v, out = eng.vehicle, eng.out
    if not eng.fc_up or v.target is None:
        return out.refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
    if engage_blocked(eng, cmd.command_id):
        return False
    setpoint: Setpoint | None = cmd.setpoint
    if setpoint is None:
        setpoint = v.hold_setpoint(now)
        if setpoint is None:
            return out.refuse(
                cmd.command_id,
                Reason.ESTIMATE_MISSING,
                "engage without a setpoint holds the current position, "
                "which needs a valid local position estimate",
            )
    admitted = _admit(eng, cmd.command_id, setpoint, now, check_estimate=cmd.setpoint is not None)
    if admitted is None:
        return False
    setpoint, note = admitted
    eng.guard.rearm_breach()
    eng.engage.begin(cmd.command_id, cmd.arm, note, v.custom_mode, now)
    eng.last_ack = None
    eng.lease.grant(now, eng.commander)
    warmup_s = eng.settings.warmup_s
    eng.move(rule, f"streaming {setpoint.kind.value} for {warmup_s:g} s before OFFBOARD")
    eng.feed.start(setpoint, v.target, now)
    return True


def _admit(
    eng: OffboardEngine, command_id: str, setpoint: Setpoint, now: float, *,
    check_estimate: bool = True,
) -> tuple[Setpoint, str] | None:
    """The setpoint as the envelope admits it (and a note on what it changed), or None
    after a coded refusal: no estimate it needs, or outside the envelope."""
    if check_estimate and not eng.vehicle.estimate_valid(setpoint.estimate, now):
        eng.out.refuse(command_id, Reason.ESTIMATE_MISSING,
                       f"{setpoint.kind.value} needs a valid {setpoint.estimate.value} estimate")
        return None
    return eng.guard.admit(command_id, setpoint)


def _setpoint(eng: OffboardEngine, rule: Rule, cmd: SetSetpoint, now: float) -> bool:
    admitted = _admit(eng, cmd.command_id, cmd.setpoint, now)
    if admitted is None:
        return False
    sp, note = admitted
    eng.feed.send_now(sp, eng.vehicle.target, now)
    if Do.GRANT_LEASE in rule.does:  # resuming from HOLDING
        eng.lease.grant(now, eng.commander)
    eng.move(rule, "a new setpoint resumed offboard control")
    eng.out.reply_ok(cmd.command_id, "setpoint accepted" + note)
    return True


def _handover_command(
    eng: OffboardEngine, rule: Rule, cmd: Release | Hold | Land | Rtl, now: float
) -> bool:
    if eng.vehicle.target is None:
        return eng.out.refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
    if Do.JOIN_HANDOVER in rule.does:
        if not eng.handover.join(cmd.command_id):
            pending = eng.handover.current
            assert pending is not None
            eng.out.reply_fail(cmd.command_id, Reason.REPEAT_NOT_KEPT,
                               f"already asking for {pending.target_mode.label}; "
                               f"{MAX_JOINED} repeats wait for its outcome: this one is not kept")
        return True
    if rule.to is Outcome.STAY:  # the FC already reports the mode asked for
        eng.out.reply_ok(cmd.command_id, f"FC already in {mode_name(eng.vehicle.custom_mode)}")
        return True
    chain = ESCALATION[_MODE_CHAINS[cmd.kind] or eng.settings.release_mode.value]
    cancelled = eng.engage.take_id()
    eng.out.reply_fail(cancelled, Reason.CANCELLED, f"cancelled by {cmd.kind.value}")
    if Do.STOP_STREAM in rule.does:
        # OFFBOARD was never requested (WARMUP): nothing to hand back, just stop.
        eng.stop_stream()
        if rule.to is Outcome.BACK:
            eng.move(rule, "released during the warm-up")
            eng.out.reply_ok(cmd.command_id, "released", rule.reason_for(None),
                             resume=eng.reply_token())
            return True
    start_handover(eng, rule, chain, cmd.command_id, now, failsafe=False)
    return True


# PX4's landed states (EXTENDED_SYS_STATE) in which the motors hold the vehicle up. While
# it is undefined (not heard yet) PX4's own in-flight check is the only one.
_AIRBORNE = frozenset({LandedState.TAKEOFF, LandedState.IN_AIR, LandedState.LANDING})


def _arm_disarm(eng: OffboardEngine, rule: Rule, cmd: Arm | Disarm, now: float) -> bool:
    v, out = eng.vehicle, eng.out
    if v.target is None or not eng.fc_up:
        return out.refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
    arm = isinstance(cmd, Arm)
    if v.armed == arm:
        out.reply_ok(cmd.command_id, "already " + ("armed" if arm else "disarmed"))
        return True
    force = isinstance(cmd, Disarm) and cmd.force
    if not arm and not force and v.landed_state in _AIRBORNE:
        return out.refuse(cmd.command_id, Reason.DISARM_IN_FLIGHT,
                          f"PX4 reports the vehicle {v.landed_state.name.lower()}: a disarm "
                          "in flight stops the motors and the vehicle falls; land first, "
                          "or send force=true")
    superseded = eng.arms.take()
    if superseded is not None:
        out.reply_fail(superseded.command_id, Reason.SUPERSEDED, "superseded by a newer command")
    out.emit(ArmDisarm(v.target, arm=arm, force=force))
    if Do.SPEND_TOKEN in rule.does:
        eng.new_epoch()  # the reply names the new one (engine_fc)
    eng.arms.wait(PendingArm(cmd.command_id, arm, now + eng.settings.arm_confirm_timeout_s))
    return True


def _emergency_stop(eng: OffboardEngine, rule: Rule, cmd: EmergencyStop, now: float) -> bool:
    v, out = eng.vehicle, eng.out
    if not cmd.confirm:
        return out.refuse(
            cmd.command_id,
            Reason.CONFIRMATION_MISSING,
            "emergency_stop disarms in flight: it needs confirm=true",
        )
    if v.target is None:
        return out.refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
    message = "emergency stop: stopped streaming, force-disarming"
    fail_pending(eng, Reason.EMERGENCY_STOP, message)
    eng.stop_stream()
    out.emit(ArmDisarm(v.target, arm=False, force=True))
    eng.arms.wait(PendingArm(cmd.command_id, False, now + eng.settings.arm_confirm_timeout_s))
    eng.move(rule, message)  # FAILSAFE if it was ours in flight, else the phase stays
    out.notice(NoticeKind.FAILSAFE, message, Reason.EMERGENCY_STOP)
    if not v.armed:
        eng.arms.take()
        out.reply_ok(cmd.command_id, "disarmed (was not armed)")
    return True
