"""The engage sequence: warm-up, the OFFBOARD request, arming, and the engage reply.

`EngageSequence` is the part: the waiting engage's id and options, the warm-up deadline
and the two bounded retriers (OFFBOARD, arm). The functions below are the engine's side
of it, run from its timers and FC events: each asks the table (machine_table) where the
outcome leads and moves there. OFFBOARD counts only when HEARTBEAT or CURRENT_MODE
report it, never on an ACK (PX4 v1.16 ACKs DO_SET_MODE twice, §4).

Must not: touch the stream, the lease or the hand-over except through the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offboardd.core.actions import ArmDisarm, FcAction, NoticeKind, RequestMode
from offboardd.core.engine_failsafe import fail_back, hand_back
from offboardd.core.machine import Do, Rule, Trigger
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.retry import Retrier, RetryStep
from offboardd.core.settings import EngineSettings

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine

# A gap in the warm-up stream longer than this fraction of COM_OF_LOSS_T restarts the
# warm-up: PX4 would have been close to judging the stream lost. Never more than
# WARMUP_GAP_MAX_S, nor WARMUP_GAP_PERIODS stream periods when that is more: with a raised
# COM_OF_LOSS_T (up to 60 s) half of it let a 29 s stall count as steady streaming, and
# OFFBOARD be asked for on a setpoint seconds old (found by review).
WARMUP_GAP_FRACTION = 0.5
WARMUP_GAP_MAX_S = 0.25
WARMUP_GAP_PERIODS = 4
# After PX4 ACCEPTED our arm, a HEARTBEAT received this long after the ACK that says
# disarmed means someone disarmed it ([SITL] the armed flag lags the ACK by ~0.55 s, §4;
# the rest is the link's latency). PX4 accepts an arm only when it armed
# (Commander::handle_command).
ARM_REPORT_SETTLE_S = 1.0
# After PX4 ACCEPTED OFFBOARD for an armed vehicle (it switches at once; v1.16.2's second
# ACK, which could refuse, follows within ms), a report of the engage's starting mode
# received this long after the ACK is someone switching back.
MODE_REPORT_SETTLE_S = 0.5
# Warm-up ends in a row at which the FC had been unheard for half the silence limit (each
# restarts the warm-up) before the engage fails (WARMUP_UNHEARD): an FC heard only in bursts
# would otherwise keep the warm-up restarting, the engage unanswered (found by review).
WARMUP_UNHEARD_ENDS = 3


class EngageSequence:
    def __init__(self, settings: EngineSettings) -> None:
        self._settings = settings
        self.command_id: str | None = None  # the engage waiting for its reply
        self.arm = False
        self.note = ""  # "; clamped: ..." for the engage reply
        # The mode the vehicle had at the engage: a report of it is no takeover, until the FC
        # has reported OFFBOARD (`offboard_seen`).
        self.harmless_mode: int | None = None
        self.told_offboard_by_px4 = False  # the offboard_by_px4 warning went out
        self.unheard_ends = 0  # warm-up ends in a row with the FC unheard
        self._warmup_end_s: float | None = None
        self.mode_try = self._mode_retrier()
        self.arm_try = self._arm_retrier()

    def _mode_retrier(self) -> Retrier:
        s = self._settings
        return Retrier(s.mode_retries, s.mode_confirm_timeout_s, s.retry_backoff_s)

    def _arm_retrier(self) -> Retrier:
        s = self._settings
        return Retrier(s.mode_retries, s.arm_confirm_timeout_s, s.retry_backoff_s)

    def begin(
        self, command_id: str, arm: bool, note: str, mode_at_engage: int | None, now: float
    ) -> None:
        self.command_id, self.arm, self.note = command_id, arm, note
        self.harmless_mode = mode_at_engage
        # A fresh start: the last engage's ACCEPTED would make this one's first report of
        # the vehicle's own mode a takeover (found by review: one engage per run)
        self.mode_try, self.arm_try = self._mode_retrier(), self._arm_retrier()
        self.told_offboard_by_px4 = False
        self.unheard_ends = 0
        self._warmup_end_s = now + self._settings.warmup_s

    def harmless(self, now: float) -> int | None:
        """The mode whose report is no takeover now: the engage's starting mode, until the
        FC reported OFFBOARD or accepted it for an armed vehicle a while ago."""
        if self.mode_try.accepted_for(now, MODE_REPORT_SETTLE_S):
            return None
        return self.harmless_mode

    def offboard_unseen(self, armed: bool, mode_heard_s: float | None) -> bool:
        """Might PX4 fly our stream in an OFFBOARD no report showed? Armed, OFFBOARD asked
        for and not refused, and no HEARTBEAT or CURRENT_MODE since the last request (and
        its settling): one since would have shown OFFBOARD, or the mode PX4 stayed in."""
        sent_s = self.mode_try.sent_s
        if not armed or sent_s is None or self.mode_try.last_refused:
            return False
        return mode_heard_s is None or mode_heard_s < sent_s + MODE_REPORT_SETTLE_S

    def arm_taken_back(self, now: float) -> bool:
        """Would a report of "disarmed" now mean someone disarmed what PX4 armed for us?"""
        return self.arm_try.accepted_for(now, ARM_REPORT_SETTLE_S)

    def offboard_seen(self) -> None:
        """The FC reported OFFBOARD during the engage: from now on the mode it had before
        is no harmless report. Going back to it (a pilot's Hold after PX4 re-entered
        OFFBOARD by itself, px4-offboard.md §3) is a takeover like any other mode."""
        self.harmless_mode = None

    def take_id(self) -> str | None:
        """The waiting engage's id, once: whoever answers it takes it."""
        command_id, self.command_id = self.command_id, None
        return command_id

    def warmup_deadline(self) -> float | None:
        return self._warmup_end_s

    def restart_warmup(self, now: float) -> None:
        self._warmup_end_s = now + self._settings.warmup_s

    def end_warmup(self) -> None:
        self._warmup_end_s = None

    def request_offboard(self, now: float) -> None:
        self.mode_try.begin(now)

    def request_arm(self, now: float) -> None:
        self.arm_try.begin(now)

    def offboard_refused(self, now: float) -> None:
        """An ACK refused OFFBOARD: back off, then ask again (once per attempt, §4)."""
        self.mode_try.refused(now)

    def arm_refused(self, now: float) -> None:
        self.arm_try.refused(now)

    def offboard_accepted(self, now: float) -> None:
        """An ACK accepted OFFBOARD for an armed vehicle: PX4 switched, so it is not asked
        again (a report of another mode after it is a takeover). Disarmed, PX4 accepts a
        mode it then never takes (§4, §7): asking again is kept there."""
        self.mode_try.accepted(now)

    def arm_accepted(self, now: float) -> None:
        """An ACK accepted the arm: PX4 armed, so it is never sent again."""
        self.arm_try.accepted(now)

    def offboard_deadline(self) -> float:
        return self.mode_try.deadline()

    def arm_deadline(self) -> float:
        return self.arm_try.deadline()


