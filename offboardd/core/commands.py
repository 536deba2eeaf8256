"""Operator commands, as the MQTT bridge (or a test) hands them to the engine.

Each carries the `command_id` its reply will quote. Values only: whether a command is
allowed now is the engine's decision (offboard.py), not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from offboardd.core.command_kind import CommandKind, check_command_id
from offboardd.core.motion_commands import MOTION_TYPES, MotionCommand
from offboardd.core.setpoints import Setpoint

__all__ = [  # CommandKind is re-exported: the name every reader imports from here
    "COMMAND_TYPES", "Arm", "Command", "CommandKind", "CommanderHeartbeat", "Disarm",
    "EmergencyStop", "Engage", "Hold", "Land", "Release", "Rtl", "SetSetpoint",
]


@dataclass(frozen=True)
class Engage:
    """Start offboard control: stream `setpoint` (None = hold where the vehicle is, which
    needs a valid local position), request OFFBOARD after the warm-up, then arm if asked.
    An offboard takeoff is an engage with arm=True and a setpoint above the vehicle."""

    command_id: str
    setpoint: Setpoint | None = None
    arm: bool = False
    resume: str | None = None  # the token, needed from FAILSAFE / PREEMPTED (machine_table)
    kind: ClassVar[CommandKind] = CommandKind.ENGAGE

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class SetSetpoint:
    """Replace the streamed setpoint (sent at once). From HOLDING it resumes only when
    `resume` quotes the token the daemon published after the lapse (a live commander)."""

    command_id: str
    setpoint: Setpoint
    resume: str | None = None
    kind: ClassVar[CommandKind] = CommandKind.SETPOINT

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class Release:
    """Hand the vehicle back: request the configured release mode, confirm, stop."""

    command_id: str
    kind: ClassVar[CommandKind] = CommandKind.RELEASE

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class Hold:
    """Release into AUTO.LOITER (escalating to AUTO.LAND if PX4 refuses)."""

    command_id: str
    # After a pilot, a GCS or a failsafe took the vehicle, the token made then (as `Arm`):
    # one written before, delivered late, must not switch a pilot's vehicle to a mode.
    resume: str | None = None
    kind: ClassVar[CommandKind] = CommandKind.HOLD

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class Land:
    """Release into AUTO.LAND."""

    command_id: str
    resume: str | None = None  # the token after a takeover, as `Hold`
    kind: ClassVar[CommandKind] = CommandKind.LAND

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class Rtl:
    """Release into AUTO.RTL (escalating to Hold, then Land, if PX4 refuses)."""

    command_id: str
    resume: str | None = None  # the token after a takeover, as `Hold`
    kind: ClassVar[CommandKind] = CommandKind.RTL

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class Arm:
    command_id: str
    # After a pilot, a GCS or a failsafe took the vehicle (or disarmed it), an arm must quote
    # the token made then: one written before, delivered late, would re-arm a vehicle
    # someone just disarmed (found by review).
    resume: str | None = None
    kind: ClassVar[CommandKind] = CommandKind.ARM

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class Disarm:
    """Disarm; `force` sends PX4's magic 21196 (which over MAVLink still runs checks, §4)."""

    command_id: str
    force: bool = False
    kind: ClassVar[CommandKind] = CommandKind.DISARM

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class EmergencyStop:
    """Stop streaming and force-disarm at once, whatever the phase: the vehicle falls.
    Refused unless `confirm` is True, so no client sends it by accident."""

    command_id: str
    confirm: bool = False
    kind: ClassVar[CommandKind] = CommandKind.EMERGENCY_STOP

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


@dataclass(frozen=True)
class CommanderHeartbeat:
    """Renew the commander lease without changing anything (never resumes from HOLDING).

    `ack=False`: the commander wants a reply only when the heartbeat is refused (a lease
    kept alive 4 times a second needs no "ok" back each time; a lapsed lease must be heard).
    """

    command_id: str
    ack: bool = True
    kind: ClassVar[CommandKind] = CommandKind.HEARTBEAT

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


Command: TypeAlias = (
    Engage
    | SetSetpoint
    | Release
    | Hold
    | Land
    | Rtl
    | Arm
    | Disarm
    | EmergencyStop
    | CommanderHeartbeat
    | MotionCommand
)

COMMAND_TYPES: tuple[type[Command], ...] = (
    Engage,
    SetSetpoint,
    Release,
    Hold,
    Land,
    Rtl,
    Arm,
    Disarm,
    EmergencyStop,
    CommanderHeartbeat,
    *MOTION_TYPES,
)
