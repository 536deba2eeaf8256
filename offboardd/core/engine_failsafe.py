"""Failsafes: the lease lapsing, HOLDING, the commander-loss action and every handover
to another FC mode (release, hold/land/rtl, loss action), escalating hold -> land ->
stop streaming when the FC refuses, and reporting each step.

Part of the engine (offboard.py drives it from its timers and FC events). Pure.
"""

from __future__ import annotations

import math

from offboardd.core.actions import Notice, NoticeKind, Reply, RequestMessage, RequestMode, Target
from offboardd.core.engine_commands import EngineCommands
from offboardd.core.engine_state import Handover
from offboardd.core.envelope_geometry import describe_face
from offboardd.core.modes import Px4Mode, mode_name
from offboardd.core.reasons import Phase, Reason
from offboardd.core.retry import RetryStep
from offboardd.core.setpoints import EstimateNeed
from offboardd.core.settings import ESCALATION, LossAction

_BREACH_PHASES = frozenset({Phase.ACTIVE, Phase.HOLDING})
# HOME_POSITION (common.xml #242): asked for with MAV_CMD_REQUEST_MESSAGE while the fence
# is enabled and home unknown (PX4 streams it slowly, or not at all on trimmed links).
HOME_POSITION_ID = 242
HOME_REQUEST_PERIOD_S = 2.0


