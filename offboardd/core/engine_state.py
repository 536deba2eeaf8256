"""EngineCore: the offboard engine's state and the transitions every part of it shares.

Holds the phase, the stream, the lease, pending replies and the handover in progress,
and offers the few primitives that change them (enter a phase, start/stop the stream,
preempt, fail an engage, start a handover). The event and timer logic lives in
offboard.py, operator commands in engine_commands.py. Pure, like the rest of core/.
"""

from __future__ import annotations

from dataclasses import dataclass

from offboardd.core.actions import Action, Notice, NoticeKind, Reply, SendSetpoint
from offboardd.core.diagnosis import diagnose
from offboardd.core.envelope import Envelope
from offboardd.core.fc_link import FcChecks
from offboardd.core.lease import Lease
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.retry import Retrier
from offboardd.core.setpoints import Setpoint
from offboardd.core.settings import EngineSettings
from offboardd.core.stream import StreamClock
from offboardd.core.vehicle import VehicleState
from offboardd.errors import SetpointError


@dataclass
class Handover:
    """Asking the FC for a mode other than OFFBOARD, escalating along `chain` on refusal."""

    chain: tuple[Px4Mode, ...]
    retrier: Retrier
    streaming: bool  # keep the stream alive until the FC reports the mode
    success_phase: Phase
    success_reason: Reason
    command_id: str | None
    start_custom_mode: int | None  # the mode when we started: not a takeover if it stays
    index: int = 0

    @property
    def target_mode(self) -> Px4Mode:
        return self.chain[self.index]


@dataclass
class PendingArm:
    """An operator arm/disarm waiting for HEARTBEAT to show the new state."""

    command_id: str
    arm: bool
    deadline_s: float


