"""Geofence geometry: home, global -> local projection, and the fence's boundaries.

Everything is in PX4's local NED frame (metres from the EKF origin, the frame of
PositionNed setpoints and LOCAL_POSITION_NED). Home comes from PX4's HOME_POSITION
(#242), whose x/y/z place it in that same frame; altitudes are metres *up* from home.
Global coordinates are projected about home onto a flat plane (equirectangular, Earth
radius 6371 km as PX4's CONSTANTS_RADIUS_OF_EARTH): well under 0.1 % off within the few
km a companion-fenced vehicle flies, and conservative margins cover the rest.

`Boundary` is one face of the fence seen from a point: the signed distance to it
(positive inside) and the unit direction that leads out through it. Pure math; no
policy (what to clamp or reject lives in envelope.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from offboardd.core.envelope_settings import EnvelopeSettings, PolygonFrame
from offboardd.core.geo import offset_m
from offboardd.core.polygon import NearEdges, closest_point, edges_near, point_in_polygon
from offboardd.core.reasons import Reason

Vec3 = tuple[float, float, float]
_EPS = 1e-9


@dataclass(frozen=True)
class Home:
    """PX4's home: WGS84 position and where it sits in the local NED frame."""

    lat_deg: float
    lon_deg: float
    alt_amsl_m: float
    north_m: float
    east_m: float
    down_m: float

    def to_local(self, lat_deg: float, lon_deg: float) -> tuple[float, float]:
        """(north_m, east_m) in the local frame of a WGS84 point."""
        north, east = offset_m(self.lat_deg, self.lon_deg, lat_deg, lon_deg)
        return self.north_m + north, self.east_m + east

    def altitude_m(self, down_m: float) -> float:
        """Metres above home of a local down coordinate."""
        return self.down_m - down_m


@dataclass(frozen=True)
class Boundary:
    reason: Reason  # names the fence part: FENCE_DISTANCE, FENCE_POLYGON, ...
    limit: str  # the config key
    distance_m: float  # signed: positive inside, negative outside
    outward: Vec3  # unit vector pointing out through this face (NED)


