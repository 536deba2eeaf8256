"""Engaging: the warm-up's end, the OFFBOARD request with bounded retries, arming, and
the engage reply once the outcome is known. OFFBOARD counts only when HEARTBEAT or
CURRENT_MODE reports it, never on an ACK (PX4 v1.16 ACKs DO_SET_MODE twice, §4).

Part of the engine (offboard.py drives it from its timers and FC events). Pure.
"""

from __future__ import annotations

from offboardd.core.actions import ArmDisarm, Notice, NoticeKind, Reply, RequestMode
from offboardd.core.engine_failsafe import EngineFailsafe
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.retry import RetryStep

# A gap in the warm-up stream longer than this fraction of COM_OF_LOSS_T restarts the
# warm-up: PX4 would have been close to judging the stream lost.
WARMUP_GAP_FRACTION = 0.5


class EngineEngage(EngineFailsafe):
    """Warm-up end, OFFBOARD request and confirmation, arming, the engage reply."""

    def _warmup_done(self, now: float) -> None:
        gap_s = self.stream.window_gap_s(now)
        limit_s = (self.checks.loss_timeout_s or 1.0) * WARMUP_GAP_FRACTION
        if gap_s > limit_s:
            # The shell stalled: that was not `warmup_s` of steady streaming. Start over.
            self.stream.reset_window(now)
            self._warmup_end_s = now + self.settings.warmup_s
            self.emit(
                Notice(
                    NoticeKind.WARNING,
                    f"setpoint stream stalled {gap_s:.2f} s during the warm-up; restarting it",
                    self.phase,
                )
            )
            return
        self._warmup_end_s = None
        sp = self.setpoint
        if sp is not None and not self.vehicle.estimate_valid(sp.estimate, now):
            self.fail_engage(
                Reason.ESTIMATE_MISSING,
                f"the {sp.estimate.value} estimate became invalid during the warm-up",
            )
            return
        if self.vehicle.in_offboard:
            # PX4 may re-enter OFFBOARD by itself once setpoints flow (§3).
            self._offboard_confirmed(now)
            return
        self.enter(Phase.ENGAGING, None, "warm-up done; requesting OFFBOARD")
        self._mode_try = self.new_mode_retrier()
        self._mode_try.begin(now)
        self._last_ack = None

    def _offboard_confirmed(self, now: float) -> None:
        if self._engage_arm and not self.vehicle.armed:
            self.enter(Phase.ARMING, None, "FC reports OFFBOARD; arming")
            self._arm_try = self.new_arm_retrier()
            self._arm_try.begin(now)
            self._last_ack = None
        else:
            self._engaged(now, "engaged: FC reports OFFBOARD")

    def _engaged(self, now: float, message: str) -> None:
        self.enter(Phase.ACTIVE, Reason.ENGAGED, message)
        if self._engage_id is not None:
            self.emit(Reply.success(self._engage_id, message + self._engage_note, Reason.ENGAGED))
            self._engage_id = None

    def _step_engage_mode(self, now: float) -> None:
        step = self._mode_try.poll(now)
        target = self.vehicle.target
        if step is RetryStep.SEND and target is not None:
            self.emit(RequestMode(target, Px4Mode.OFFBOARD))
        elif step is RetryStep.EXHAUSTED:
            refused = self._mode_try.last_refused
            self.fail_engage(
                Reason.MODE_REFUSED if refused else Reason.MODE_TIMEOUT,
                f"OFFBOARD not confirmed after {self._mode_try.attempts} attempts: "
                + self._diagnosis(now),
            )

    def _step_arm(self, now: float) -> None:
        step = self._arm_try.poll(now)
        target = self.vehicle.target
        if step is RetryStep.SEND and target is not None:
            self.emit(ArmDisarm(target, arm=True))
        elif step is RetryStep.EXHAUSTED:
            refused = self._arm_try.last_refused
            self.fail_engage(
                Reason.ARM_REFUSED if refused else Reason.ARM_TIMEOUT,
                f"arming not confirmed after {self._arm_try.attempts} attempts: "
                + self._diagnosis(now),
            )
