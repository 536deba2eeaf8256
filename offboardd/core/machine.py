"""The offboard phase machine as data: the vocabulary of its table and the lookup (h11 style).

A `Rule` says: in these phases, on this trigger (and, where the outcome depends on the
engine's state or settings, when these facts hold), go to this phase with this reason,
doing these things. The rows are in machine_table.py, where a reviewer reads them next to
px4-offboard.md; offboard.py asks `Machine.rule` where to go and never names a phase
itself. A pair with no row falls to a default that is itself a rule: a command is
refused (`phase_not_allowed`), anything else is ignored.

Owns: Trigger, Fact, Cond, Do, Outcome, Rule, Machine (lookup and the import-time checks
that every (phase, trigger) pair resolves to exactly one rule for every value of the
facts it depends on). Must not: hold engine state, read the clock, or carry out an
effect; `Do` names effects for the reader and the tests, the engine performs them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import NamedTuple

from offboardd.core.commands import CommandKind
from offboardd.core.reasons import Phase, Reason


class Source(StrEnum):
    COMMAND = "command"  # an operator command (core/commands.py)
    FC = "fc"  # what the flight controller reported (or stopped reporting)
    TIMER = "timer"  # a deadline the engine set passed
    ENVELOPE = "envelope"  # the safety envelope found the vehicle outside the fence


class Trigger(StrEnum):
    # operator commands: the values are CommandKind's
    ENGAGE = "engage"
    SETPOINT = "setpoint"
    RELEASE = "release"
    HOLD = "hold"
    LAND = "land"
    RTL = "rtl"
    ARM = "arm"
    DISARM = "disarm"
    EMERGENCY_STOP = "emergency_stop"
    HEARTBEAT = "heartbeat"
    GOTO = "goto"  # the motions the daemon plans itself (motion_commands.py)
    PATH = "path"
    ORBIT = "orbit"
    STOP = "stop"
    # the FC (HEARTBEAT / CURRENT_MODE / COMMAND_ACK, the link, its boot time)
    FC_OFFBOARD = "fc_offboard"  # the FC reports OFFBOARD
    FC_MODE_TAKEN = "fc_mode_taken"  # the FC reports a mode nobody asked it for
    FC_MODE_HANDED_OVER = "fc_mode_handed_over"  # the FC reports the mode a hand-over asked for
    FC_ARMED = "fc_armed"
    FC_DISARMED = "fc_disarmed"  # disarmed, not asked by the operator
    FC_DISARMED_ON_COMMAND = "fc_disarmed_on_command"
    # HEARTBEAT system_status turned FLIGHT_TERMINATION, or the TERMINATION mode came
    FC_MOTORS_CUT = "fc_motors_cut"
    FC_MODE_REFUSED = "fc_mode_refused"  # an ACK refusing DO_SET_MODE
    FC_ARM_REFUSED = "fc_arm_refused"  # an ACK refusing ARM_DISARM
    FC_LOST = "fc_lost"  # no HEARTBEAT for fc_timeout_s, or the transport closed
    FC_REBOOTED = "fc_rebooted"  # time_boot_ms went back
    FC_SILENT = "fc_silent"  # nothing from the FC for most of COM_OF_LOSS_T, while streaming
    # timers
    WARMUP_DONE = "warmup_done"  # warmup_s of steady streaming
    WARMUP_STALLED = "warmup_stalled"  # the warm-up ended with a gap > COM_OF_LOSS_T / 2
    WARMUP_ESTIMATE_LOST = "warmup_estimate_lost"  # the setpoint's estimate went invalid
    WARMUP_BLOCKED = "warmup_blocked"  # the engage gate would refuse now (a GCS set a param)
    WARMUP_UNHEARD = "warmup_unheard"  # the FC unheard at WARMUP_UNHEARD_ENDS ends in a row
    LEASE_LAPSED = "lease_lapsed"  # no accepted command for command_timeout_s
    HOLD_EXPIRED = "hold_expired"  # hold_s over
    OFFBOARD_RETRIES_EXHAUSTED = "offboard_retries_exhausted"
    ARM_RETRIES_EXHAUSTED = "arm_retries_exhausted"
    HANDOVER_REFUSED = "handover_refused"  # this mode's retries are spent; a fallback is left
    HANDOVER_EXHAUSTED = "handover_exhausted"  # ... and no fallback is left
    # the envelope
    FENCE_BREACH = "fence_breach"

    @property
    def source(self) -> Source:
        return _SOURCES[self]

    @staticmethod
    def of_command(kind: CommandKind) -> Trigger:
        return Trigger(kind.value)


_SOURCES: dict[Trigger, Source] = {
    t: (
        Source.COMMAND if t.value in CommandKind.__members__.values()
        else Source.ENVELOPE if t is Trigger.FENCE_BREACH
        else Source.FC if t.value.startswith("fc_")
        else Source.TIMER
    )
    for t in Trigger
}


class Fact(StrEnum):
    """What, besides phase and trigger, decides a move; the engine evaluates each."""

    STREAMING = "streaming"  # our setpoints are going out (a hand-over may be a plain request)
    HOLD_POSSIBLE = "hold possible"  # hold_s > 0 and a valid local position to hold at
    PX4_LOSS_ACTION = "loss action px4"  # command_loss_action = px4: stop, let PX4 act
    FC_IN_OFFBOARD = "FC in OFFBOARD"  # PX4 may enter it by itself once setpoints flow (§3)
    # The FC reports OFFBOARD and armed: PX4 flies our stream. In WARMUP that is PX4 back in
    # the OFFBOARD it still intended after a failsafe, 20-40 ms after our first setpoint
    # (§3). Disarmed, OFFBOARD is no flight (PX4 reports it on the ground after a landing).
    FC_FLIES_STREAM = "FC flies our stream"
    FC_ARMED = "FC armed"  # as last reported (a silent FC's OFFBOARD since is not seen)
    ARM_WANTED = "arm wanted"  # the engage asked to arm and the FC reports disarmed
    # The last OFFBOARD attempt was refused by an ACK (TEMPORARILY_REJECTED, DENIED...): PX4
    # did not switch (it ACKs an OFFBOARD it is in already ACCEPTED), and in ENGAGING the FC
    # still reports the mode it had (OFFBOARD or any other would have moved the engine on).
    OFFBOARD_REFUSED = "OFFBOARD refused"
    # Armed, OFFBOARD asked for and not refused, and no mode report since the request: PX4
    # may fly our stream in an OFFBOARD no report showed (EngageSequence.offboard_unseen).
    OFFBOARD_UNSEEN = "OFFBOARD may be unseen"
    # The last arming attempt was refused by an ACK: PX4 did not arm (it accepts only when
    # it arms, Commander::handle_command).
    ARM_REFUSED = "arming refused"
    FAILSAFE_HANDOVER = "failsafe hand-over"  # asked by the loss action or a fence breach
    # The hand-over was asked while the vehicle was taken (Handover.taken): a failsafe's,
    # one after the lease lapsed (holding), a plain request from failsafe/preempted, the end
    # of an engage made from there, or one superseding any of these. Superseding it needs
    # the token; its success goes back to a taken phase.
    TAKEN_HANDOVER = "hand-over of a taken vehicle"
    SAME_ASK_PENDING = "same mode pending"  # a command's hand-over to this mode is under way
    FC_IN_ASKED_MODE = "FC in that mode"  # the FC already reports the mode a command asks for
    ENGAGE_ASKED = "engage asked"  # a goto / path with engage: true
    MOTION_FINISHING = "motion may finish"  # on_lease_lapse = finish, a motion under way
    RESUME_QUOTED = "resume token quoted"  # the command quotes the engine's token (a live sender)


class Cond(NamedTuple):
    fact: Fact
    holds: bool

    def __str__(self) -> str:
        return self.fact.value if self.holds else f"not {self.fact.value}"


def yes(fact: Fact) -> Cond:
    return Cond(fact, True)


def no(fact: Fact) -> Cond:
    return Cond(fact, False)


class Do(StrEnum):
    """The effects a rule implies, in the order the engine performs them."""

    GRANT_LEASE = "grant the lease"
    RENEW_LEASE = "renew the lease, if held and the sender holds it (else refused)"
    START_STREAM = "stream the setpoint now and every period"
    SEND_NOW = "send the new setpoint at once, schedule unchanged"
    PLAN_MOTION = "plan the motion from where the running one (or the vehicle) is; stream it"
    LET_MOTION_FINISH = "keep the lease until the motion ends (at most max_unleased_s)"
    RESTART_WARMUP = "restart the warm-up"
    REQUEST_OFFBOARD = "ask for OFFBOARD (bounded retries)"
    REQUEST_ARM = "ask to arm (bounded retries)"
    RETRY_LATER = "ask again after the back-off"
    HOLD_HERE = "stream a hold where the vehicle is"
    HAND_OVER = ("ask the FC for another mode, streaming until it reports it a hold here"
                 " (with an estimate), else level flight (attitude, body rates) or zero"
                 " velocity (velocity, acceleration, a motion)")
    JOIN_HANDOVER = "answer with the pending request; nothing new to the FC"
    ESCALATE = "ask for the next mode of the chain"
    STOP_STREAM = "stop streaming, end the lease"
    ARM_DISARM = "send arm / disarm"
    SPEND_TOKEN = "a new token: the quoted one is spent, a repeat of it cannot act again"
    FORCE_DISARM = "force-disarm"
    FORGET_FC = "forget estimates and home"
    NOTICE = "failsafe notice"
    TELL_OFFBOARD_BY_PX4 = "warning event offboard_by_px4 (once per engage)"
    REPLY_OK = "answer ok"
    REPLY_FAIL = "fail the waiting command(s)"


class Outcome(Enum):
    STAY = "stay"  # accepted; the phase does not change and no transition is reported
    IGNORE = "ignore"  # nothing happens in this phase (`why` says why)
    REFUSE = "refuse"  # a command refused with phase_not_allowed, naming phase and command
    # A move: back to the phase the engage (or plain mode request) was made from: idle, or
    # the failsafe / preempted, with a new token. One that fails leaves the vehicle where it
    # was: taken by a pilot, a GCS or a failsafe, if it was; a plain request made from there
    # that succeeds, too (a failsafe's hand-over that a request quoting the token
    # superseded goes back to failsafe). Reported as a TRANSITION.
    BACK = "back"


@dataclass(frozen=True)
class Rule:
    phases: frozenset[Phase]
    trigger: Trigger | Source  # a Source: the default for that source's unlisted triggers
    to: Phase | Outcome
    reasons: tuple[Reason | None, ...] = (None,)  # several: the engine names the one it is
    does: tuple[Do, ...] = ()
    when: tuple[Cond, ...] = ()
    why: str = ""

    @property
    def moves(self) -> bool:
        """A phase change (possibly to the same phase), reported as a TRANSITION."""
        return isinstance(self.to, Phase) or self.to is Outcome.BACK

    def applies(self, fact: Callable[[Fact], bool]) -> bool:
        return all(fact(c.fact) is c.holds for c in self.when)

    def reason_for(self, named: Reason | None) -> Reason | None:
        """The reason a move by this rule records: the row's own, or the one the engine
        names among the row's."""
        if named is None and len(self.reasons) == 1:
            return self.reasons[0]
        if named is not None and named in self.reasons:
            return named
        raise MisuseError(f"{self.trigger.value}: reason {named} is not one of {self.reasons}")