class FenceShape:
    """The configured fence resolved against one home (rebuilt when home moves)."""

    def __init__(self, settings: EnvelopeSettings, home: Home) -> None:
        self.settings = settings
        self.home = home
        polygon = settings.polygon
        if settings.polygon_frame is PolygonFrame.GLOBAL:
            polygon = tuple(home.to_local(lat, lon) for lat, lon in polygon)
        self.polygon: tuple[tuple[float, float], ...] = polygon
        # the edges near the vehicle, for its ticks and position reports (polygon.py)
        self.near = NearEdges(polygon) if polygon else None

    def boundaries(self, north_m: float, east_m: float, down_m: float,
                   reach_m: float | None = None) -> list[Boundary]:
        """Every face that constrains a vehicle at this point (polygon: all edges when
        inside, the nearest one when outside). With `reach_m`, the vehicle's own point:
        inside, the polygon's edges further than that may be left out (the ones near it
        are kept between calls: polygon.NearEdges)."""
        s, home = self.settings, self.home
        out: list[Boundary] = []
        if s.max_distance_m is not None:
            dn, de = north_m - home.north_m, east_m - home.east_m
            r = math.hypot(dn, de)
            # At home itself every direction is outward: none is, until the vehicle moves.
            outward = (dn / r, de / r, 0.0) if r > _EPS else (0.0, 0.0, 0.0)
            out.append(Boundary(Reason.FENCE_DISTANCE, "max_distance_m", s.max_distance_m - r,
                                outward))  # fmt: skip
        alt = home.altitude_m(down_m)
        if s.max_altitude_m is not None:
            out.append(Boundary(Reason.FENCE_MAX_ALTITUDE, "max_altitude_m",
                                s.max_altitude_m - alt, (0.0, 0.0, -1.0)))  # fmt: skip
        if s.min_altitude_m is not None:
            out.append(Boundary(Reason.FENCE_MIN_ALTITUDE, "min_altitude_m",
                                alt - s.min_altitude_m, (0.0, 0.0, 1.0)))  # fmt: skip
        if self.near is not None:
            out.extend(self._polygon_boundaries(north_m, east_m, reach_m))
        return out

    def _polygon_boundaries(self, north_m: float, east_m: float,
                            reach_m: float | None) -> list[Boundary]:
        assert self.near is not None
        edges = self.near.edges
        if reach_m is None:
            inside = point_in_polygon(north_m, east_m, self.polygon)
        else:
            inside, near = self.near.around(north_m, east_m, reach_m)
            edges = near if inside else edges  # outside: the nearest of them all
        faces: list[Boundary] = []
        for edge in edges:
            qn, qe = closest_point(north_m, east_m, edge)
            dn, de = qn - north_m, qe - east_m
            dist = math.hypot(dn, de)
            if dist <= _EPS:
                outward = (0.0, 0.0, 0.0)
            elif inside:  # towards the edge is out
                outward = (dn / dist, de / dist, 0.0)
            else:  # away from the edge is further out
                outward = (-dn / dist, -de / dist, 0.0)
            faces.append(Boundary(Reason.FENCE_POLYGON, "polygon",
                                  dist if inside else -dist, outward))  # fmt: skip
        if not inside:
            return [max(faces, key=lambda b: b.distance_m)]  # the nearest edge only
        return faces

    def contains(self, north_m: float, east_m: float, down_m: float) -> bool:
        """Inside (or on) every part of the fence: the cheap test for many points (a
        planned path); `nearest` says which face and how far when it is not."""
        return self._contains_round(north_m, east_m, down_m) and (
            not self.polygon or point_in_polygon(north_m, east_m, self.polygon))

    def _contains_round(self, north_m: float, east_m: float, down_m: float) -> bool:
        """Inside the distance from home and the altitudes (the polygon aside)."""
        s, home = self.settings, self.home
        if s.max_distance_m is not None and math.hypot(
                north_m - home.north_m, east_m - home.east_m) > s.max_distance_m:
            return False
        alt = home.altitude_m(down_m)
        if s.max_altitude_m is not None and alt > s.max_altitude_m:
            return False
        return s.min_altitude_m is None or alt >= s.min_altitude_m

    def contains_vehicle(self, north_m: float, east_m: float, down_m: float) -> bool:
        """`contains` for the vehicle's own position (its reports, many a second): the
        polygon's part answered from the edges kept near the vehicle (polygon.NearEdges),
        which this moves to the point when it is no longer near."""
        if self.near is None:
            return self.contains(north_m, east_m, down_m)
        return (self.near.inside(north_m, east_m)
                and self._contains_round(north_m, east_m, down_m))

    def outside(self, north_m: float, east_m: float, down_m: float) -> bool:
        """`nearest(...).distance_m < 0` for a point beside the vehicle (its hold at the
        stop line), from the edges kept near it when it is clear of them. A point on an
        edge is not outside, though point_in_polygon may call it so: its face's distance
        is -0.0 (with no stop margin the stop line is the edge itself)."""
        if not self._contains_round(north_m, east_m, down_m):
            return True
        if self.near is None or self.near.inside(north_m, east_m, walk=False):
            return False
        return min(math.hypot(qn - north_m, qe - east_m) for qn, qe in (
            closest_point(north_m, east_m, edge) for edge in self.near.edges)) > 0.0

    def holds_ball(self, north_m: float, east_m: float, down_m: float, radius_m: float) -> bool:
        """Every point within `radius_m` of this one is inside the fence (a cheap test
        for a whole arc about its centre: an edge whose box misses the ball's is skipped)."""
        s, home = self.settings, self.home
        if s.max_distance_m is not None and math.hypot(
                north_m - home.north_m, east_m - home.east_m) + radius_m > s.max_distance_m:
            return False
        alt = home.altitude_m(down_m)
        if s.max_altitude_m is not None and alt + radius_m > s.max_altitude_m:
            return False
        if s.min_altitude_m is not None and alt - radius_m < s.min_altitude_m:
            return False
        if not self.polygon:
            return True
        if not point_in_polygon(north_m, east_m, self.polygon):
            return False
        for edge in edges_near(north_m, east_m, radius_m, self.polygon):
            qn, qe = closest_point(north_m, east_m, edge)
            if math.hypot(qn - north_m, qe - east_m) <= radius_m:
                return False
        return True

    def nearest(self, north_m: float, east_m: float, down_m: float) -> Boundary | None:
        """The face with the smallest signed distance (the one most violated)."""
        faces = self.boundaries(north_m, east_m, down_m)
        return min(faces, key=lambda b: b.distance_m) if faces else None


