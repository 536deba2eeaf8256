"""OffboardEngine: the offboard state machine, pure (h11 / aioquic style).

`handle(event, now)` and `poll(now)` return the actions to take; `next_deadline()` says
when to call `poll` next (the shell's one timer); `snapshot(now)` is the published state.
No asyncio, no sockets, no logging, no clock reads: time is always the `now` passed in
(and the token that takes control comes from `new_token`, which tests may replace).

The engine is a table plus small parts. Where a trigger leads is only ever looked up in
machine_table.MACHINE (`rule` / `move` / `go` below): the engine never names the next
phase itself, and a move the table does not have raises MisuseError. The parts, each
owning its state: SetpointStream (engine_stream), Lease, EngageSequence (engine_engage),
Handovers (engine_handover), EnvelopeGuard (engine_fence), ArmRequests (engine_commands),
FcChecks (fc_link), VehicleState, Outbox. The handlers that turn commands, FC reports
and timers into triggers are engine_commands, engine_fc, engine_engage, engine_failsafe.

Owns: the phase and reason, the hold deadline, the FC's presence, the timers' order.
Must not: carry out a concern's details itself; the parts do.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Iterable

from offboardd.core.actions import (
    Action,
    ArmDisarm,
    Notice,
    NoticeKind,
    RequestMode,
    SendCompanionHeartbeat,
)
from offboardd.core.commands import COMMAND_TYPES
from offboardd.core.diagnosis import diagnose
from offboardd.core.engine_commands import ArmRequests, on_command
from offboardd.core.engine_engage import (
    EngageSequence,
    step_arm_request,
    step_offboard_request,
    warmup_over,
)
from offboardd.core.engine_failsafe import handover_progress, lease_lapsed, loss_action
from offboardd.core.engine_fc import fc_lost, fc_silence_limit_s, fc_silent, on_fc_event
from offboardd.core.engine_fence import EnvelopeGuard
from offboardd.core.engine_handover import Handovers
from offboardd.core.engine_motion import finishing_allowed
from offboardd.core.engine_outbox import Outbox
from offboardd.core.engine_stream import SetpointStream
from offboardd.core.envelope import Envelope
from offboardd.core.events import FC_MESSAGE_TYPES, Event, FcLinkDown, LandedState
from offboardd.core.fc_link import FcChecks
from offboardd.core.lease import Lease
from offboardd.core.machine import Do, Fact, MisuseError, Outcome, Rule, Trigger
from offboardd.core.machine_table import LEASED, MACHINE, NOT_ENGAGED, TAKEN
from offboardd.core.modes import Px4Mode, mode_name
from offboardd.core.px4_rules import format_version
from offboardd.core.reasons import STREAMING_PHASES, Phase, Reason
from offboardd.core.retry import Retrier
from offboardd.core.settings import ESCALATION, EngineSettings, LossAction
from offboardd.core.snapshot import EngineSnapshot
from offboardd.core.stream import StreamClock
from offboardd.core.stream_plan import StreamPlanner
from offboardd.core.vehicle import VehicleState

# HEARTBEAT from the companion: 1 Hz by MAVLink convention (§5).
COMPANION_HEARTBEAT_PERIOD_S = 1.0


def _random_token() -> str:
    """A control token: unguessable, so no message written before it was made holds it."""
    return secrets.token_urlsafe(9)


def _armed_in(trigger: Trigger) -> frozenset[Phase]:
    """The phases whose table rows handle a timer: there, and only there, it is armed."""
    return frozenset(p for p in Phase if MACHINE.listed(p, trigger))


# The mode a hand-over command asks for first (a repeat of a pending one is joined to it).
_FIRST_MODE = {Trigger.HOLD: ESCALATION["hold"][0], Trigger.LAND: ESCALATION["land"][0],
               Trigger.RTL: ESCALATION["rtl"][0]}
_LEASE_PHASES = _armed_in(Trigger.LEASE_LAPSED)
_WARMUP_PHASES = _armed_in(Trigger.WARMUP_DONE)
_OFFBOARD_RETRY_PHASES = _armed_in(Trigger.OFFBOARD_RETRIES_EXHAUSTED)
_ARM_RETRY_PHASES = _armed_in(Trigger.ARM_RETRIES_EXHAUSTED)
_HOLD_PHASES = _armed_in(Trigger.HOLD_EXPIRED)
_SILENCE_PHASES = _armed_in(Trigger.FC_SILENT)
# Where the stream may run: the streaming phases, and RELEASING until the FC takes the mode.
_STREAM_ALLOWED = STREAMING_PHASES | {Phase.RELEASING}
# Where a token takes control: a commander flies the vehicle (engine_commands), or it was
# taken from us and a new engage must be written after that (machine_table._LATE_ENGAGE);
# also RELEASING while it hands over a taken vehicle (Handover.taken).
_TOKEN_PHASES = STREAMING_PHASES | TAKEN
# Where a planned motion's clock runs: the vehicle is ours (before: it waits at its start).
_MOTION_PHASES = frozenset({Phase.ACTIVE, Phase.HOLDING})


class OffboardEngine:
    """`OffboardEngine(settings, now)`; see the module docstring for the contract."""

    def __init__(self, settings: EngineSettings, now: float, *,
                 new_token: Callable[[], str] = _random_token) -> None:
        self.settings = settings
        self._new_token = new_token
        self.out = Outbox()
        self.vehicle = VehicleState(settings.estimate_timeout_s)
        self.checks = FcChecks(
            settings.param_retry_s, settings.param_retries, settings.current_mode_interval_s,
            envelope=settings.envelope, stream_period_s=settings.stream_period_s,
        )
        self.guard = EnvelopeGuard(settings.envelope, self.out, now)
        self.feed = SetpointStream(settings.stream_period_s, self.guard, self.vehicle, self.out)
        self.lease = Lease(settings.command_timeout_s)
        self.engage = EngageSequence(settings)
        self.handover = Handovers(settings)
        self.arms = ArmRequests()
        self.streams = StreamPlanner(settings.stream_plan)  # issue 18: only what we need
        self.phase = Phase.IDLE  # changed by `move` only
        self.reason: Reason | None = None
        # The phase the last engage or plain mode request was made from (idle, failsafe,
        # preempted): one that fails goes back there (Outcome.BACK), so that a vehicle taken
        # from us stays taken, a message written before the takeover refused as before.
        self.left_from = Phase.IDLE
        self.px4_failsafe_named = False  # this takeover was said to be PX4's failsafe
        self.hold_end_s: float | None = None  # HOLDING's deadline; cleared on leaving it
        # The token that takes control (resumes from HOLDING, takes over from the lease's
        # holder), new whenever control changes hands (`new_epoch`): only a commander that
        # read it, a live one, quotes it; a stale backlog cannot (machine_table).
        self.resume_token: str | None = None
        self.fc_up = False
        self.fc_ever_seen = False
        self.fc_up_since_s = 0.0  # when this FC (re)appeared
        self.warned_no_estimator_status = False
        self.next_companion_hb_s = now
        self.last_ack: int | None = None  # the last refusing ACK, for diagnoses
        self.command_in_hand: object = None  # the command being handled (its facts)
        self.commander: str | None = None  # who sent the commands of this batch (the lease)

    # -- views the shell and the tests read ----------------------------------------------

    @property
    def stream(self) -> StreamClock:
        return self.feed.clock

    @property
    def envelope(self) -> Envelope:
        return self.guard.envelope

    @property
    def _mode_try(self) -> Retrier:  # read by tests/core/test_engage.py
        return self.engage.mode_try

    # -- public entry points -----------------------------------------------------------------

    def handle(self, event: Event, now: float, *, commander: str | None = None) -> list[Action]:
        """Feed one event; timers due up to `now` are processed first. `commander`: who
        sent it, if it is a command (the lease is theirs to renew, lease.py)."""
        return self.handle_all((event,), now, commander=commander)

    def handle_all(self, events: Iterable[Event], now: float, *,
                   commander: str | None = None) -> list[Action]:
        """Feed events that arrived together (one poll of the FC link): timers due up to
        `now` first, then each event in order, then the timers again, so what an event
        makes due (a new setpoint's send) happens now. One pass of the timers per batch,
        not per event: PX4's ~100 decoded messages/s would otherwise run them 200 times a
        second (bench/README.md)."""
        self._timers(now)
        self.commander = commander
        try:
            self._feed(events, now)
        finally:  # (a bug raising here must not leave the next timers a commander)
            self.commander = None
        self._timers(now)
        return self.out.take()

    def poll(self, now: float) -> list[Action]:
        """The timer entry: call at (or after) `next_deadline()`."""
        self._timers(now)
        return self.out.take()

    def step(self, events: Iterable[Event], now: float) -> list[Action]:
        """The polled link's cycle, at (or after) `next_deadline()`: the FC messages read
        just before it, then the timers once, the stream's tick among them, on the freshest
        FC state. (`handle_all` then `poll` ran the timers three times a tick; they were the
        engine's largest share of the daemon's CPU: bench/stream-plan.md.)"""
        self._feed(events, now)
        self._timers(now)
        return self.out.take()

    def _feed(self, events: Iterable[Event], now: float) -> None:
        for event in events:
            if isinstance(event, FC_MESSAGE_TYPES):
                on_fc_event(self, event, now)
            elif isinstance(event, COMMAND_TYPES):
                on_command(self, event, now)
            elif isinstance(event, FcLinkDown) and self.fc_up:
                detail = event.detail
                fc_lost(self, now, f"link down: {detail}" if detail else "link down")
            # FcLinkUp: nothing yet; the FC still has to prove itself with a heartbeat

    def _companion_heartbeat(self, system_id: int, now: float) -> None:
        """Our HEARTBEAT to `system_id` when one is due, once a period (woken very late,
        or after a long silence: the next one a period on, no burst)."""
        if now < self.next_companion_hb_s:
            return
        self.out.emit(SendCompanionHeartbeat(system_id, self.settings.companion_component_id))
        self.next_companion_hb_s += COMPANION_HEARTBEAT_PERIOD_S
        if self.next_companion_hb_s <= now:
            self.next_companion_hb_s = now + COMPANION_HEARTBEAT_PERIOD_S

    def next_deadline(self) -> float:
        """When `poll` must next run (math.inf: nothing scheduled)."""
        phase = self.phase
        times = [self.feed.deadline(), self.checks.deadline(), self.streams.deadline(),
                 self.handover.deadline(), self.arms.deadline(),
                 self.guard.home_deadline(self.fc_up)]  # fmt: skip
        if self.fc_up and self.vehicle.last_heartbeat_s is not None:
            times.append(self.vehicle.last_heartbeat_s + self.settings.fc_timeout_s)
        heard_s = self.vehicle.last_heard_s
        if heard_s is not None and self._silence_judged(heard_s):  # (its facts need no clock)
            times.append(heard_s + fc_silence_limit_s(self))
        if self.vehicle.target is not None and self.fc_up and times[0] == math.inf:
            # While streaming, the companion heartbeat rides on the next tick (at most a
            # stream period late): a wake-up of its own costs as much as a tick (bench/).
            times.append(self.next_companion_hb_s)
        elif not self.fc_up and self.vehicle.px4 is not None:
            times.append(self.next_companion_hb_s)  # the lost PX4's
        if phase in _LEASE_PHASES:
            times.append(self.lease.deadline())
        warmup_end = self.engage.warmup_deadline()
        if phase in _WARMUP_PHASES and warmup_end is not None:
            times.append(warmup_end)
        if phase in _OFFBOARD_RETRY_PHASES:
            times.append(self.engage.offboard_deadline())
        if phase in _ARM_RETRY_PHASES:
            times.append(self.engage.arm_deadline())
        if phase in _HOLD_PHASES and self.hold_end_s is not None:
            times.append(self.hold_end_s)
        return min(times)

    def snapshot(self, now: float) -> EngineSnapshot:
        v, s, p = self.vehicle, self.feed.clock, self.checks.params
        fwd = p.get("MAV_FWDEXTSP")
        setpoint = self.feed.setpoint
        return EngineSnapshot(
            phase=self.phase.value,
            reason=None if self.reason is None else self.reason.value,
            fc_link="up" if self.fc_up else ("lost" if self.fc_ever_seen else "unknown"),
            fc_system_id=None if v.target is None else v.target.system_id,
            fc_is_px4=None if v.autopilot is None else v.is_px4,
            fc_version=(
                None if self.checks.version is None
                else format_version(self.checks.version.flight_sw_version)
            ),
            fc_heartbeat_age_s=v.heartbeat_age_s(now),
            # What a lost FC last said is not what it is now: unknown, until it speaks
            # (a dashboard showed OFFBOARD, armed, in the air through a link loss: review).
            fc_mode=mode_name(v.custom_mode if self.fc_up else None),
            fc_custom_mode=v.custom_mode if self.fc_up else None,
            armed=v.armed if self.fc_up else None,
            fc_status=v.status_name if self.fc_up else "unknown",
            landed_state=(v.landed_state if self.fc_up else LandedState.UNDEFINED).name.lower(),
            in_control=self.fc_up and v.in_control(),  # a lost FC is flown by nobody here
            lease_remaining_s=self.lease.remaining_s(now),
            estimates=v.estimates(now),
            streaming=s.running,
            setpoint_kind=None if setpoint is None else setpoint.kind.value,
            stream_rate_hz=s.achieved_rate_hz(now),
            stream_worst_gap_s=s.worst_gap_s,
            missed_ticks=s.missed_ticks,
            setpoints_sent=s.sends,
            hold_remaining_s=None if self.hold_end_s is None else max(0.0, self.hold_end_s - now),
            resume_token=self.resume_token,
            com_of_loss_t_s=self.checks.loss_timeout_s,
            com_obl_rc_act=self.checks.loss_action_name(),
            mav_fwdextsp=None if fwd is None else int(fwd),
            warnings=tuple(self.out.warnings),
            fence_enabled=self.envelope.fence_enabled,
            home_known=self.envelope.home is not None,
            fence_distance_m=self.guard.fence_distance_m(v, now),
            envelope_limiting=s.running and self.envelope.limiting,
            motion=None if self.feed.motion is None else self.feed.motion.progress(now),
            stream_plan=self.streams.snapshot(),
        )

    # -- the table ---------------------------------------------------------------------------

    def still_wants(self, action: object) -> bool:
        """A mode or arm request that waited for the FC link's budget: does the engine
        still stand by it? A pilot may have taken the vehicle meanwhile; an OFFBOARD or
        arm request sent after that would take it back. Anything else: yes."""
        if isinstance(action, RequestMode):
            if action.mode is Px4Mode.OFFBOARD:
                return self.phase is Phase.ENGAGING
            h = self.handover.current
            return h is not None and h.target_mode is action.mode
        if isinstance(action, ArmDisarm):
            pending = self.arms.pending
            return (action.arm and self.phase is Phase.ARMING) or (
                pending is not None and pending.arm == action.arm)
        return True

    def rule(self, trigger: Trigger, now: float) -> Rule:
        """The table's rule for `trigger` in the current phase."""
        return MACHINE.rule(self.phase, trigger, lambda fact: self._fact(fact, now, trigger))

    def _fact(self, fact: Fact, now: float, trigger: Trigger) -> bool:
        if fact is Fact.FC_IN_ASKED_MODE:
            asked = _FIRST_MODE.get(trigger)
            return asked is not None and self.vehicle.mode is asked
        if fact is Fact.SAME_ASK_PENDING:
            h, asked = self.handover.current, _FIRST_MODE.get(trigger)
            return (h is not None and not h.failsafe and h.command_id is not None
                    and asked is not None and h.chain[0] is asked)
        if fact is Fact.STREAMING:
            return self.feed.running
        if fact is Fact.HOLD_POSSIBLE:
            return self.settings.hold_s > 0 and self.vehicle.hold_setpoint(now) is not None
        if fact is Fact.PX4_LOSS_ACTION:
            return self.settings.command_loss_action is LossAction.PX4
        if fact is Fact.FC_IN_OFFBOARD:
            return self.vehicle.in_offboard
        if fact is Fact.FC_FLIES_STREAM:
            return self.vehicle.in_offboard and self.vehicle.armed
        if fact is Fact.FC_ARMED:
            return bool(self.vehicle.armed)
        if fact is Fact.ENGAGE_ASKED:
            return bool(getattr(self.command_in_hand, "engage", False))
        if fact is Fact.RESUME_QUOTED:
            return self.quotes_token(self.command_in_hand)
        if fact is Fact.MOTION_FINISHING:
            return finishing_allowed(self, now)
        if fact is Fact.ARM_WANTED:
            return self.engage.arm and not self.vehicle.armed
        if fact is Fact.OFFBOARD_REFUSED:
            return self.engage.mode_try.last_refused
        if fact is Fact.OFFBOARD_UNSEEN:
            return self.engage.offboard_unseen(self.vehicle.armed, self.vehicle.mode_heard_s)
        if fact is Fact.ARM_REFUSED:
            return self.engage.arm_try.last_refused
        if fact is Fact.TAKEN_HANDOVER:
            return self.handover.taken
        assert fact is Fact.FAILSAFE_HANDOVER
        return self.handover.failsafe

    def move(self, rule: Rule, message: str, reason: Reason | None = None) -> None:
        """Carry out `rule`'s phase change (STAY: nothing), reported as a TRANSITION. The
        table's promises about the stream are checked here, on every move."""
        if rule.to is Outcome.STAY:
            return
        if not rule.moves or self.phase not in rule.phases:
            raise MisuseError(f"{self.phase.value} + {rule.trigger}: not a move ({rule.to})")
        to = self.left_from if rule.to is Outcome.BACK else rule.to
        assert isinstance(to, Phase)
        why = rule.reason_for(reason)
        if self.feed.running and (Do.STOP_STREAM in rule.does or to not in _STREAM_ALLOWED):
            raise MisuseError(f"{rule.trigger} to {to.value} with the stream still on")
        previous = self.phase
        if previous in NOT_ENGAGED:
            self.left_from = previous
        self.phase = self.out.phase = to
        self.reason = why
        self.feed.report_stopped(why, message)
        if to is not Phase.HOLDING:
            self.hold_end_s = None
        if to is Phase.RELEASING and self.handover.taken:
            if previous not in TAKEN | {Phase.RELEASING} or self.resume_token is None:
                self.new_epoch()  # a failsafe's: control changed hands
            # (from failsafe / preempted, or superseding: the quoting commander's token holds)
        elif to not in _TOKEN_PHASES:
            self.resume_token = None  # idle, releasing: an engage takes it
        elif not (previous in LEASED and to in LEASED):  # the engage's steps keep it
            self.new_epoch()  # engaged, held, resumed, taken (again): control changed hands
        self.out.emit(Notice(NoticeKind.TRANSITION, message, to, why, previous))

    def quotes_token(self, command: object) -> bool:
        """Does `command` quote the current token (a sender alive since control last
        changed hands)? Fact.RESUME_QUOTED, and a takeover (engine_commands)."""
        quoted = getattr(command, "resume", None)
        return quoted is not None and quoted == self.resume_token

    def reply_token(self) -> str | None:
        """The token a reply names: in failsafe / preempted, where the next hold, land,
        rtl, arm or engage must quote it (a failed engage went back there, an arm spent
        the last one); else None."""
        return self.resume_token if self.phase in TAKEN else None

    def new_epoch(self) -> None:
        """Control changed hands (an engage, a lapse, a resume, a takeover): a new token,
        so that nothing written before can take control with the old one."""
        self.resume_token = self._new_token()

    def go(self, trigger: Trigger, now: float, message: str, reason: Reason | None = None) -> Rule:
        rule = self.rule(trigger, now)
        self.move(rule, message, reason)
        return rule

    # -- what several handlers share ---------------------------------------------------------

    def stop_stream(self) -> None:
        self.feed.stop()
        self.lease.end()
        self.engage.end_warmup()

    def diagnosis(self, now: float) -> str:
        return diagnose(
            self.vehicle,
            self.feed.clock,
            self.feed.setpoint,
            last_ack=self.last_ack,
            now=now,
            stale_after_s=3 * self.settings.stream_period_s,
        )

    # -- timers ------------------------------------------------------------------------------

    def _silence_judged(self, now: float) -> bool:
        """Is FC_SILENT armed? Streaming, in a phase whose row judges it (in WARMUP only
        while the vehicle is armed: else the warm-up's end judges an unheard FC)."""
        return (self.phase in _SILENCE_PHASES and self.feed.running
                and self.rule(Trigger.FC_SILENT, now).to is not Outcome.IGNORE)

    def _timers(self, now: float) -> None:
        v = self.vehicle
        hb_age = v.heartbeat_age_s(now)
        if self.fc_up and hb_age is not None and hb_age >= self.settings.fc_timeout_s:
            fc_lost(self, now, f"no HEARTBEAT for {self.settings.fc_timeout_s:g} s")
        silence_s = v.silence_s(now)
        if (silence_s is not None and silence_s >= fc_silence_limit_s(self)
                and self._silence_judged(now)):  # fmt: skip
            fc_silent(self, now)
        if self.fc_up and v.target is not None:
            # The heartbeat first: it gives our frames the vehicle's system id (the runtime
            # sets it from this action), so the commands below, the first ones after the FC
            # appeared included, carry it and their ACKs are recognised as ours (engine_fc).
            self._companion_heartbeat(v.target.system_id, now)
            actions, warnings = self.checks.poll(now, v.target)
            self.out.extend(actions)
            self.out.warn(warnings)
            self.guard.request_home(self.fc_up, v.target, now)
            self.out.extend(self.streams.poll(now, v.target))
        elif not self.fc_up and v.px4 is not None:
            # The PX4 we followed is lost: it still hears who we are. With MAVLink signing a
            # PX4 v1.17 comes back from a reboot with the timestamp stored at provisioning,
            # behind what we last accepted from it: every frame of it is refused as a replay
            # until it takes a newer timestamp from a signed frame of ours (the MAVLink
            # library does). Silent while it was lost, we never gave it one, and the FC
            # stayed lost until the daemon restarted (review).
            self._companion_heartbeat(v.px4.system_id, now)
        if self.phase in _MOTION_PHASES:
            self.feed.begin_motion(now)
        self.feed.finish_motion(now)  # before the lease: a motion allowed to finish did
        if self.phase in _LEASE_PHASES and self.lease.lapsed(now):
            lease_lapsed(self, now)
        warmup_end = self.engage.warmup_deadline()
        if self.phase in _WARMUP_PHASES and warmup_end is not None and now >= warmup_end:
            warmup_over(self, now, fc_silence_limit_s(self))
        if self.phase in _OFFBOARD_RETRY_PHASES:
            step_offboard_request(self, now)
        if self.phase in _ARM_RETRY_PHASES:
            step_arm_request(self, now)
        hold_end = self.hold_end_s
        if self.phase in _HOLD_PHASES and hold_end is not None and now >= hold_end:
            self.hold_end_s = None
            hold_s = self.settings.hold_s
            loss_action(self, self.rule(Trigger.HOLD_EXPIRED, now), now, f"held for {hold_s:g} s")
        if self.handover.current is not None:
            handover_progress(self, now)
        pending = self.arms.expired(now)
        if pending is not None:
            reason = Reason.ARM_TIMEOUT if pending.arm else Reason.DISARM_TIMEOUT
            self.out.reply_fail(pending.command_id, reason, self.diagnosis(now),
                                resume=self.reply_token())
        self.feed.tick(v.target, now)
        self.feed.report_stopped(None, "streaming stopped")

