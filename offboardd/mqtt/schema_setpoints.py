"""Setpoint JSON (schema v1) <-> core setpoint values, with the wire's type and range rules.

A setpoint on the wire is a flat object with a `kind` and the core type's own field
names (units in the names), e.g.
`{"kind": "position_ned", "north_m": 5, "east_m": 0, "down_m": -10, "yaw_rad": 0}`.

Two layers, on purpose: the field specs here (checked by `schema_fields`) cover
structure, JSON types and the wire's sanity ranges (below), then the core constructor
checks what PX4 can fly (x/y paired, unit quaternion, one of yaw or yaw rate...) and
raises `SetpointError`. Declarations only: the checking rules live in `schema_fields`,
the commands around a setpoint in `schema`. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

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
from offboardd.mqtt.schema_fields import REQUIRED, FieldSpec, ObjectSpec, choice, number

# Wire sanity ranges: far beyond anything a multicopter flies, tight enough to catch unit
# mistakes (degrees sent as radians, mm as m) before they reach the engine.
LOCAL_POSITION_LIMIT_M = 100_000.0  # 100 km from the EKF origin
SPEED_LIMIT_M_S = 100.0
ACCELERATION_LIMIT_M_S2 = 100.0
YAW_LIMIT_RAD = 2 * math.pi
RATE_LIMIT_RAD_S = 20.0  # PX4's MC_*RATE_MAX defaults are well below (220 deg/s = 3.8 rad/s)
ALTITUDE_MIN_M, ALTITUDE_MAX_M = -1_000.0, 50_000.0


def _meters(name: str) -> FieldSpec:
    return number(name, -LOCAL_POSITION_LIMIT_M, LOCAL_POSITION_LIMIT_M)


def _speed(name: str) -> FieldSpec:
    return number(name, -SPEED_LIMIT_M_S, SPEED_LIMIT_M_S)


def _acceleration(name: str, default: Any = REQUIRED) -> FieldSpec:
    return number(name, -ACCELERATION_LIMIT_M_S2, ACCELERATION_LIMIT_M_S2, default)


def _rate(name: str, default: Any = REQUIRED) -> FieldSpec:
    return number(name, -RATE_LIMIT_RAD_S, RATE_LIMIT_RAD_S, default)


def _unit(name: str, low: float = -1.0) -> FieldSpec:
    """A quaternion part (-1..1) or a thrust (0..1)."""
    return number(name, low, 1.0)


# Optional heading: a yaw angle or a yaw rate (the core refuses both at once).
_YAW = (number("yaw_rad", -YAW_LIMIT_RAD, YAW_LIMIT_RAD, None), _rate("yaw_rate_rad_s", None))
# Optional acceleration feed-forward (the core wants all three or none).
_FEED_FORWARD = tuple(_acceleration(f"{axis}_m_s2", None) for axis in ("north", "east", "down"))


def _object(kind: SetpointKind, *fields: FieldSpec) -> ObjectSpec:
    return ObjectSpec(str(kind), (choice("kind", str(kind)), *fields))


_K = SetpointKind
# kind -> (field specs, core type); one row per SetpointKind (a test checks it is complete).
# A spec's field order is the order its fields are checked in: it decides which error of
# a document with several is reported.
SETPOINT_TABLE: dict[str, tuple[ObjectSpec, type[Any]]] = {
    _K.POSITION_NED: (_object(
        _K.POSITION_NED, _meters("north_m"), _meters("east_m"), _meters("down_m"), *_YAW,
    ), PositionNed),
    _K.VELOCITY_NED: (_object(
        _K.VELOCITY_NED, _speed("north_m_s"), _speed("east_m_s"), _speed("down_m_s"), *_YAW,
    ), VelocityNed),
    _K.VELOCITY_BODY: (_object(
        _K.VELOCITY_BODY, _speed("forward_m_s"), _speed("right_m_s"), _speed("down_m_s"),
        _rate("yaw_rate_rad_s", 0.0),
    ), VelocityBody),
    _K.ACCELERATION_NED: (_object(
        _K.ACCELERATION_NED, _acceleration("north_m_s2"), _acceleration("east_m_s2"),
        _acceleration("down_m_s2"), *_YAW,
    ), AccelerationNed),
    _K.POSITION_VELOCITY_NED: (_object(
        _K.POSITION_VELOCITY_NED, _meters("north_m"), _meters("east_m"), _meters("down_m"),
        _speed("north_m_s"), _speed("east_m_s"), _speed("down_m_s"), *_YAW, *_FEED_FORWARD,
    ), PositionVelocityNed),
    _K.GLOBAL_POSITION: (_object(
        _K.GLOBAL_POSITION, number("lat_deg", -90.0, 90.0), number("lon_deg", -180.0, 180.0),
        number("alt_m", ALTITUDE_MIN_M, ALTITUDE_MAX_M),
        choice("altitude_frame", *(str(frame) for frame in AltitudeFrame), default="amsl"),
        *_YAW,
    ), GlobalPosition),
    _K.ATTITUDE: (_object(
        _K.ATTITUDE, _unit("w"), _unit("x"), _unit("y"), _unit("z"), _unit("thrust", 0.0),
    ), Attitude),
    _K.BODY_RATES: (_object(
        _K.BODY_RATES, _rate("roll_rate_rad_s"), _rate("pitch_rate_rad_s"),
        _rate("yaw_rate_rad_s"), _unit("thrust", 0.0),
    ), BodyRates),
}
# the core constructor's keyword arguments per kind: every field but "kind"
_ARGUMENTS = {kind: spec.field_names()[1:] for kind, (spec, _) in SETPOINT_TABLE.items()}


def setpoint_from_wire(fields: Mapping[str, Any]) -> Setpoint:
    """Build the core value from what `SETPOINT_TABLE[kind][0].read` returned (other keys,
    such as a stream's `session`, are ignored); raises `SetpointError` when PX4 could not
    fly it."""
    kind = fields["kind"]
    arguments = {name: fields[name] for name in _ARGUMENTS[kind]}
    core_type = SETPOINT_TABLE[kind][1]
    if core_type is GlobalPosition:
        arguments["altitude_frame"] = AltitudeFrame(arguments["altitude_frame"])
    setpoint: Setpoint = core_type(**arguments)
    return setpoint


def setpoint_to_wire(setpoint: Setpoint) -> dict[str, Any]:
    """The JSON object for a core setpoint (optional fields left out when unset)."""
    doc: dict[str, Any] = {"kind": str(setpoint.kind)}
    for name in _ARGUMENTS[setpoint.kind]:
        value = getattr(setpoint, name)
        if value is None:
            continue
        doc[name] = str(value) if isinstance(value, AltitudeFrame) else value
    return doc