class EngineFailsafe(EngineCommands):
    # -- lease, hold, loss action ------------------------------------------------------------

    def _lease_lapsed(self, now: float) -> None:
        self.lease.end()
        if self.phase is not Phase.ACTIVE:
            # Never request OFFBOARD or arm for a commander that has vanished.
            self.fail_engage(Reason.LEASE_LAPSED, "commander lease lapsed during the engage")
            return
        hold = self.vehicle.hold_setpoint(now)
        if hold is None or self.settings.hold_s <= 0:
            why = "no position estimate to hold on" if hold is None else "hold_s is 0"
            self._loss_action(now, f"commander lease lapsed; {why}")
            return
        self.send_now(hold, now)
        self._hold_end_s = now + self.settings.hold_s
        self.enter(
            Phase.HOLDING,
            Reason.LEASE_LAPSED,
            f"commander lease lapsed; holding position for {self.settings.hold_s:g} s",
        )
        self.emit(Notice(NoticeKind.FAILSAFE, "holding position", self.phase, Reason.LEASE_LAPSED))

    def _loss_action(self, now: float, why: str) -> None:
        action = self.settings.command_loss_action
        if action is LossAction.PX4:
            self.stop_stream()
            message = (
                f"{why}; stopped streaming: PX4's offboard-loss action "
                f"({self.checks.loss_action_name() or 'COM_OBL_RC_ACT'}) follows"
            )
            self.enter(Phase.FAILSAFE, Reason.LOSS_ACTION, message)
            self.emit(Notice(NoticeKind.FAILSAFE, message, self.phase, Reason.LOSS_ACTION))
            return
        self.emit(
            Notice(
                NoticeKind.FAILSAFE,
                f"{why}; commander loss action: {action.value}",
                self.phase,
                Reason.LOSS_ACTION,
            )
        )
        self.start_handover(ESCALATION[action.value], None, Phase.FAILSAFE, Reason.LOSS_ACTION, now)

    # -- the FC gone ---------------------------------------------------------------------------

    def _fc_lost(self, now: float, detail: str) -> None:
        self.fc_up = False
        self.checks.stop()
        self.vehicle.forget_estimates()
        self.envelope.forget_home()
        self.vehicle.target = None
        self.emit(Notice(NoticeKind.FC_LINK, f"FC lost ({detail})", self.phase))
        self._abandon(Reason.FC_LINK_LOST, f"FC lost ({detail}); stopped streaming", now)

    def _fc_rebooted(self, now: float) -> None:
        self.vehicle.forget_estimates()
        self.envelope.forget_home()
        self._next_home_request_s = now
        self.checks.start(now)
        self.emit(Notice(NoticeKind.FC_LINK, "FC rebooted: re-reading its parameters", self.phase))
        self._abandon(Reason.FC_REBOOTED, "FC rebooted; stopped streaming", now)

    def _abandon(self, reason: Reason, message: str, now: float) -> None:
        """Stop whatever we were doing with the vehicle; FAILSAFE if we were flying it."""
        was_streaming = self.stream.running
        self._fail_pending(reason, message)
        if was_streaming:
            self.stop_stream()
            self.enter(Phase.FAILSAFE, reason, message)
        elif self.phase is Phase.RELEASING:  # a plain mode request that will not be answered
            self.enter(Phase.IDLE, reason, message)

    # -- geofence: home and breach -----------------------------------------------------------

    def _wants_home(self) -> bool:
        return self.fc_up and self.envelope.fence_enabled and self.envelope.home is None

    def _request_home(self, now: float, target: Target) -> None:
        if self._wants_home() and now >= self._next_home_request_s:
            self.emit(RequestMessage(target, HOME_POSITION_ID))
            self._next_home_request_s = now + HOME_REQUEST_PERIOD_S

    def _fence_distance_m(self, now: float) -> float | None:
        pos = self.vehicle.local_position
        if pos is None or not self.vehicle.estimate_valid(EstimateNeed.LOCAL_POSITION, now):
            return None
        face = self.envelope.nearest_face(pos.north_m, pos.east_m, pos.down_m)
        if face is None or not math.isfinite(face.distance_m):
            return None
        return round(face.distance_m, 2)

    def _check_breach(self, now: float) -> None:
        """The vehicle is outside the fence while ours (drift, wind, an attitude setpoint
        the fence cannot steer): hold here, then hand over to the breach action."""
        pos = self.vehicle.local_position
        if self.phase not in _BREACH_PHASES or pos is None:
            return
        if not self.vehicle.estimate_valid(EstimateNeed.LOCAL_POSITION, now):
            return
        face = self.envelope.breach(pos.north_m, pos.east_m, pos.down_m)
        if face is None:
            return
        action = self.envelope.settings.breach_action
        message = (
            f"fence breach: the vehicle is outside the fence "
            f"({describe_face(face, self.envelope.settings)}); breach action: {action.value}"
        )
        self.emit(Notice(NoticeKind.FAILSAFE, message, self.phase, Reason.FENCE_BREACH))
        hold = self.vehicle.hold_setpoint(now)
        if hold is not None:  # stop pushing outwards while PX4 switches mode
            self.send_now(hold, now)
        self.start_handover(ESCALATION[action.value], None, Phase.FAILSAFE, Reason.FENCE_BREACH,
                            now)  # fmt: skip

    # -- handover (release, hold/land/rtl, loss action) --------------------------------------

    def _handover_progress(self, now: float) -> None:
        h, v = self._handover, self.vehicle
        if h is None:
            return
        if v.mode is h.target_mode:
            self._handover = None
            self.stop_stream()
            message = f"FC reports {h.target_mode.label}" + (
                f" (after escalating from {h.chain[0].label})" if h.index else ""
            )
            self.enter(h.success_phase, h.success_reason, message)
            if h.command_id is not None:
                self.emit(Reply.success(h.command_id, message, h.success_reason))
            return
        allowed = {h.start_custom_mode, Px4Mode.OFFBOARD.custom_mode}
        allowed.update(m.custom_mode for m in h.chain)
        if h.streaming and v.custom_mode is not None and v.custom_mode not in allowed:
            self.preempt(
                Reason.PREEMPTED_MODE,
                f"FC switched to {mode_name(v.custom_mode)} during the handover",
            )
            return
        step = h.retrier.poll(now)
        if step is RetryStep.SEND and v.target is not None:
            self.emit(RequestMode(v.target, h.target_mode))
        elif step is RetryStep.EXHAUSTED:
            self._escalate(h, now)

    def _escalate(self, h: Handover, now: float) -> None:
        refused = h.target_mode
        if h.index + 1 < len(h.chain):
            h.index += 1
            h.retrier = self.new_mode_retrier()
            h.retrier.begin(now)
            self.emit(
                Notice(
                    NoticeKind.FAILSAFE,
                    f"FC refused {refused.label}; escalating to {h.target_mode.label}",
                    self.phase,
                    Reason.ESCALATED,
                )
            )
            self._handover_progress(now)
            return
        self._handover = None
        reason = Reason.MODE_REFUSED if h.retrier.last_refused else Reason.MODE_TIMEOUT
        if not h.streaming:  # a plain mode request (the vehicle was not ours): no failsafe
            message = f"FC did not take {refused.label}: {self._diagnosis(now)}"
            self.enter(Phase.IDLE, reason, message)
            if h.command_id is not None:
                self.emit(Reply.failure(h.command_id, reason, message))
            return
        message = (
            f"FC refused {refused.label} and every fallback; stopped streaming, PX4's "
            f"offboard-loss action follows: {self._diagnosis(now)}"
        )
        self.stop_stream()
        self.enter(Phase.FAILSAFE, Reason.ESCALATED, message)
        self.emit(Notice(NoticeKind.FAILSAFE, message, self.phase, Reason.ESCALATED))
        if h.command_id is not None:
            self.emit(Reply.failure(h.command_id, reason, message))