def describe_face(face: Boundary, s: EnvelopeSettings) -> str:
    d = face.distance_m
    if face.reason is Reason.FENCE_DISTANCE and s.max_distance_m is not None:
        return f"{s.max_distance_m - d:.1f} m from home, max_distance_m = {s.max_distance_m:g}"
    if face.reason is Reason.FENCE_MAX_ALTITUDE and s.max_altitude_m is not None:
        return f"{s.max_altitude_m - d:.1f} m above home, max_altitude_m = {s.max_altitude_m:g}"
    if face.reason is Reason.FENCE_MIN_ALTITUDE and s.min_altitude_m is not None:
        return f"{s.min_altitude_m + d:.1f} m above home, min_altitude_m = {s.min_altitude_m:g}"
    return f"{-d:.1f} m outside the polygon" if d < 0 else f"{d:.1f} m inside the polygon"


def stopping_speed_m_s(distance_m: float, accel_m_s2: float, lag_s: float = 0.0) -> float:
    """The fastest approach that can still stop within `distance_m` when braking at
    `accel_m_s2` starts `lag_s` late: from d = v lag + v^2 / (2 a),
    v = a (sqrt(lag^2 + 2 d / a) - lag) (sqrt(2 a d) without lag); 0 at or past the line."""
    if distance_m <= 0.0:
        return 0.0
    a = accel_m_s2
    return a * (math.sqrt(lag_s * lag_s + 2.0 * distance_m / a) - lag_s)


def stopping_distance_m(speed_m_s: float, accel_m_s2: float, lag_s: float = 0.0) -> float:
    """How far an approach at `speed_m_s` runs on when braking at `accel_m_s2` starts
    `lag_s` late (stopping_speed_m_s's inverse)."""
    return speed_m_s * lag_s + speed_m_s * speed_m_s / (2.0 * accel_m_s2)


def dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cap_along(v: Vec3, constraints: list[tuple[Vec3, float]], rounds: int = 8) -> tuple[Vec3, bool]:
    """The vector near `v` with v . n <= c for every (n, c) (n a unit vector, or zero for
    "no direction"), by alternating projections onto the half-spaces; and whether every
    constraint holds at the end (a narrow corridor may not converge in `rounds`)."""
    out, ok, _ = cap_along_peak(v, constraints, rounds)
    return out, ok


def cap_along_peak(v: Vec3, constraints: list[tuple[Vec3, float]], rounds: int = 8
                   ) -> tuple[Vec3, bool, float]:
    """cap_along, and the largest norm the vector had on the way: a constraint left out
    whose c is above that never came into play (v . n <= |v| <= c), so leaving it out
    changed nothing."""
    out, peak = v, math.sqrt(dot(v, v))
    for _ in range(rounds):
        moved = False
        for n, c in constraints:
            excess = dot(out, n) - c
            if excess > 1e-9:
                out = (out[0] - excess * n[0], out[1] - excess * n[1], out[2] - excess * n[2])
                peak = max(peak, math.sqrt(dot(out, out)))
                moved = True
        if not moved:
            return out, True, peak
    return out, all(dot(out, n) <= c + 1e-6 for n, c in constraints), peak