class TableError(Exception):
    """The table itself is wrong (a gap or an overlap): raised at import."""


class MisuseError(Exception):
    """The engine asked for a move the table does not have (a bug in the engine, h11's
    LocalProtocolError): never the FC's or the commander's fault."""


class Machine:
    def __init__(self, rules: Iterable[Rule], defaults: dict[Source, Rule]) -> None:
        self.rules = tuple(rules)
        self.defaults = defaults
        self._index: dict[tuple[Phase, Trigger], list[Rule]] = {}
        for r in self.rules:
            if not isinstance(r.trigger, Trigger):
                raise TableError(f"a row needs one trigger, got {r.trigger}")
            for phase in r.phases:
                self._index.setdefault((phase, r.trigger), []).append(r)
        for (phase, trigger), rules_here in self._index.items():
            self._check_exclusive(phase, trigger, rules_here)

    @staticmethod
    def _check_exclusive(phase: Phase, trigger: Trigger, rules: list[Rule]) -> None:
        """Every value of the facts the rows mention picks exactly one row."""
        facts = sorted({c.fact for r in rules for c in r.when})
        for values in itertools.product((False, True), repeat=len(facts)):
            given = dict(zip(facts, values, strict=True))
            hits = [r for r in rules if r.applies(given.__getitem__)]
            if len(hits) != 1:
                raise TableError(f"{phase.value} + {trigger.value} with {given}: {len(hits)} rows")

    def rule(self, phase: Phase, trigger: Trigger, fact: Callable[[Fact], bool]) -> Rule:
        """The one rule for (phase, trigger); `fact` is asked only for the facts it needs."""
        rules = self._index.get((phase, trigger))
        if rules is None:
            return self.defaults[trigger.source]
        for r in rules:
            if r.applies(fact):
                return r
        raise TableError(f"no row for {phase.value} + {trigger.value}")  # _check_exclusive

    def listed(self, phase: Phase, trigger: Trigger) -> tuple[Rule, ...]:
        return tuple(self._index.get((phase, trigger), ()))

    def allowed(self, kind: CommandKind) -> frozenset[Phase]:
        """The phases that accept a command (ALLOWED in engine_commands, now derived)."""
        trigger = Trigger.of_command(kind)
        return frozenset(p for p in Phase if any(
            r.to is not Outcome.REFUSE for r in self._index.get((p, trigger), ())))
