"""The envelope's per-setpoint limits: speed, acceleration, tilt, thrust and yaw rate.

`apply_limits(setpoint, settings)` checks a commanded setpoint once, when it arrives:
each value above its limit is clamped (the default) or rejected, per the limit's
`*_action` setting, and every clamp or rejection is returned as a `Limited` naming the
limit's config key. The geofence (positions, stopping at the fence) is envelope.py's.

What is limited, by kind (px4-offboard.md §1 types):
- velocities (VelocityNed, VelocityBody, PositionVelocityNed's feed-forward): horizontal
  speed as a vector (direction kept), up and down speed separately;
- accelerations (AccelerationNed, PositionVelocityNed's feed-forward): the 3-D norm, and
  the tilt PX4 flies them at: atan(|horizontal| / g) (PositionControl's acceleration
  control with MPC_ACC_DECOUPLE = 1, its default; measured on PX4 SIH main: 8 m/s² flew
  at 38.8°), so the horizontal part is held to g·tan(max_tilt_deg), the climb kept;
- Attitude: tilt (the angle between body down and NED down; heading kept) and thrust;
- BodyRates: thrust and yaw rate; every yaw_rate_rad_s field: |rate|.
Pure; a clamped setpoint is rebuilt through its validating constructor, so it is still
one PX4 accepts and can fly.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from offboardd.core.envelope_settings import EnvelopeSettings, LimitAction
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    Attitude,
    BodyRates,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)

Quaternion = tuple[float, float, float, float]
# A value clamped to a limit must pass that limit again: forgive float rounding.
_ROUNDING = 1e-9
GRAVITY_M_S2 = 9.80665  # PX4's CONSTANTS_ONE_G


def horizontal_acceleration_limit(settings: EnvelopeSettings) -> float:
    """The horizontal acceleration PX4 flies at `max_tilt_deg` (inf at 90°)."""
    if settings.max_tilt_deg >= 90.0:
        return math.inf
    return GRAVITY_M_S2 * math.tan(settings.max_tilt_rad)


def within_tilt(a: tuple[float, float, float], limit: float) -> tuple[float, float, float]:
    """`a` with its horizontal part scaled down to `limit` (direction and climb kept)."""
    horizontal = math.hypot(a[0], a[1])
    if horizontal <= limit:
        return a
    k = limit / horizontal
    return a[0] * k, a[1] * k, a[2]


@dataclass(frozen=True)
class Limited:
    """One limit that applied: what was asked, the limit, and its config key."""

    reason: Reason
    limit: str  # the [envelope] key, e.g. "max_horizontal_speed_m_s"
    asked: float
    bound: float
    unit: str

    def describe(self) -> str:
        return f"{self.reason.value.removeprefix('limit_').replace('_', ' ')} " + (
            f"{self.asked:.3g} {self.unit} beyond {self.limit} = {self.bound:g}"
        )


@dataclass(frozen=True)
class LimitOutcome:
    setpoint: Setpoint
    clamps: tuple[Limited, ...]
    rejection: Limited | None


class _Judge:
    """Collects clamps; the first limit in reject mode that is exceeded rejects."""

    def __init__(self, settings: EnvelopeSettings) -> None:
        self.s = settings
        self.clamps: list[Limited] = []
        self.rejection: Limited | None = None

    def exceeded(self, limited: Limited, action_field: str) -> None:
        if getattr(self.s, action_field) is LimitAction.REJECT:
            if self.rejection is None:
                self.rejection = limited
        else:
            self.clamps.append(limited)

    def horizontal(self, north: float, east: float) -> tuple[float, float]:
        speed, limit = math.hypot(north, east), self.s.max_horizontal_speed_m_s
        if speed <= limit + _ROUNDING:
            return north, east
        self.exceeded(Limited(Reason.LIMIT_HORIZONTAL_SPEED, "max_horizontal_speed_m_s",
                              speed, limit, "m/s"), "horizontal_speed_action")  # fmt: skip
        return north * limit / speed, east * limit / speed

    def vertical(self, down: float) -> float:
        up_limit, down_limit = self.s.max_up_speed_m_s, self.s.max_down_speed_m_s
        if -down > up_limit + _ROUNDING:
            self.exceeded(Limited(Reason.LIMIT_VERTICAL_SPEED, "max_up_speed_m_s",
                                  -down, up_limit, "m/s up"), "vertical_speed_action")  # fmt: skip
            return -up_limit
        if down > down_limit + _ROUNDING:
            self.exceeded(Limited(Reason.LIMIT_VERTICAL_SPEED, "max_down_speed_m_s", down,
                                  down_limit, "m/s down"), "vertical_speed_action")  # fmt: skip
            return down_limit
        return down

    def acceleration(self, a: tuple[float, float, float]) -> tuple[float, float, float]:
        """The 3-D norm, then the tilt PX4 would fly it at."""
        norm, limit = math.sqrt(sum(c * c for c in a)), self.s.max_acceleration_m_s2
        if norm > limit + _ROUNDING:
            self.exceeded(Limited(Reason.LIMIT_ACCELERATION, "max_acceleration_m_s2",
                                  norm, limit, "m/s²"), "acceleration_action")  # fmt: skip
            k = limit / norm
            a = a[0] * k, a[1] * k, a[2] * k
        return self.acceleration_tilt(a)

    def acceleration_tilt(self, a: tuple[float, float, float]) -> tuple[float, float, float]:
        horizontal, limit = math.hypot(a[0], a[1]), horizontal_acceleration_limit(self.s)
        if horizontal <= limit + _ROUNDING:
            return a
        self.exceeded(Limited(Reason.LIMIT_TILT, "max_tilt_deg",
                              math.degrees(math.atan2(horizontal, GRAVITY_M_S2)),
                              self.s.max_tilt_deg, "deg"), "tilt_action")  # fmt: skip
        return within_tilt(a, limit)

    def yaw_rate(self, rate: float | None) -> float | None:
        limit = self.s.max_yaw_rate_rad_s
        if rate is None or abs(rate) <= limit + _ROUNDING:
            return rate
        self.exceeded(Limited(Reason.LIMIT_YAW_RATE, "max_yaw_rate_deg_s",
                              math.degrees(abs(rate)), self.s.max_yaw_rate_deg_s, "deg/s"),
                      "yaw_rate_action")  # fmt: skip
        return math.copysign(limit, rate)

    def thrust(self, thrust: float) -> float:
        low, high = self.s.min_thrust, self.s.max_thrust
        if thrust > high:
            self.exceeded(Limited(Reason.LIMIT_THRUST, "max_thrust", thrust, high, ""),
                          "thrust_action")  # fmt: skip
            return high
        if thrust < low:
            self.exceeded(Limited(Reason.LIMIT_THRUST, "min_thrust", thrust, low, ""),
                          "thrust_action")  # fmt: skip
            return low
        return thrust

    def tilt(self, q: Quaternion) -> Quaternion:
        angle, limit = tilt_rad(q), self.s.max_tilt_rad
        if angle <= limit + _ROUNDING:
            return q
        self.exceeded(Limited(Reason.LIMIT_TILT, "max_tilt_deg", math.degrees(angle),
                              self.s.max_tilt_deg, "deg"), "tilt_action")  # fmt: skip
        return with_tilt(q, limit)


def apply_limits(sp: Setpoint, settings: EnvelopeSettings) -> LimitOutcome:
    j = _Judge(settings)
    out: Setpoint = sp
    if isinstance(sp, VelocityNed):
        n, e = j.horizontal(sp.north_m_s, sp.east_m_s)
        out = dataclasses.replace(sp, north_m_s=n, east_m_s=e, down_m_s=j.vertical(sp.down_m_s),
                                  yaw_rate_rad_s=j.yaw_rate(sp.yaw_rate_rad_s))  # fmt: skip
    elif isinstance(sp, VelocityBody):
        f, r = j.horizontal(sp.forward_m_s, sp.right_m_s)
        rate = j.yaw_rate(sp.yaw_rate_rad_s)
        assert rate is not None
        down = j.vertical(sp.down_m_s)
        out = dataclasses.replace(sp, forward_m_s=f, right_m_s=r, down_m_s=down,
                                  yaw_rate_rad_s=rate)  # fmt: skip
    elif isinstance(sp, AccelerationNed):
        a = j.acceleration((sp.north_m_s2, sp.east_m_s2, sp.down_m_s2))
        out = dataclasses.replace(sp, north_m_s2=a[0], east_m_s2=a[1], down_m_s2=a[2],
                                  yaw_rate_rad_s=j.yaw_rate(sp.yaw_rate_rad_s))  # fmt: skip
    elif isinstance(sp, PositionVelocityNed):
        n, e = j.horizontal(sp.north_m_s, sp.east_m_s)
        changes: dict[str, float | None] = {
            "north_m_s": n, "east_m_s": e, "down_m_s": j.vertical(sp.down_m_s),
            "yaw_rate_rad_s": j.yaw_rate(sp.yaw_rate_rad_s),
        }  # fmt: skip
        if sp.north_m_s2 is not None and sp.east_m_s2 is not None and sp.down_m_s2 is not None:
            a = j.acceleration((sp.north_m_s2, sp.east_m_s2, sp.down_m_s2))
            changes.update(north_m_s2=a[0], east_m_s2=a[1], down_m_s2=a[2])
        out = dataclasses.replace(sp, **changes)  # type: ignore[arg-type]
    elif isinstance(sp, Attitude):
        w, x, y, z = j.tilt(sp.quaternion)
        out = Attitude(w, x, y, z, j.thrust(sp.thrust))
    elif isinstance(sp, BodyRates):
        rate = j.yaw_rate(sp.yaw_rate_rad_s)
        assert rate is not None
        out = dataclasses.replace(sp, yaw_rate_rad_s=rate, thrust=j.thrust(sp.thrust))
    else:  # PositionNed, GlobalPosition: only a yaw rate to limit (the fence is elsewhere)
        out = dataclasses.replace(sp, yaw_rate_rad_s=j.yaw_rate(sp.yaw_rate_rad_s))
    if not j.clamps and j.rejection is None:
        out = sp  # keep the very object: "unchanged" is then an identity test
    return LimitOutcome(out, tuple(j.clamps), j.rejection)


# -- attitude: tilt by swing-twist decomposition about the vertical ------------------------


def _qmul(a: Quaternion, b: Quaternion) -> Quaternion:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def tilt_rad(q: Quaternion) -> float:
    """Angle between the body's down axis and NED down: cos = 1 - 2 (x² + y²)."""
    _, x, y, _ = q
    return math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (x * x + y * y))))


def with_tilt(q: Quaternion, tilt: float) -> Quaternion:
    """`q` with its tilt set to `tilt` about the same horizontal axis, heading kept.

    q = swing * twist, twist a rotation about z (the heading), swing about a horizontal
    axis (its angle is the tilt); rebuild the swing with the new angle."""
    w, _, _, z = q
    norm = math.hypot(w, z)
    twist: Quaternion = (w / norm, 0.0, 0.0, z / norm) if norm > 1e-9 else (1.0, 0.0, 0.0, 0.0)
    tw, _, _, tz = twist
    _, sx, sy, _ = _qmul(q, (tw, 0.0, 0.0, -tz))
    axis = math.hypot(sx, sy)
    if axis < 1e-12:
        return q
    half = tilt / 2.0
    swing = (math.cos(half), math.sin(half) * sx / axis, math.sin(half) * sy / axis, 0.0)
    return _qmul(swing, twist)
