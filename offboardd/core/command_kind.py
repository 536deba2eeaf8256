"""The names of operator commands, and the check every command id passes."""

from __future__ import annotations

from enum import StrEnum

from offboardd.errors import UsageError


class CommandKind(StrEnum):
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
    # motions the daemon plans and flies itself (motion_commands.py)
    GOTO = "goto"
    PATH = "path"
    ORBIT = "orbit"
    STOP = "stop"


def check_command_id(command_id: str) -> None:
    if not isinstance(command_id, str) or not command_id:
        raise UsageError(f"command_id must be a non-empty string, got {command_id!r}")