# -- the engine's side: timers and FC reports of the engage ---------------------------------


def warmup_over(eng: OffboardEngine, now: float, silence_limit_s: float) -> None:
    """The warm-up deadline passed: blocked, stalled, estimate lost, or on to OFFBOARD.
    `silence_limit_s`: how long an unheard FC is still followed (engine_fc)."""
    feed, seq = eng.feed, eng.engage
    # The gate passed at the engage; a GCS's PARAM_SET since (PX4 broadcasts it) may have
    # made the stream one PX4 ignores or judges lost: never ask for OFFBOARD then.
    blocker = eng.checks.engage_blocker(
        eng.settings.stream_period_s,
        motor_cut_allowed=eng.settings.allow_motor_cut_loss_action)
    if blocker is not None:
        fail_engage(eng, Trigger.WARMUP_BLOCKED, now, blocker[1], blocker[0])
        return
    pending = eng.checks.motor_cut_pending()
    if pending is not None and not eng.settings.allow_motor_cut_loss_action:
        # Read after the version, NAV_RCL_ACT may come after the engage: never ask for
        # OFFBOARD before we know whether PX4 cuts the motors on an offboard loss (review).
        _restart_warmup(eng, now, f"{pending} not read yet (whether PX4 cuts the motors on "
                        "an offboard loss): OFFBOARD not asked for; warming up again")
        return
    silence_s = eng.vehicle.silence_s(now) or 0.0
    unheard = silence_s >= silence_limit_s / 2
    seq.unheard_ends = seq.unheard_ends + 1 if unheard else 0
    if seq.unheard_ends >= WARMUP_UNHEARD_ENDS:
        fail_engage(eng, Trigger.WARMUP_UNHEARD, now, f"the FC unheard for {silence_s:.2f} s "
                    f"at {seq.unheard_ends} warm-up ends in a row: OFFBOARD not asked for")
        return
    if unheard:
        # Never ask an FC we have not heard for half the time after which we stop for its
        # silence (an attitude or body-rate stream has no estimate to go stale): its
        # downlink may be gone while it still takes our stream, and the request would be
        # followed at once by that stop (review). PX4 streams several messages every 0.1 s.
        # The warm-up waits for it, at most WARMUP_UNHEARD_ENDS ends in a row; an FC
        # lost for good ends it (fc_lost).
        _restart_warmup(eng, now, f"nothing heard from the FC for {silence_s:.2f} s at the "
                        "warm-up's end: OFFBOARD not asked for; warming up again")
        return
    gap_s = feed.steady_gap_s(now)
    limit_s = warmup_gap_limit_s(eng.checks.loss_timeout_s, eng.settings.stream_period_s)
    if gap_s > limit_s:
        # The shell stalled: that was not `warmup_s` of steady streaming. Start over.
        _restart_warmup(eng, now, f"setpoint stream stalled {gap_s:.2f} s during the "
                        "warm-up; restarting it")
        return
    seq.end_warmup()
    sp = eng.feed.setpoint
    if sp is not None and not eng.vehicle.estimate_valid(sp.estimate, now):
        why = f"the {sp.estimate.value} estimate became invalid during the warm-up"
        fail_engage(eng, Trigger.WARMUP_ESTIMATE_LOST, now, why)
        return
    rule = eng.rule(Trigger.WARMUP_DONE, now)
    if rule.to is Phase.ENGAGING:
        eng.move(rule, "warm-up done; requesting OFFBOARD")
        seq.request_offboard(now)
        eng.last_ack = None
    else:  # PX4 may re-enter OFFBOARD by itself once setpoints flow (§3)
        offboard_confirmed(eng, rule, now)


