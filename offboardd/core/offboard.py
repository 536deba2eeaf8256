"""OffboardEngine: the offboard state machine, pure (h11 / aioquic style).

`handle(event, now)` and `poll(now)` return the actions to take; `next_deadline()` says
when to call `poll` next (the shell's one timer); `snapshot(now)` is the published state.
No asyncio, no sockets, no logging, no clock reads: time is always the `now` passed in.

Phases (reasons.Phase): IDLE -> WARMUP -> ENGAGING -> [ARMING] -> ACTIVE <-> HOLDING,
then RELEASING (asking the FC for another mode) -> IDLE / FAILSAFE, or PREEMPTED when
the FC leaves OFFBOARD unasked. Leaving FAILSAFE / PREEMPTED needs a new engage: the
engine never takes control back by itself (PX4 would re-enter OFFBOARD as soon as
setpoints resumed, px4-offboard.md §3).

This module holds the entry points, FC-event handling and the timers; the rest of the
engine is layered below it: engine_state (state + shared transitions) <- engine_commands
(operator commands) <- engine_failsafe (lease, hold, loss action, handovers) <-
engine_engage (warm-up, OFFBOARD, arming) <- OffboardEngine.
"""

from __future__ import annotations

from collections.abc import Iterable

from offboardd.core.actions import (
    Action,
    Notice,
    NoticeKind,
    Reply,
    SendCompanionHeartbeat,
    SendSetpoint,
)
from offboardd.core.commands import COMMAND_TYPES
from offboardd.core.engine_engage import EngineEngage
from offboardd.core.events import (
    FC_MESSAGE_TYPES,
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    AckResult,
    Event,
    FcAutopilotVersion,
    FcCommandAck,
    FcCurrentMode,
    FcHeartbeat,
    FcHomePosition,
    FcLinkDown,
    FcLocalPosition,
    FcMessageEvent,
    FcParamValue,
    FcStatusText,
)
from offboardd.core.fc_link import format_version
from offboardd.core.modes import Px4Mode, mode_name
from offboardd.core.reasons import Phase, Reason
from offboardd.core.settings import EngineSettings
from offboardd.core.snapshot import EngineSnapshot

# HEARTBEAT from the companion: 1 Hz by MAVLink convention (§5).
COMPANION_HEARTBEAT_PERIOD_S = 1.0
_LEASE_PHASES = frozenset({Phase.WARMUP, Phase.ENGAGING, Phase.ARMING, Phase.ACTIVE})


