"""Operator commands: which phase allows which command (a table, h11 style), and what an
accepted command does to the engine.

A command the phase does not allow gets a coded refusal naming phase and command, and
does not renew the lease: only accepted commands do. Replies that depend on the FC
(engage, arm, a mode) are sent later, when the outcome is known. Pure.
"""

from __future__ import annotations

from offboardd.core.actions import ArmDisarm, Notice, NoticeKind, Reply
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
from offboardd.core.engine_state import EngineCore, PendingArm
from offboardd.core.reasons import STREAMING_PHASES, Phase, Reason
from offboardd.core.setpoints import Setpoint
from offboardd.core.settings import ESCALATION

_ALL = frozenset(Phase)
_NOT_ENGAGED = frozenset({Phase.IDLE, Phase.FAILSAFE, Phase.PREEMPTED})

ALLOWED: dict[CommandKind, frozenset[Phase]] = {
    CommandKind.ENGAGE: _NOT_ENGAGED,
    CommandKind.SETPOINT: STREAMING_PHASES,
    CommandKind.RELEASE: STREAMING_PHASES,
    CommandKind.HOLD: _ALL,
    CommandKind.LAND: _ALL,
    CommandKind.RTL: _ALL,
    CommandKind.ARM: _NOT_ENGAGED | {Phase.ACTIVE},
    CommandKind.DISARM: _NOT_ENGAGED | {Phase.ACTIVE},
    CommandKind.EMERGENCY_STOP: _ALL,
    CommandKind.HEARTBEAT: _ALL,
}

_HANDOVERS: dict[CommandKind, tuple[str | None, Reason]] = {
    CommandKind.RELEASE: (None, Reason.RELEASED),  # None: the configured release_mode
    CommandKind.HOLD: ("hold", Reason.COMMANDED_HOLD),
    CommandKind.LAND: ("land", Reason.COMMANDED_LAND),
    CommandKind.RTL: ("rtl", Reason.COMMANDED_RTL),
}