def _restart_warmup(eng: OffboardEngine, now: float, why: str) -> None:
    """WARMUP_STALLED: `warmup_s` of steady streaming again from now, and say why."""
    eng.go(Trigger.WARMUP_STALLED, now, "")
    eng.feed.restart_window(now)
    eng.engage.restart_warmup(now)
    eng.out.notice(NoticeKind.WARNING, why)


def warmup_gap_limit_s(loss_timeout_s: float | None, period_s: float) -> float:
    """The longest gap between setpoints that still counts as steady warm-up streaming."""
    steady_s = max(WARMUP_GAP_MAX_S, WARMUP_GAP_PERIODS * period_s)
    return min((loss_timeout_s or 1.0) * WARMUP_GAP_FRACTION, steady_s)


def offboard_confirmed(eng: OffboardEngine, rule: Rule, now: float) -> None:
    """OFFBOARD reported (warm-up end or a mode report while ENGAGING): arm, or done."""
    if rule.to is Phase.ARMING:
        eng.move(rule, "FC reports OFFBOARD; arming")
        eng.engage.request_arm(now)
        eng.last_ack = None
    else:
        engaged(eng, rule, "engaged: FC reports OFFBOARD")


def engaged(eng: OffboardEngine, rule: Rule, message: str) -> None:
    eng.move(rule, message)
    command_id = eng.engage.take_id()
    if command_id is not None:
        eng.out.reply_ok(command_id, message + eng.engage.note, Reason.ENGAGED)


def fail_engage(
    eng: OffboardEngine, trigger: Trigger, now: float, message: str, reason: Reason | None = None
) -> None:
    """Fail the waiting engage; stop, back to the phase it was made from (the table's
    BACK), or hand the vehicle over when PX4 may fly our stream (engine_failsafe.hand_back)."""
    rule = eng.rule(trigger, now)
    why = rule.reason_for(reason)
    assert why is not None  # every engage failure row names its reasons
    if Do.HAND_OVER in rule.does:
        eng.out.reply_fail(eng.engage.take_id(), why, message)
        hand_back(eng, rule, now, message, why)
        return
    fail_back(eng, rule, message, why)


def step_offboard_request(eng: OffboardEngine, now: float) -> None:
    target = eng.vehicle.target
    _step_request(eng, eng.engage.mode_try, now,
                  None if target is None else RequestMode(target, Px4Mode.OFFBOARD),
                  exhausted=Trigger.OFFBOARD_RETRIES_EXHAUSTED, what="OFFBOARD",
                  reasons=(Reason.MODE_REFUSED, Reason.MODE_TIMEOUT))


def step_arm_request(eng: OffboardEngine, now: float) -> None:
    target = eng.vehicle.target
    _step_request(eng, eng.engage.arm_try, now,
                  None if target is None else ArmDisarm(target, arm=True),
                  exhausted=Trigger.ARM_RETRIES_EXHAUSTED, what="arming",
                  reasons=(Reason.ARM_REFUSED, Reason.ARM_TIMEOUT))


def _step_request(
    eng: OffboardEngine, retrier: Retrier, now: float, request: FcAction | None, *,
    exhausted: Trigger, what: str, reasons: tuple[Reason, Reason],
) -> None:
    """One engage request's turn: (re)send it, or fail the engage once its attempts are
    spent (`reasons`: refused by an ACK, or never confirmed)."""
    step = retrier.poll(now)
    if step is RetryStep.SEND and request is not None:
        eng.out.emit(request)
    elif step is RetryStep.EXHAUSTED:
        how = ("accepted but never reported" if retrier.accepted_s is not None
               else f"not confirmed after {retrier.attempts} attempts")  # fmt: skip
        fail_engage(
            eng, exhausted, now, f"{what} {how}: " + eng.diagnosis(now),
            reasons[0] if retrier.last_refused else reasons[1],
        )