class EngineCore:
    def __init__(self, settings: EngineSettings, now: float) -> None:
        self.settings = settings
        self.vehicle = VehicleState(settings.estimate_timeout_s)
        self.checks = FcChecks(
            settings.param_retry_s, settings.param_retries, settings.current_mode_interval_s
        )
        self.stream = StreamClock(settings.stream_period_s)
        self.lease = Lease(settings.command_timeout_s)
        self.phase = Phase.IDLE
        self.reason: Reason | None = None
        self.setpoint: Setpoint | None = None  # as commanded (after the envelope's admission)
        self.envelope = Envelope(settings.envelope)
        self._envelope_noted = False  # the current setpoint's shaping was reported
        self._last_clamps: tuple[str, ...] = ()  # limits clamped on the last command
        self._next_home_request_s = now
        self.fc_up = False
        self._fc_ever_seen = False
        self._next_companion_hb_s = now
        self.warnings: list[str] = []
        self.out: list[Action] = []
        # engage in progress
        self._engage_id: str | None = None
        self._engage_arm = False
        self._engage_note = ""  # "; clamped: ..." for the engage reply
        self._warmup_end_s: float | None = None
        self._mode_at_engage: int | None = None
        self._mode_try = self.new_mode_retrier()
        self._arm_try = self.new_arm_retrier()
        self._last_ack: int | None = None
        # failsafe and handover
        self._hold_end_s: float | None = None
        self._handover: Handover | None = None
        self._pending_arm: PendingArm | None = None

    # -- outputs -----------------------------------------------------------------------------

    def emit(self, action: Action) -> None:
        self.out.append(action)

    def _take(self) -> list[Action]:
        out, self.out = self.out, []
        return out

    def _warn(self, warnings: list[str]) -> None:
        for text in warnings:
            if text not in self.warnings:  # the same FC reconnecting warns again, once kept
                self.warnings.append(text)
            self.emit(Notice(NoticeKind.WARNING, text, self.phase))

    def enter(self, phase: Phase, reason: Reason | None, message: str) -> None:
        previous = self.phase
        self.phase, self.reason = phase, reason
        if phase is not Phase.HOLDING:
            self._hold_end_s = None
        self.emit(Notice(NoticeKind.TRANSITION, message, phase, reason, previous))

    def _diagnosis(self, now: float) -> str:
        return diagnose(
            self.vehicle,
            self.stream,
            self.setpoint,
            last_ack=self._last_ack,
            now=now,
            stale_after_s=3 * self.settings.stream_period_s,
        )

    # -- retriers ----------------------------------------------------------------------------

    def new_mode_retrier(self) -> Retrier:
        s = self.settings
        return Retrier(s.mode_retries, s.mode_confirm_timeout_s, s.retry_backoff_s)

    def new_arm_retrier(self) -> Retrier:
        s = self.settings
        return Retrier(s.mode_retries, s.arm_confirm_timeout_s, s.retry_backoff_s)

    # -- stream ------------------------------------------------------------------------------

    def start_stream(self, setpoint: Setpoint, now: float) -> None:
        assert self.vehicle.target is not None
        self.setpoint = setpoint
        self._envelope_noted = False
        self.stream.start(now)
        self.emit(SendSetpoint(self.vehicle.target, self.shaped(setpoint, now)))

    def send_now(self, setpoint: Setpoint, now: float) -> None:
        """Replace the setpoint and send it at once; the schedule carries on unchanged."""
        self.setpoint = setpoint
        self._envelope_noted = False
        if self.vehicle.target is not None and self.stream.running:
            self.emit(SendSetpoint(self.vehicle.target, self.shaped(setpoint, now)))
            self.stream.record_send(now)

    def shaped(self, setpoint: Setpoint, now: float) -> Setpoint:
        """What the envelope lets us stream for `setpoint` now (stopping at the fence);
        the first change per commanded setpoint is reported, not every tick."""
        try:
            out, why = self.envelope.shape(setpoint, self.vehicle, now)
        except SetpointError:  # cannot happen with finite inputs; never crash the stream
            out, why = setpoint, None
        if why is not None and not self._envelope_noted:
            self._envelope_noted = True
            self.emit(Notice(NoticeKind.WARNING, why[1], self.phase, why[0]))
        return out

    def stop_stream(self) -> None:
        self.stream.stop()
        self.setpoint = None
        self.lease.end()
        self._warmup_end_s = None

    # -- endings -----------------------------------------------------------------------------

    def _fail_pending(self, reason: Reason, message: str) -> None:
        """Answer every operator command still waiting for the FC: it will not happen."""
        if self._engage_id is not None:
            self.emit(Reply.failure(self._engage_id, reason, message))
            self._engage_id = None
        if self._handover is not None:
            if self._handover.command_id is not None:
                self.emit(Reply.failure(self._handover.command_id, reason, message))
            self._handover = None
        if self._pending_arm is not None:
            self.emit(Reply.failure(self._pending_arm.command_id, reason, message))
            self._pending_arm = None

    def preempt(self, reason: Reason, message: str) -> None:
        """The FC took control away: stop at once and never take it back by ourselves."""
        self.stop_stream()
        self._fail_pending(reason, message)
        self.enter(Phase.PREEMPTED, reason, message + "; stopped streaming")

    def fail_engage(self, reason: Reason, message: str) -> None:
        self.stop_stream()
        if self._engage_id is not None:
            self.emit(Reply.failure(self._engage_id, reason, message))
            self._engage_id = None
        self.enter(Phase.IDLE, reason, f"engage failed: {message}")

    def start_handover(
        self,
        chain: tuple[Px4Mode, ...],
        command_id: str | None,
        success_phase: Phase,
        success_reason: Reason,
        now: float,
    ) -> None:
        """Ask the FC for chain[0] (escalating on refusal); streaming goes on, if it was on,
        until the FC reports the mode, so PX4 never sees an offboard loss meanwhile."""
        if self._handover is not None and self._handover.command_id is not None:
            self.emit(
                Reply.failure(
                    self._handover.command_id, Reason.SUPERSEDED, "superseded by a newer command"
                )
            )
        self.lease.end()
        if not self.stream.running:
            # Not flying it ourselves: ask for exactly the mode requested, no escalation.
            chain = chain[:1]
        retrier = self.new_mode_retrier()
        retrier.begin(now)
        self._handover = Handover(
            chain,
            retrier,
            self.stream.running,
            success_phase,
            success_reason,
            command_id,
            self.vehicle.custom_mode,
        )
        self.enter(Phase.RELEASING, success_reason, f"requesting {chain[0].label}")
