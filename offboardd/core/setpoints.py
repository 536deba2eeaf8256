"""Setpoint value types: frozen, validated on construction, units in every field name.

A constructed setpoint is always one PX4 accepts *and* its multicopter controller can
fly (px4-offboard.md §1): finite numbers, x/y paired, every axis covered, thrust in
[0, 1], a unit quaternion; anything else raises `SetpointError` naming the field. So a
setpoint PX4 would drop or fail safe on cannot even exist, let alone leave the daemon.

Pure values only: the MAVLink frame and type_mask for each kind live in
`offboardd.mavlink.translate_out`; this module must not import pymavlink.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, TypeAlias

from offboardd.errors import SetpointError

# Accept a quaternion whose norm is this close to 1 (float rounding in clients) and store
# it exactly normalised; anything further off is a bug in the client and is refused.
_QUATERNION_NORM_TOLERANCE = 1e-3


class SetpointKind(StrEnum):
    POSITION_NED = "position_ned"
    VELOCITY_NED = "velocity_ned"
    VELOCITY_BODY = "velocity_body"
    ACCELERATION_NED = "acceleration_ned"
    POSITION_VELOCITY_NED = "position_velocity_ned"
    GLOBAL_POSITION = "global_position"
    ATTITUDE = "attitude"
    BODY_RATES = "body_rates"


class EstimateNeed(StrEnum):
    """The estimate PX4 needs valid before it runs offboard with this kind (§1)."""

    LOCAL_POSITION = "local_position"
    LOCAL_VELOCITY = "local_velocity"
    GLOBAL_POSITION = "global_position"
    # A global position and PX4's terrain estimate: without it PX4 drops a terrain-altitude
    # setpoint silently (mavlink_receiver.cpp), so OFFBOARD is lost to the loss failsafe.
    TERRAIN = "terrain"
    NONE = "none"


class AltitudeFrame(StrEnum):
    """GlobalPosition altitude reference: MAV_FRAME_GLOBAL_INT (5, AMSL), ..._RELATIVE_ALT_INT
    (6, above home: needs home) or ..._TERRAIN_ALT_INT (11, needs terrain estimate)."""

    AMSL = "amsl"
    RELATIVE = "relative"
    TERRAIN = "terrain"


def _finite(owner: object, **fields: float | None) -> None:
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SetpointError(f"{type(owner).__name__}.{name} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise SetpointError(f"{type(owner).__name__}.{name} must be finite, got {value!r}")


def _yaw(owner: object, yaw_rad: float | None, yaw_rate_rad_s: float | None) -> None:
    _finite(owner, yaw_rad=yaw_rad, yaw_rate_rad_s=yaw_rate_rad_s)
    if yaw_rad is not None and yaw_rate_rad_s is not None:
        # PX4 flies the yaw angle and ignores the rate when both are given: refuse the
        # ambiguity rather than silently drop half of what the commander asked for.
        raise SetpointError(f"{type(owner).__name__}: give yaw_rad or yaw_rate_rad_s, not both")


def _thrust(owner: object, thrust: float) -> None:
    _finite(owner, thrust=thrust)
    if not 0.0 <= thrust <= 1.0:
        raise SetpointError(f"{type(owner).__name__}.thrust must be in [0, 1], got {thrust!r}")


@dataclass(frozen=True)
class PositionNed:
    """Local NED position (m from the EKF origin), optional yaw angle or yaw rate."""

    north_m: float
    east_m: float
    down_m: float
    yaw_rad: float | None = None
    yaw_rate_rad_s: float | None = None

    kind: ClassVar[SetpointKind] = SetpointKind.POSITION_NED
    estimate: ClassVar[EstimateNeed] = EstimateNeed.LOCAL_POSITION

    def __post_init__(self) -> None:
        _finite(self, north_m=self.north_m, east_m=self.east_m, down_m=self.down_m)
        _yaw(self, self.yaw_rad, self.yaw_rate_rad_s)


@dataclass(frozen=True)
class VelocityNed:
    """Local NED velocity (m/s), optional yaw angle or yaw rate."""

    north_m_s: float
    east_m_s: float
    down_m_s: float
    yaw_rad: float | None = None
    yaw_rate_rad_s: float | None = None

    kind: ClassVar[SetpointKind] = SetpointKind.VELOCITY_NED
    estimate: ClassVar[EstimateNeed] = EstimateNeed.LOCAL_VELOCITY

    def __post_init__(self) -> None:
        _finite(self, north_m_s=self.north_m_s, east_m_s=self.east_m_s, down_m_s=self.down_m_s)
        _yaw(self, self.yaw_rad, self.yaw_rate_rad_s)


@dataclass(frozen=True)
class VelocityBody:
    """Velocity in MAV_FRAME_BODY_NED (8): forward/right along the heading, down; plus a
    yaw rate. PX4 rotates it by heading only (§1), so forward stays level when pitched."""

    forward_m_s: float
    right_m_s: float
    down_m_s: float
    yaw_rate_rad_s: float = 0.0

    kind: ClassVar[SetpointKind] = SetpointKind.VELOCITY_BODY
    estimate: ClassVar[EstimateNeed] = EstimateNeed.LOCAL_VELOCITY

    def __post_init__(self) -> None:
        _finite(
            self,
            forward_m_s=self.forward_m_s,
            right_m_s=self.right_m_s,
            down_m_s=self.down_m_s,
            yaw_rate_rad_s=self.yaw_rate_rad_s,
        )


@dataclass(frozen=True)
class AccelerationNed:
    """Local NED acceleration (m/s²), optional yaw angle or yaw rate."""

    north_m_s2: float
    east_m_s2: float
    down_m_s2: float
    yaw_rad: float | None = None
    yaw_rate_rad_s: float | None = None

    kind: ClassVar[SetpointKind] = SetpointKind.ACCELERATION_NED
    # PX4 commander checks local velocity validity for an acceleration-only setpoint.
    estimate: ClassVar[EstimateNeed] = EstimateNeed.LOCAL_VELOCITY

    def __post_init__(self) -> None:
        _finite(
            self, north_m_s2=self.north_m_s2, east_m_s2=self.east_m_s2, down_m_s2=self.down_m_s2
        )
        _yaw(self, self.yaw_rad, self.yaw_rate_rad_s)


@dataclass(frozen=True)
class PositionVelocityNed:
    """Position with velocity feed-forward (and optional acceleration feed-forward)."""

    north_m: float
    east_m: float
    down_m: float
    north_m_s: float
    east_m_s: float
    down_m_s: float
    yaw_rad: float | None = None
    yaw_rate_rad_s: float | None = None
    north_m_s2: float | None = None
    east_m_s2: float | None = None
    down_m_s2: float | None = None

    kind: ClassVar[SetpointKind] = SetpointKind.POSITION_VELOCITY_NED
    estimate: ClassVar[EstimateNeed] = EstimateNeed.LOCAL_POSITION

    def __post_init__(self) -> None:
        _finite(
            self,
            north_m=self.north_m,
            east_m=self.east_m,
            down_m=self.down_m,
            north_m_s=self.north_m_s,
            east_m_s=self.east_m_s,
            down_m_s=self.down_m_s,
            north_m_s2=self.north_m_s2,
            east_m_s2=self.east_m_s2,
            down_m_s2=self.down_m_s2,
        )
        _yaw(self, self.yaw_rad, self.yaw_rate_rad_s)
        given = [v is not None for v in (self.north_m_s2, self.east_m_s2, self.down_m_s2)]
        if any(given) and not all(given):
            # ax without ay makes PX4's position controller reject the setpoint (§1).
            raise SetpointError(
                "PositionVelocityNed: acceleration feed-forward needs all of "
                "north_m_s2, east_m_s2 and down_m_s2, or none"
            )

    @property
    def has_acceleration(self) -> bool:
        return self.north_m_s2 is not None


@dataclass(frozen=True)
class GlobalPosition:
    """WGS84 latitude/longitude (degrees) and altitude (m) in the given frame."""

    lat_deg: float
    lon_deg: float
    alt_m: float
    altitude_frame: AltitudeFrame = AltitudeFrame.AMSL
    yaw_rad: float | None = None
    yaw_rate_rad_s: float | None = None

    kind: ClassVar[SetpointKind] = SetpointKind.GLOBAL_POSITION

    @property
    def estimate(self) -> EstimateNeed:
        """PX4 flies a terrain altitude only with a valid terrain estimate (§1: GLOBAL_INT);
        without one it drops the message: no proof of life, the vehicle leaves OFFBOARD
        (measured on PX4 v1.17.0 SIH: AUTO.RTL within 4 s)."""
        if self.altitude_frame is AltitudeFrame.TERRAIN:
            return EstimateNeed.TERRAIN
        return EstimateNeed.GLOBAL_POSITION

    def __post_init__(self) -> None:
        _finite(self, lat_deg=self.lat_deg, lon_deg=self.lon_deg, alt_m=self.alt_m)
        if not -90.0 <= self.lat_deg <= 90.0:
            raise SetpointError(f"GlobalPosition.lat_deg must be in [-90, 90], got {self.lat_deg}")
        if not -180.0 <= self.lon_deg <= 180.0:
            raise SetpointError(
                f"GlobalPosition.lon_deg must be in [-180, 180], got {self.lon_deg}"
            )
        if not isinstance(self.altitude_frame, AltitudeFrame):
            raise SetpointError(
                "GlobalPosition.altitude_frame must be one of "
                f"{[f.value for f in AltitudeFrame]}, got {self.altitude_frame!r}"
            )
        _yaw(self, self.yaw_rad, self.yaw_rate_rad_s)


def _normalised_quaternion(
    owner: object, w: float, x: float, y: float, z: float
) -> tuple[float, float, float, float]:
    _finite(owner, w=w, x=x, y=y, z=z)
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if abs(norm - 1.0) > _QUATERNION_NORM_TOLERANCE:
        raise SetpointError(
            f"{type(owner).__name__}: quaternion (w, x, y, z) must have norm 1 "
            f"(±{_QUATERNION_NORM_TOLERANCE}), got {norm:.6f}"
        )
    return w / norm, x / norm, y / norm, z / norm


@dataclass(frozen=True)
class Attitude:
    """Attitude quaternion (w, x, y, z; body FRD to NED) and collective thrust in [0, 1].

    The quaternion is stored exactly normalised. Thrust always travels in the scalar
    field: THROTTLE_IGNORE would make a multicopter's thrust zero (§1).
    """

    w: float
    x: float
    y: float
    z: float
    thrust: float

    kind: ClassVar[SetpointKind] = SetpointKind.ATTITUDE
    estimate: ClassVar[EstimateNeed] = EstimateNeed.NONE

    def __post_init__(self) -> None:
        q = _normalised_quaternion(self, self.w, self.x, self.y, self.z)
        for name, value in zip(("w", "x", "y", "z"), q, strict=True):
            object.__setattr__(self, name, value)
        _thrust(self, self.thrust)

    @property
    def quaternion(self) -> tuple[float, float, float, float]:
        return self.w, self.x, self.y, self.z


@dataclass(frozen=True)
class BodyRates:
    """Body roll/pitch/yaw rates (rad/s, FRD) and collective thrust in [0, 1]."""

    roll_rate_rad_s: float
    pitch_rate_rad_s: float
    yaw_rate_rad_s: float
    thrust: float

    kind: ClassVar[SetpointKind] = SetpointKind.BODY_RATES
    estimate: ClassVar[EstimateNeed] = EstimateNeed.NONE

    def __post_init__(self) -> None:
        _finite(
            self,
            roll_rate_rad_s=self.roll_rate_rad_s,
            pitch_rate_rad_s=self.pitch_rate_rad_s,
            yaw_rate_rad_s=self.yaw_rate_rad_s,
        )
        _thrust(self, self.thrust)


Setpoint: TypeAlias = (
    PositionNed
    | VelocityNed
    | VelocityBody
    | AccelerationNed
    | PositionVelocityNed
    | GlobalPosition
    | Attitude
    | BodyRates
)

SETPOINT_TYPES: tuple[type[Setpoint], ...] = (
    PositionNed,
    VelocityNed,
    VelocityBody,
    AccelerationNed,
    PositionVelocityNed,
    GlobalPosition,
    Attitude,
    BodyRates,
)
