"""Motion commands: "fly this" once, and the daemon plans and streams it (issue 16).

`goto` a point, follow a `path` of waypoints with rounded corners, `orbit` a centre,
`stop` smoothly where the vehicle is. Values only, validated on construction (a bad
value raises MotionError naming the field); planning is motion.py's, and whether a
command is allowed now is the engine's table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, TypeAlias

from offboardd.core.command_kind import CommandKind, check_command_id
from offboardd.core.setpoints import GlobalPosition, PositionNed
from offboardd.errors import ErrorCode, UsageError

MAX_WAYPOINTS = 500
MAX_SPEED_M_S = 30.0
MAX_TURNS = 100.0
MAX_RADIUS_M = 10_000.0

Place: TypeAlias = PositionNed | GlobalPosition  # where a motion goes (yaw fields ignored)


class MotionError(UsageError):
    """A motion command with a value no vehicle can fly (before any planning)."""

    code = ErrorCode.COMMAND_INVALID


class YawMode(StrEnum):
    KEEP = "keep"  # the heading when the motion starts
    FACE_TRAVEL = "face_travel"  # along the path's horizontal direction
    FACE_CENTER = "face_center"  # an orbit's centre
    FIXED = "fixed"  # `yaw_rad`


@dataclass(frozen=True)
class Yaw:
    mode: YawMode = YawMode.KEEP
    yaw_rad: float | None = None  # FIXED only

    def __post_init__(self) -> None:
        if (self.mode is YawMode.FIXED) != (self.yaw_rad is not None):
            raise MotionError("yaw: a fixed yaw needs yaw_deg, and only a fixed one has it")
        if self.yaw_rad is not None and not math.isfinite(self.yaw_rad):
            raise MotionError(f"yaw: yaw_deg must be finite, got {self.yaw_rad!r}")


KEEP_YAW = Yaw()
FACE_CENTER_YAW = Yaw(YawMode.FACE_CENTER)


def _positive(name: str, value: float, high: float, *, zero_ok: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MotionError(f"{name} must be a finite number, got {value!r}")
    if not (value >= 0.0 if zero_ok else value > 0.0) or value > high:
        low = "0" if zero_ok else "more than 0"
        raise MotionError(f"{name} must be {low} and at most {high:g}, got {value:g}")


def _place(name: str, value: object) -> None:
    if not isinstance(value, PositionNed | GlobalPosition):
        raise MotionError(f"{name} must be a position_ned or global_position, got {value!r}")


@dataclass(frozen=True)
class Goto:
    """Fly in a straight line to `target` at up to `speed_m_s`, then hold there. With
    `engage`, starts offboard control like an engage (and arms with `arm`)."""

    command_id: str
    target: Place
    speed_m_s: float = 2.0
    yaw: Yaw = KEEP_YAW
    engage: bool = False
    arm: bool = False
    resume: str | None = None  # the HOLDING token that resumes (SetSetpoint says why)
    kind: ClassVar[CommandKind] = CommandKind.GOTO

    def __post_init__(self) -> None:
        check_command_id(self.command_id)
        _place("target", self.target)
        _positive("speed_m_s", self.speed_m_s, MAX_SPEED_M_S)
        if self.yaw.mode is YawMode.FACE_CENTER:
            raise MotionError("yaw face_center is an orbit's; goto has keep, face_travel, yaw_deg")


@dataclass(frozen=True)
class FollowPath:
    """Fly through `waypoints` in order, corners rounded with `corner_radius_m` (0: stop
    at each), at up to `speed_m_s`, then hold at the last."""

    command_id: str
    waypoints: tuple[Place, ...]
    speed_m_s: float = 2.0
    corner_radius_m: float = 1.0
    yaw: Yaw = KEEP_YAW
    engage: bool = False
    arm: bool = False
    resume: str | None = None
    kind: ClassVar[CommandKind] = CommandKind.PATH

    def __post_init__(self) -> None:
        check_command_id(self.command_id)
        if not 1 <= len(self.waypoints) <= MAX_WAYPOINTS:
            raise MotionError(f"waypoints: 1 to {MAX_WAYPOINTS}, got {len(self.waypoints)}")
        for i, wp in enumerate(self.waypoints):
            _place(f"waypoints[{i}]", wp)
        _positive("speed_m_s", self.speed_m_s, MAX_SPEED_M_S)
        _positive("corner_radius_m", self.corner_radius_m, MAX_RADIUS_M, zero_ok=True)
        if self.yaw.mode is YawMode.FACE_CENTER:
            raise MotionError("yaw face_center is an orbit's; path has keep, face_travel, yaw_deg")


@dataclass(frozen=True)
class Orbit:
    """Fly to the circle of `radius_m` around `center` (at its altitude), `turns` times
    round it (clockwise seen from above unless not), then hold where it ends."""

    command_id: str
    center: Place
    radius_m: float
    speed_m_s: float = 2.0
    turns: float = 1.0
    clockwise: bool = True
    yaw: Yaw = FACE_CENTER_YAW
    resume: str | None = None
    kind: ClassVar[CommandKind] = CommandKind.ORBIT

    def __post_init__(self) -> None:
        check_command_id(self.command_id)
        _place("center", self.center)
        _positive("radius_m", self.radius_m, MAX_RADIUS_M)
        if self.radius_m < 0.5:
            raise MotionError(f"radius_m must be at least 0.5, got {self.radius_m:g}")
        _positive("speed_m_s", self.speed_m_s, MAX_SPEED_M_S)
        _positive("turns", self.turns, MAX_TURNS)


@dataclass(frozen=True)
class Stop:
    """Stop smoothly (jerk-limited) where the vehicle is going, then hold there."""

    command_id: str
    resume: str | None = None
    kind: ClassVar[CommandKind] = CommandKind.STOP

    def __post_init__(self) -> None:
        check_command_id(self.command_id)


MotionCommand: TypeAlias = Goto | FollowPath | Orbit | Stop
MOTION_TYPES: tuple[type[MotionCommand], ...] = (Goto, FollowPath, Orbit, Stop)