class OffboardEngine(EngineEngage):
    """`OffboardEngine(settings, now)`; see the module docstring for the contract."""

    def __init__(self, settings: EngineSettings, now: float) -> None:
        super().__init__(settings, now)

    # -- public entry points -----------------------------------------------------------------

    def handle(self, event: Event, now: float) -> list[Action]:
        """Feed one event; timers due up to `now` are processed first."""
        return self.handle_all((event,), now)

    def handle_all(self, events: Iterable[Event], now: float) -> list[Action]:
        """Feed events that arrived together (one poll of the FC link): timers due up to
        `now` first, then each event in order, then the timers again, so what an event
        makes due (a new setpoint's send) happens now. One pass of the timers per batch,
        not per event: PX4's ~100 decoded messages/s would otherwise run them 200 times a
        second (bench/README.md)."""
        self._timers(now)
        for event in events:
            if isinstance(event, FC_MESSAGE_TYPES):
                self._on_fc_event(event, now)
            elif isinstance(event, COMMAND_TYPES):
                self.on_command(event, now)
            elif isinstance(event, FcLinkDown) and self.fc_up:
                detail = event.detail
                self._fc_lost(now, f"link down: {detail}" if detail else "link down")
            # FcLinkUp: nothing yet; the FC still has to prove itself with a heartbeat
        self._timers(now)
        return self._take()

    def poll(self, now: float) -> list[Action]:
        """The timer entry: call at (or after) `next_deadline()`."""
        self._timers(now)
        return self._take()

    def next_deadline(self) -> float:
        """When `poll` must next run (math.inf: nothing scheduled)."""
        times = [self.stream.next_deadline(), self.checks.deadline()]
        if self.fc_up and self.vehicle.last_heartbeat_s is not None:
            times.append(self.vehicle.last_heartbeat_s + self.settings.fc_timeout_s)
        if self.vehicle.target is not None and self.fc_up:
            times.append(self._next_companion_hb_s)
        if self.phase in _LEASE_PHASES:
            times.append(self.lease.deadline())
        if self.phase is Phase.WARMUP and self._warmup_end_s is not None:
            times.append(self._warmup_end_s)
        if self.phase is Phase.ENGAGING:
            times.append(self._mode_try.deadline())
        if self.phase is Phase.ARMING:
            times.append(self._arm_try.deadline())
        if self.phase is Phase.HOLDING and self._hold_end_s is not None:
            times.append(self._hold_end_s)
        if self._handover is not None:
            times.append(self._handover.retrier.deadline())
        if self._pending_arm is not None:
            times.append(self._pending_arm.deadline_s)
        if self._wants_home():
            times.append(self._next_home_request_s)
        return min(times)

    def snapshot(self, now: float) -> EngineSnapshot:
        v, s, p = self.vehicle, self.stream, self.checks.params
        fwd = p.get("MAV_FWDEXTSP")
        return EngineSnapshot(
            phase=self.phase.value,
            reason=None if self.reason is None else self.reason.value,
            fc_link="up" if self.fc_up else ("lost" if self._fc_ever_seen else "unknown"),
            fc_system_id=None if v.target is None else v.target.system_id,
            fc_is_px4=None if v.autopilot is None else v.is_px4,
            fc_version=(
                None if self.checks.version is None
                else format_version(self.checks.version.flight_sw_version)
            ),
            fc_heartbeat_age_s=v.heartbeat_age_s(now),
            fc_mode=mode_name(v.custom_mode),
            fc_custom_mode=v.custom_mode,
            armed=v.armed,
            landed_state=v.landed_state.name.lower(),
            in_control=self.fc_up and v.in_control(),  # a lost FC is flown by nobody here
            lease_remaining_s=self.lease.remaining_s(now),
            estimates=v.estimates(now),
            streaming=s.running,
            setpoint_kind=None if self.setpoint is None else self.setpoint.kind.value,
            stream_rate_hz=s.achieved_rate_hz(now),
            stream_worst_gap_s=s.worst_gap_s,
            missed_ticks=s.missed_ticks,
            setpoints_sent=s.sends,
            hold_remaining_s=(
                None if self._hold_end_s is None else max(0.0, self._hold_end_s - now)
            ),
            com_of_loss_t_s=self.checks.loss_timeout_s,
            com_obl_rc_act=self.checks.loss_action_name(),
            mav_fwdextsp=None if fwd is None else int(fwd),
            warnings=tuple(self.warnings),
            fence_enabled=self.envelope.fence_enabled,
            home_known=self.envelope.home is not None,
            fence_distance_m=self._fence_distance_m(now),
            envelope_limiting=self.stream.running and self.envelope.limiting,
        )

    # -- FC events ---------------------------------------------------------------------------

    def _on_fc_event(self, event: FcMessageEvent, now: float) -> None:
        v = self.vehicle
        target_before = v.target
        if not v.accepts(event):
            return
        armed_before = v.armed
        rebooted = v.fold(event, now)
        if isinstance(event, FcHeartbeat) and (not self.fc_up or v.target != target_before):
            self._fc_appeared(now)
        if rebooted:
            self._fc_rebooted(now)
            return
        if isinstance(event, FcHeartbeat | FcCurrentMode):
            self._on_fc_state(now, armed_before)
        elif isinstance(event, FcCommandAck):
            self._on_ack(event, now)
        elif isinstance(event, FcParamValue):
            self._warn(self.checks.on_param(event.name, event.value))
        elif isinstance(event, FcAutopilotVersion):
            self._warn(self.checks.on_version(event))
        elif isinstance(event, FcStatusText):
            self.emit(
                Notice(NoticeKind.FC_STATUSTEXT, event.text, self.phase, severity=event.severity)
            )
        elif isinstance(event, FcHomePosition):
            self.envelope.set_home(event)
        elif isinstance(event, FcLocalPosition):
            self._check_breach(now)

    def _fc_appeared(self, now: float) -> None:
        v = self.vehicle
        assert v.target is not None
        self.fc_up = True
        self._fc_ever_seen = True
        self._next_companion_hb_s = now
        self._next_home_request_s = now
        self.checks.start(now)
        who = "PX4" if v.is_px4 else f"autopilot {v.autopilot} (not PX4)"
        self.emit(
            Notice(
                NoticeKind.FC_LINK,
                f"FC up: {who}, system {v.target.system_id} component {v.target.component_id}",
                self.phase,
            )
        )
        if not v.is_px4:
            self._warn([f"autopilot type {v.autopilot} is not PX4: engage will be refused"])

    def _on_fc_state(self, now: float, armed_before: bool) -> None:
        """A HEARTBEAT or CURRENT_MODE: confirm what we asked for, or notice a takeover."""
        v, phase = self.vehicle, self.phase
        disarm_expected = self._disarm_expected()
        pending = self._pending_arm
        if pending is not None and v.armed == pending.arm:
            self._pending_arm = None
            self.emit(Reply.success(pending.command_id, "armed" if pending.arm else "disarmed"))
        if phase in (Phase.WARMUP, Phase.ENGAGING):
            if v.custom_mode not in (self._mode_at_engage, Px4Mode.OFFBOARD.custom_mode):
                self.preempt(
                    Reason.PREEMPTED_MODE,
                    f"FC switched to {mode_name(v.custom_mode)} during the engage",
                )
            elif phase is Phase.ENGAGING and v.in_offboard:
                self._offboard_confirmed(now)
        elif phase in (Phase.ARMING, Phase.ACTIVE, Phase.HOLDING):
            if not v.in_offboard:
                self.preempt(
                    Reason.PREEMPTED_MODE,
                    f"FC left OFFBOARD for {mode_name(v.custom_mode)} without being asked",
                )
            elif phase is Phase.ARMING and v.armed:
                self._engaged(now, "engaged in OFFBOARD and armed")
            elif armed_before and not v.armed:
                if disarm_expected:
                    # The operator ended control: streaming on would let a later arm fly
                    # off to the old setpoint. A new engage starts over.
                    self.stop_stream()
                    self.enter(Phase.IDLE, Reason.COMMANDED_DISARM,
                               "disarmed on command; stopped streaming")
                else:
                    self.preempt(Reason.PREEMPTED_DISARMED, "FC disarmed without being asked")
        elif phase is Phase.RELEASING and self._handover is not None:
            self._handover_progress(now)

    def _disarm_expected(self) -> bool:
        return self._pending_arm is not None and not self._pending_arm.arm

    def _on_ack(self, ack: FcCommandAck, now: float) -> None:
        if ack.result in (AckResult.ACCEPTED, AckResult.IN_PROGRESS):
            return  # never trust an ACK alone: PX4 v1.16 sends ACCEPTED first (§4)
        self._last_ack = ack.result
        if ack.command == MAV_CMD_DO_SET_MODE:
            if self.phase is Phase.ENGAGING:
                self._mode_try.refused(now)
            elif self._handover is not None:
                self._handover.retrier.refused(now)
        elif ack.command == MAV_CMD_COMPONENT_ARM_DISARM:
            if self.phase is Phase.ARMING:
                self._arm_try.refused(now)
            pending = self._pending_arm
            if pending is not None:
                self._pending_arm = None
                reason = Reason.ARM_REFUSED if pending.arm else Reason.DISARM_REFUSED
                self.emit(Reply.failure(pending.command_id, reason, self._diagnosis(now)))

    # -- timers ------------------------------------------------------------------------------

    def _timers(self, now: float) -> None:
        v = self.vehicle
        hb_age = v.heartbeat_age_s(now)
        if self.fc_up and hb_age is not None and hb_age >= self.settings.fc_timeout_s:
            self._fc_lost(now, f"no HEARTBEAT for {self.settings.fc_timeout_s:g} s")
        if self.fc_up and v.target is not None:
            actions, warnings = self.checks.poll(now, v.target)
            self.out.extend(actions)
            self._warn(warnings)
            if now >= self._next_companion_hb_s:
                self.emit(
                    SendCompanionHeartbeat(v.target.system_id, self.settings.companion_component_id)
                )
                self._next_companion_hb_s += COMPANION_HEARTBEAT_PERIOD_S
                if self._next_companion_hb_s <= now:  # woke very late: don't burst
                    self._next_companion_hb_s = now + COMPANION_HEARTBEAT_PERIOD_S
            self._request_home(now, v.target)
        if self.phase in _LEASE_PHASES and self.lease.lapsed(now):
            self._lease_lapsed(now)
        warmup_end = self._warmup_end_s
        if self.phase is Phase.WARMUP and warmup_end is not None and now >= warmup_end:
            self._warmup_done(now)
        if self.phase is Phase.ENGAGING:
            self._step_engage_mode(now)
        if self.phase is Phase.ARMING:
            self._step_arm(now)
        hold_end = self._hold_end_s
        if self.phase is Phase.HOLDING and hold_end is not None and now >= hold_end:
            self._hold_end_s = None
            self._loss_action(now, f"held for {self.settings.hold_s:g} s")
        if self._handover is not None:
            self._handover_progress(now)
        pending = self._pending_arm
        if pending is not None and now >= pending.deadline_s:
            self._pending_arm = None
            reason = Reason.ARM_TIMEOUT if pending.arm else Reason.DISARM_TIMEOUT
            self.emit(Reply.failure(pending.command_id, reason, self._diagnosis(now)))
        if self.stream.tick_due(now) and self.setpoint is not None and v.target is not None:
            self.emit(SendSetpoint(v.target, self.shaped(self.setpoint, now)))
            self.stream.record_send(now)
