"""Setpoint JSON (schema v1) <-> core setpoint values, with the wire's type and range rules.

A setpoint on the wire is a flat object with a `kind` and the core type's own field
names (units in the names), e.g.
`{"kind": "position_ned", "north_m": 5, "east_m": 0, "down_m": -10, "yaw_rad": 0}`.

Two layers, on purpose: the pydantic models here check structure, JSON types and the
wire's sanity ranges (below), then the core constructor checks what PX4 can fly (x/y
paired, unit quaternion, one of yaw or yaw rate...) and raises `SetpointError`. Pure.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    Attitude,
    BodyRates,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    SetpointKind,
    VelocityBody,
    VelocityNed,
)

# Wire sanity ranges: far beyond anything a multicopter flies, tight enough to catch unit
# mistakes (degrees sent as radians, mm as m) before they reach the engine.
LOCAL_POSITION_LIMIT_M = 100_000.0  # 100 km from the EKF origin
SPEED_LIMIT_M_S = 100.0
ACCELERATION_LIMIT_M_S2 = 100.0
YAW_LIMIT_RAD = 2 * math.pi
RATE_LIMIT_RAD_S = 20.0  # PX4's MC_*RATE_MAX defaults are well below (220 deg/s = 3.8 rad/s)
ALTITUDE_MIN_M, ALTITUDE_MAX_M = -1_000.0, 50_000.0

Meters = Annotated[float, Field(ge=-LOCAL_POSITION_LIMIT_M, le=LOCAL_POSITION_LIMIT_M)]
MetersPerSecond = Annotated[float, Field(ge=-SPEED_LIMIT_M_S, le=SPEED_LIMIT_M_S)]
MetersPerSecond2 = Annotated[
    float, Field(ge=-ACCELERATION_LIMIT_M_S2, le=ACCELERATION_LIMIT_M_S2)
]
Radians = Annotated[float, Field(ge=-YAW_LIMIT_RAD, le=YAW_LIMIT_RAD)]
RadiansPerSecond = Annotated[float, Field(ge=-RATE_LIMIT_RAD_S, le=RATE_LIMIT_RAD_S)]
QuaternionPart = Annotated[float, Field(ge=-1.0, le=1.0)]
Thrust = Annotated[float, Field(ge=0.0, le=1.0)]


class WireModel(BaseModel):
    """Strict: no unknown fields, no "1" for 1, no true for 1.0, no NaN/Infinity."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class PositionNedWire(WireModel):
    kind: Literal["position_ned"]
    north_m: Meters
    east_m: Meters
    down_m: Meters
    yaw_rad: Radians | None = None
    yaw_rate_rad_s: RadiansPerSecond | None = None


class VelocityNedWire(WireModel):
    kind: Literal["velocity_ned"]
    north_m_s: MetersPerSecond
    east_m_s: MetersPerSecond
    down_m_s: MetersPerSecond
    yaw_rad: Radians | None = None
    yaw_rate_rad_s: RadiansPerSecond | None = None


class VelocityBodyWire(WireModel):
    kind: Literal["velocity_body"]
    forward_m_s: MetersPerSecond
    right_m_s: MetersPerSecond
    down_m_s: MetersPerSecond
    yaw_rate_rad_s: RadiansPerSecond = 0.0


class AccelerationNedWire(WireModel):
    kind: Literal["acceleration_ned"]
    north_m_s2: MetersPerSecond2
    east_m_s2: MetersPerSecond2
    down_m_s2: MetersPerSecond2
    yaw_rad: Radians | None = None
    yaw_rate_rad_s: RadiansPerSecond | None = None


class PositionVelocityNedWire(WireModel):
    kind: Literal["position_velocity_ned"]
    north_m: Meters
    east_m: Meters
    down_m: Meters
    north_m_s: MetersPerSecond
    east_m_s: MetersPerSecond
    down_m_s: MetersPerSecond
    yaw_rad: Radians | None = None
    yaw_rate_rad_s: RadiansPerSecond | None = None
    north_m_s2: MetersPerSecond2 | None = None
    east_m_s2: MetersPerSecond2 | None = None
    down_m_s2: MetersPerSecond2 | None = None


class GlobalPositionWire(WireModel):
    kind: Literal["global_position"]
    lat_deg: Annotated[float, Field(ge=-90.0, le=90.0)]
    lon_deg: Annotated[float, Field(ge=-180.0, le=180.0)]
    alt_m: Annotated[float, Field(ge=ALTITUDE_MIN_M, le=ALTITUDE_MAX_M)]
    altitude_frame: Literal["amsl", "relative", "terrain"] = "amsl"
    yaw_rad: Radians | None = None
    yaw_rate_rad_s: RadiansPerSecond | None = None


class AttitudeWire(WireModel):
    kind: Literal["attitude"]
    w: QuaternionPart
    x: QuaternionPart
    y: QuaternionPart
    z: QuaternionPart
    thrust: Thrust


class BodyRatesWire(WireModel):
    kind: Literal["body_rates"]
    roll_rate_rad_s: RadiansPerSecond
    pitch_rate_rad_s: RadiansPerSecond
    yaw_rate_rad_s: RadiansPerSecond
    thrust: Thrust


# kind -> (wire model, core type); one row per SetpointKind (a test checks it is complete)
SETPOINT_TABLE: dict[str, tuple[type[WireModel], type[Any]]] = {
    SetpointKind.POSITION_NED: (PositionNedWire, PositionNed),
    SetpointKind.VELOCITY_NED: (VelocityNedWire, VelocityNed),
    SetpointKind.VELOCITY_BODY: (VelocityBodyWire, VelocityBody),
    SetpointKind.ACCELERATION_NED: (AccelerationNedWire, AccelerationNed),
    SetpointKind.POSITION_VELOCITY_NED: (PositionVelocityNedWire, PositionVelocityNed),
    SetpointKind.GLOBAL_POSITION: (GlobalPositionWire, GlobalPosition),
    SetpointKind.ATTITUDE: (AttitudeWire, Attitude),
    SetpointKind.BODY_RATES: (BodyRatesWire, BodyRates),
}


def setpoint_from_wire(model: WireModel) -> Setpoint:
    """Build the core value; raises `SetpointError` when PX4 could not fly it."""
    fields = model.model_dump()
    kind = fields.pop("kind")
    core_type = SETPOINT_TABLE[kind][1]
    if core_type is GlobalPosition:
        fields["altitude_frame"] = AltitudeFrame(fields["altitude_frame"])
    setpoint: Setpoint = core_type(**fields)
    return setpoint


def setpoint_to_wire(setpoint: Setpoint) -> dict[str, Any]:
    """The JSON object for a core setpoint (optional fields left out when unset)."""
    wire_model = SETPOINT_TABLE[setpoint.kind][0]
    doc: dict[str, Any] = {"kind": str(setpoint.kind)}
    for name in wire_model.model_fields:
        if name == "kind":
            continue
        value = getattr(setpoint, name)
        if value is None:
            continue
        doc[name] = str(value) if isinstance(value, AltitudeFrame) else value
    return doc
