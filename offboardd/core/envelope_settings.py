"""EnvelopeSettings: the safety envelope's limits and geofence, frozen and validated.

Defaults (config/offboardd.toml `[envelope]`): the speed, acceleration, tilt and yaw-rate
limits are ON at PX4's own defaults for a multicopter (MPC_XY_VEL_MAX 12 m/s,
MPC_Z_VEL_MAX_UP 3 m/s, MPC_Z_VEL_MAX_DN 1.5 m/s, MPC_TILTMAX_AIR 45 deg, MC_YAWRATE_MAX
200 deg/s), so a default install never flies faster than a stock PX4 would let a pilot
but an absurd setpoint (a unit mix-up, a fuzzed 1e6 m/s) is clamped before it leaves.
The geofence is OFF unless one of its keys is set: only the user knows where the vehicle
may fly, and a guessed fence would refuse legitimate flights. Thrust bounds default to
[0, 1] (off): a wrong guess there would stop attitude-mode landings or take-offs.

An invalid value raises `ConfigError` naming the field, its value and the allowed range.
Pure; no file reading here (config.py maps `[envelope]` keys onto these fields).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import StrEnum

from offboardd.core.geo import offset_m
from offboardd.core.settings_checks import coerce_choice
from offboardd.errors import ConfigError


class LimitAction(StrEnum):
    """What to do with a setpoint above a limit."""

    CLAMP = "clamp"  # fly it at the limit, report the clamp
    REJECT = "reject"  # refuse the command with a coded reply naming the limit


class BreachAction(StrEnum):
    """The mode asked for when the vehicle is found outside the fence while ours."""

    HOLD = "hold"
    LAND = "land"
    RTL = "rtl"


class PolygonFrame(StrEnum):
    LOCAL = "local"  # vertices are (north_m, east_m) in PX4's local NED frame
    GLOBAL = "global"  # vertices are (lat_deg, lon_deg), WGS84


# Per-limit action keys, in the order the limits are checked.
ACTION_FIELDS = (
    "horizontal_speed_action",
    "vertical_speed_action",
    "acceleration_action",
    "tilt_action",
    "thrust_action",
    "yaw_rate_action",
)
MAX_POLYGON_VERTICES = 256  # a walk of every edge (polygon.NearEdges) stays ~0.3 ms


@dataclass(frozen=True)
class EnvelopeSettings:
    # -- geofence (off unless one of these is set); distances in metres -------------------
    max_distance_m: float | None = None  # horizontal distance from home
    min_altitude_m: float | None = None  # above home (up positive)
    max_altitude_m: float | None = None
    polygon: tuple[tuple[float, float], ...] = ()  # >= 3 vertices; () = no polygon
    polygon_frame: PolygonFrame = PolygonFrame.LOCAL
    stop_margin_m: float = 1.0  # velocity/acceleration setpoints stop this far inside
    breach_tolerance_m: float = 1.0  # further outside than this = breach (overshoot, noise)
    breach_action: BreachAction = BreachAction.HOLD
    # -- limits -------------------------------------------------------------------------
    max_horizontal_speed_m_s: float = 12.0
    max_up_speed_m_s: float = 3.0
    max_down_speed_m_s: float = 1.5
    max_acceleration_m_s2: float = 3.0  # also the braking used for the stopping distance
    max_tilt_deg: float = 45.0
    min_thrust: float = 0.0
    max_thrust: float = 1.0
    max_yaw_rate_deg_s: float = 200.0
    horizontal_speed_action: LimitAction = LimitAction.CLAMP
    vertical_speed_action: LimitAction = LimitAction.CLAMP
    acceleration_action: LimitAction = LimitAction.CLAMP
    tilt_action: LimitAction = LimitAction.CLAMP
    thrust_action: LimitAction = LimitAction.CLAMP
    yaw_rate_action: LimitAction = LimitAction.CLAMP

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            number = isinstance(value, float | int) and not isinstance(value, bool)
            if number and not math.isfinite(value):
                raise ConfigError(f"{f.name} must be finite, got {value!r}")
        _range("max_distance_m", self.max_distance_m, 1.0, 1.0e6, optional=True)
        _range("min_altitude_m", self.min_altitude_m, -1.0e4, 1.0e5, optional=True)
        _range("max_altitude_m", self.max_altitude_m, -1.0e4, 1.0e5, optional=True)
        if (
            self.min_altitude_m is not None
            and self.max_altitude_m is not None
            and self.max_altitude_m - self.min_altitude_m < 1.0
        ):
            raise ConfigError(
                f"max_altitude_m ({self.max_altitude_m}) must be at least 1 m above "
                f"min_altitude_m ({self.min_altitude_m})"
            )
        _range("stop_margin_m", self.stop_margin_m, 0.0, 100.0)
        _range("breach_tolerance_m", self.breach_tolerance_m, 0.0, 100.0)
        _range("max_horizontal_speed_m_s", self.max_horizontal_speed_m_s, 0.1, 100.0)
        _range("max_up_speed_m_s", self.max_up_speed_m_s, 0.1, 50.0)
        _range("max_down_speed_m_s", self.max_down_speed_m_s, 0.1, 50.0)
        _range("max_acceleration_m_s2", self.max_acceleration_m_s2, 0.5, 50.0)
        _range("max_tilt_deg", self.max_tilt_deg, 1.0, 90.0)
        _range("min_thrust", self.min_thrust, 0.0, 1.0)
        _range("max_thrust", self.max_thrust, 0.0, 1.0)
        if self.min_thrust >= self.max_thrust:
            raise ConfigError(
                f"min_thrust ({self.min_thrust}) must be below max_thrust ({self.max_thrust})"
            )
        _range("max_yaw_rate_deg_s", self.max_yaw_rate_deg_s, 1.0, 2000.0)
        coerce_choice(self, "polygon_frame", PolygonFrame)
        coerce_choice(self, "breach_action", BreachAction)
        for name in ACTION_FIELDS:
            coerce_choice(self, name, LimitAction)
        object.__setattr__(self, "polygon", self._checked_polygon())
        self._check_margins()

    def _check_margins(self) -> None:
        """A stop line or breach tolerance as wide as the fence protects nothing: the
        vehicle is never inside, so never in breach (found by review)."""
        for name in ("stop_margin_m", "breach_tolerance_m"):
            margin = getattr(self, name)
            if self.max_distance_m is not None and margin >= self.max_distance_m:
                raise ConfigError(f"{name} ({margin:g}) must be below max_distance_m "
                                  f"({self.max_distance_m:g})")
        if self.min_altitude_m is not None and self.max_altitude_m is not None:
            band_m = self.max_altitude_m - self.min_altitude_m
            if 2 * self.stop_margin_m >= band_m:
                raise ConfigError(f"stop_margin_m ({self.stop_margin_m:g}) must be below half "
                                  f"the altitude band ({band_m:g} m)")

    def _checked_polygon(self) -> tuple[tuple[float, float], ...]:
        raw = self.polygon
        if not isinstance(raw, list | tuple):
            raise ConfigError(f"polygon must be a list of [a, b] pairs, got {raw!r}")
        if not raw:
            return ()
        if not 3 <= len(raw) <= MAX_POLYGON_VERTICES:
            raise ConfigError(f"polygon needs 3..{MAX_POLYGON_VERTICES} vertices, got {len(raw)}")
        out: list[tuple[float, float]] = []
        for i, vertex in enumerate(raw):
            ok = isinstance(vertex, list | tuple) and len(vertex) == 2
            ok = ok and all(
                isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(c)
                for c in vertex
            )
            if not ok:
                raise ConfigError(f"polygon[{i}] must be a pair of finite numbers, got {vertex!r}")
            a, b = float(vertex[0]), float(vertex[1])
            if self.polygon_frame is PolygonFrame.GLOBAL and not (
                -90.0 <= a <= 90.0 and -180.0 <= b <= 180.0
            ):
                raise ConfigError(
                    f"polygon[{i}] = {list(vertex)!r}: a global vertex is [lat_deg, lon_deg] "
                    "with lat in [-90, 90] and lon in [-180, 180]"
                )
            out.append((a, b))
        _check_polygon_shape(out, self.polygon_frame)
        return tuple(out)

    @property
    def fence_enabled(self) -> bool:
        return (
            self.max_distance_m is not None
            or self.min_altitude_m is not None
            or self.max_altitude_m is not None
            or bool(self.polygon)
        )

    @property
    def altitude_fenced(self) -> bool:
        return self.min_altitude_m is not None or self.max_altitude_m is not None

    @property
    def max_tilt_rad(self) -> float:
        return math.radians(self.max_tilt_deg)

    @property
    def max_yaw_rate_rad_s(self) -> float:
        return math.radians(self.max_yaw_rate_deg_s)


def _check_polygon_shape(vertices: list[tuple[float, float]], frame: PolygonFrame) -> None:
    """A polygon that can hold a vehicle: at least 1 m² (the review's zero-area, one-point
    and 'GPS corners read as metres' fences were accepted), its edges never crossing (a
    bow-tie has no inside to speak of)."""
    if frame is PolygonFrame.GLOBAL:  # metres about the first vertex: enough for a size
        lat0, lon0 = vertices[0]
        xy = [offset_m(lat0, lon0, a, b) for a, b in vertices]
    else:
        xy = vertices
    n = len(xy)
    area_m2 = abs(sum(xy[i][0] * xy[(i + 1) % n][1] - xy[(i + 1) % n][0] * xy[i][1]
                      for i in range(n))) / 2
    if area_m2 < 1.0:
        hint = ""
        if frame is PolygonFrame.LOCAL and all(abs(a) <= 90 and abs(b) <= 180
                                               for a, b in vertices):
            hint = ' (if these are [lat_deg, lon_deg], set polygon_frame = "global")'
        raise ConfigError(f"polygon encloses {area_m2:.3g} m²; a fence needs at least 1 m²"
                          + hint)
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                continue  # neighbours share a vertex
            if _segments_cross(xy[i], xy[(i + 1) % n], xy[j], xy[(j + 1) % n]):
                raise ConfigError(f"polygon edges {i}-{(i + 1) % n} and {j}-{(j + 1) % n} "
                                  "cross: list the vertices in order around the fence")


def _segments_cross(p1: tuple[float, float], p2: tuple[float, float],
                    q1: tuple[float, float], q2: tuple[float, float]) -> bool:
    def side(a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> float:
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2 = side(q1, q2, p1), side(q1, q2, p2)
    d3, d4 = side(p1, p2, q1), side(p1, p2, q2)
    return d1 * d2 < 0 and d3 * d4 < 0



def _range(
    name: str, value: float | None, low: float, high: float, *, optional: bool = False
) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
