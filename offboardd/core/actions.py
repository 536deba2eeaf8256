"""What the engine asks its shell to do. Values only.

FC-bound actions carry their `Target` (the autopilot's sysid/compid from its HEARTBEAT:
PX4 ignores commands aimed at system 0, §4), so mavlink/translate_out can build the
message without knowing engine state. `Reply` answers one operator command; `Notice` is
an operator-visible event with fixed keys (see `Notice.as_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason, error_code_for
from offboardd.core.setpoints import Setpoint
from offboardd.errors import ErrorCode

# MAVLink message ids the engine asks about (common.xml / development.xml).
AUTOPILOT_VERSION_ID = 148
CURRENT_MODE_ID = 436


@dataclass(frozen=True)
class Target:
    system_id: int
    component_id: int


@dataclass(frozen=True)
class SendSetpoint:
    target: Target
    setpoint: Setpoint


@dataclass(frozen=True)
class SendCompanionHeartbeat:
    """HEARTBEAT type ONBOARD_CONTROLLER (18), autopilot INVALID (8), 1 Hz (§5). The
    shell's codec must send it as (system_id, component_id)."""

    system_id: int
    component_id: int


@dataclass(frozen=True)
class RequestMode:
    """MAV_CMD_DO_SET_MODE with PX4's custom (main, sub) mode."""

    target: Target
    mode: Px4Mode


@dataclass(frozen=True)
class ArmDisarm:
    """MAV_CMD_COMPONENT_ARM_DISARM; `force` adds 21196 (disarm only)."""

    target: Target
    arm: bool
    force: bool = False


@dataclass(frozen=True)
class RequestParams:
    """PARAM_REQUEST_READ by name, one message per name."""

    target: Target
    names: tuple[str, ...]


@dataclass(frozen=True)
class RequestMessage:
    """MAV_CMD_REQUEST_MESSAGE (512) for `message_id`."""

    target: Target
    message_id: int


@dataclass(frozen=True)
class SetMessageInterval:
    """MAV_CMD_SET_MESSAGE_INTERVAL (511)."""

    target: Target
    message_id: int
    interval_us: int


@dataclass(frozen=True)
class Reply:
    """The answer to one operator command. `code` is None exactly when `ok`."""

    command_id: str
    ok: bool
    message: str
    code: ErrorCode | None = None
    reason: Reason | None = None
    # The token to quote next: on a not_in_control refusal, and on the outcome of a command
    # that left the vehicle taken (failsafe / preempted: OffboardEngine.reply_token)
    resume: str | None = None

    @staticmethod
    def success(command_id: str, message: str, reason: Reason | None = None, *,
                resume: str | None = None) -> Reply:
        return Reply(command_id, True, message, None, reason, resume)

    @staticmethod
    def failure(command_id: str, reason: Reason, message: str, *,
                resume: str | None = None) -> Reply:
        return Reply(command_id, False, message, error_code_for(reason), reason, resume)


class NoticeKind(StrEnum):
    TRANSITION = "transition"  # the phase changed
    FAILSAFE = "failsafe"  # a failsafe step (hold, loss action, escalation) was taken
    FC_STATUSTEXT = "fc_statustext"  # a STATUSTEXT from the FC, joined
    FC_LINK = "fc_link"  # the FC appeared, vanished or rebooted
    WARNING = "warning"  # a surprising FC setting, an unreadable parameter...
    MOTION_DONE = "motion_done"  # a goto / path / orbit / stop reached its end
    MOTION_ABORTED = "motion_aborted"  # ... or ended before it (replaced, lease, takeover)


@dataclass(frozen=True)
class Notice:
    kind: NoticeKind
    message: str
    phase: Phase
    reason: Reason | None = None
    previous_phase: Phase | None = None
    severity: int | None = None  # MAV_SEVERITY for FC_STATUSTEXT
    command_id: str | None = None  # the motion command a MOTION_* notice is about

    def as_dict(self) -> dict[str, str | int | None]:
        """Fixed keys, JSON-friendly: what the MQTT layer publishes and the logs record."""
        return {
            "kind": self.kind.value,
            "message": self.message,
            "phase": self.phase.value,
            "reason": None if self.reason is None else self.reason.value,
            "previous_phase": None if self.previous_phase is None else self.previous_phase.value,
            "severity": self.severity,
            "command_id": self.command_id,
        }


FcAction: TypeAlias = (
    SendSetpoint
    | SendCompanionHeartbeat
    | RequestMode
    | ArmDisarm
    | RequestParams
    | RequestMessage
    | SetMessageInterval
)

Action: TypeAlias = FcAction | Reply | Notice