class EngineCommands(EngineCore):
    def on_command(self, cmd: Command, now: float) -> None:
        if self.phase not in ALLOWED[cmd.kind]:
            self.emit(
                Reply.failure(
                    cmd.command_id,
                    Reason.PHASE_NOT_ALLOWED,
                    f"{cmd.kind.value} is not allowed in phase {self.phase.value}",
                )
            )
            return
        accepted: bool
        if isinstance(cmd, Engage):
            accepted = self._engage(cmd, now)
        elif isinstance(cmd, SetSetpoint):
            accepted = self._setpoint(cmd, now)
        elif isinstance(cmd, Release | Hold | Land | Rtl):
            accepted = self._handover_command(cmd, now)
        elif isinstance(cmd, Arm | Disarm):
            accepted = self._arm_disarm(cmd, now)
        elif isinstance(cmd, EmergencyStop):
            accepted = self._emergency_stop(cmd, now)
        else:
            assert isinstance(cmd, CommanderHeartbeat)
            held = self.lease.held
            self.emit(Reply.success(cmd.command_id, "lease renewed" if held else "no lease held"))
            accepted = True
        if accepted:
            self.lease.renew(now)

    def _refuse(self, command_id: str, reason: Reason, message: str) -> bool:
        self.emit(Reply.failure(command_id, reason, message))
        return False

    def _engage(self, cmd: Engage, now: float) -> bool:
        v = self.vehicle
        if not self.fc_up or v.target is None:
            return self._refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
        if not v.is_px4:
            return self._refuse(
                cmd.command_id,
                Reason.FC_NOT_PX4,
                f"the flight controller is autopilot type {v.autopilot}, not PX4 (12)",
            )
        blocker = self.checks.engage_blocker(self.settings.stream_period_s)
        if blocker is not None:
            return self._refuse(cmd.command_id, *blocker)
        setpoint: Setpoint | None = cmd.setpoint
        if setpoint is None:
            setpoint = v.hold_setpoint(now)
            if setpoint is None:
                return self._refuse(
                    cmd.command_id,
                    Reason.ESTIMATE_MISSING,
                    "engage without a setpoint holds the current position, "
                    "which needs a valid local position estimate",
                )
        elif not v.estimate_valid(setpoint.estimate, now):
            return self._refuse(
                cmd.command_id,
                Reason.ESTIMATE_MISSING,
                f"{setpoint.kind.value} needs a valid {setpoint.estimate.value} estimate",
            )
        admitted = self._admit(cmd.command_id, setpoint)
        if admitted is None:
            return False
        setpoint = admitted[0]
        self.envelope.inside_seen = False  # breach detection re-arms per engage
        self._engage_note = admitted[1]
        self._engage_id, self._engage_arm = cmd.command_id, cmd.arm
        self._mode_at_engage = v.custom_mode
        self._last_ack = None
        self.lease.grant(now)
        self.enter(
            Phase.WARMUP,
            None,
            f"streaming {setpoint.kind.value} for {self.settings.warmup_s:g} s before OFFBOARD",
        )
        self.start_stream(setpoint, now)
        self._warmup_end_s = now + self.settings.warmup_s
        return True

    def _setpoint(self, cmd: SetSetpoint, now: float) -> bool:
        sp = cmd.setpoint
        if not self.vehicle.estimate_valid(sp.estimate, now):
            return self._refuse(
                cmd.command_id,
                Reason.ESTIMATE_MISSING,
                f"{sp.kind.value} needs a valid {sp.estimate.value} estimate",
            )
        admitted = self._admit(cmd.command_id, sp)
        if admitted is None:
            return False
        sp, note = admitted
        self.send_now(sp, now)
        if self.phase is Phase.HOLDING:
            self.lease.grant(now)
            self.enter(Phase.ACTIVE, Reason.RESUMED, "a new setpoint resumed offboard control")
        self.emit(Reply.success(cmd.command_id, "setpoint accepted" + note))
        return True

    def _admit(self, command_id: str, sp: Setpoint) -> tuple[Setpoint, str] | None:
        """The envelope's verdict on a commanded setpoint: (what to fly, "; clamped: ..."
        for the reply) or None after a coded refusal. A clamp is also a WARNING notice,
        once per change of the clamped limits, so a 20 Hz commander does not flood."""
        blocker = self.envelope.blocker()
        if blocker is not None:
            self._refuse(command_id, *blocker)
            return None
        verdict = self.envelope.admit(sp)
        if verdict.setpoint is None:
            assert verdict.reason is not None
            self._refuse(command_id, verdict.reason, verdict.message)
            self._envelope_notice(verdict.reason, f"{sp.kind.value} {verdict.message}")
            return None
        limits = tuple(c.limit for c in verdict.clamps)
        if limits and limits != self._last_clamps:
            text = f"{sp.kind.value} {verdict.clamp_text()}"
            self._envelope_notice(verdict.clamps[0].reason, text)
        self._last_clamps = limits
        return verdict.setpoint, ("; " + verdict.clamp_text() if verdict.clamps else "")

    def _envelope_notice(self, reason: Reason, message: str) -> None:
        self.emit(Notice(NoticeKind.WARNING, message, self.phase, reason))

    def _handover_command(self, cmd: Release | Hold | Land | Rtl, now: float) -> bool:
        if self.vehicle.target is None:
            return self._refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
        chain_name, reason = _HANDOVERS[cmd.kind]
        chain = ESCALATION[chain_name or self.settings.release_mode.value]
        if self._engage_id is not None:
            self.emit(
                Reply.failure(self._engage_id, Reason.CANCELLED, f"cancelled by {cmd.kind.value}")
            )
            self._engage_id = None
        if self.phase is Phase.WARMUP:
            # OFFBOARD was never requested: nothing to hand back, just stop.
            self.stop_stream()
            if isinstance(cmd, Release):
                self.enter(Phase.IDLE, reason, "released during the warm-up")
                self.emit(Reply.success(cmd.command_id, "released", reason))
                return True
        self.start_handover(chain, cmd.command_id, Phase.IDLE, reason, now)
        return True

    def _arm_disarm(self, cmd: Arm | Disarm, now: float) -> bool:
        v = self.vehicle
        if v.target is None or not self.fc_up:
            return self._refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
        arm = isinstance(cmd, Arm)
        if v.armed == arm:
            self.emit(Reply.success(cmd.command_id, "already " + ("armed" if arm else "disarmed")))
            return True
        if self._pending_arm is not None:
            self.emit(
                Reply.failure(
                    self._pending_arm.command_id, Reason.SUPERSEDED, "superseded by a newer command"
                )
            )
        force = isinstance(cmd, Disarm) and cmd.force
        self.emit(ArmDisarm(v.target, arm=arm, force=force))
        self._pending_arm = PendingArm(
            cmd.command_id, arm, now + self.settings.arm_confirm_timeout_s
        )
        return True

    def _emergency_stop(self, cmd: EmergencyStop, now: float) -> bool:
        if not cmd.confirm:
            return self._refuse(
                cmd.command_id,
                Reason.CONFIRMATION_MISSING,
                "emergency_stop disarms in flight: it needs confirm=true",
            )
        v = self.vehicle
        if v.target is None:
            return self._refuse(cmd.command_id, Reason.FC_UNKNOWN, "no flight controller heard")
        message = "emergency stop: stopped streaming, force-disarming"
        streaming = self.stream.running or self.phase is Phase.RELEASING
        self._fail_pending(Reason.EMERGENCY_STOP, message)
        self.stop_stream()
        self.emit(ArmDisarm(v.target, arm=False, force=True))
        self._pending_arm = PendingArm(
            cmd.command_id, False, now + self.settings.arm_confirm_timeout_s
        )
        if streaming:
            self.enter(Phase.FAILSAFE, Reason.EMERGENCY_STOP, message)
        self.emit(Notice(NoticeKind.FAILSAFE, message, self.phase, Reason.EMERGENCY_STOP))
        if not v.armed:
            self._pending_arm = None
            self.emit(Reply.success(cmd.command_id, "disarmed (was not armed)"))
        return True
