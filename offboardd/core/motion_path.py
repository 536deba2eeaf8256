"""The geometry of onboard motions: straight legs and circular arcs in local NED metres.

A path is a list of segments, each parameterised by its arc length s in [0, length_m]:
`point(s)`, the unit `tangent(s)` and the `curvature_per_m` (0 on a line) with its unit
`normal(s)` towards the centre. Where two segments meet is either tangent (a line into a
corner arc: the speed may carry through) or a corner (the vehicle stops there:
`Junction.STOP`). The time along the path is motion_profile's business, not this one's.

Corners of a `path` are rounded in the plane of the two legs: the arc starts
`r tan(theta / 2)` before the waypoint and ends as far after it, with that distance at most
half of the shorter leg (the radius shrinks to fit). An orbit is a line from where the
vehicle is to the circle, then `turns` full circles (clockwise seen from above: north
towards east).

Pure: floats in, floats out; no clock, no engine state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias

Vec3: TypeAlias = tuple[float, float, float]  # (north_m, east_m, down_m) or a direction

_TINY_M = 1e-6
_STRAIGHT_RAD = 1e-3  # below this turn a waypoint is no corner at all
_REVERSAL_RAD = math.pi - 1e-3  # a U-turn cannot be rounded: stop there


def add(a: Vec3, b: Vec3) -> Vec3:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def sub(a: Vec3, b: Vec3) -> Vec3:
    return a[0] - b[0], a[1] - b[1], a[2] - b[2]


def scale(a: Vec3, k: float) -> Vec3:
    return a[0] * k, a[1] * k, a[2] * k


def dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def norm(a: Vec3) -> float:
    return math.sqrt(dot(a, a))


def unit(a: Vec3) -> Vec3:
    n = norm(a)
    return (0.0, 0.0, 0.0) if n < _TINY_M else scale(a, 1.0 / n)


@dataclass(frozen=True)
class Line:
    start: Vec3
    end: Vec3

    @property
    def length_m(self) -> float:
        return norm(sub(self.end, self.start))

    @property
    def curvature_per_m(self) -> float:
        return 0.0

    def point(self, s_m: float) -> Vec3:
        return add(self.start, scale(self.tangent(s_m), s_m))

    def tangent(self, s_m: float) -> Vec3:
        return unit(sub(self.end, self.start))

    def normal(self, s_m: float) -> Vec3:
        return (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Arc:
    """p(phi) = centre + radius (e1 cos phi + e2 sin phi), phi from start_rad over
    sweep_rad (its sign is the direction); e1, e2 orthonormal."""

    centre: Vec3
    radius_m: float
    e1: Vec3
    e2: Vec3
    start_rad: float
    sweep_rad: float

    @property
    def length_m(self) -> float:
        return self.radius_m * abs(self.sweep_rad)

    @property
    def curvature_per_m(self) -> float:
        return 1.0 / self.radius_m

    def _phi(self, s_m: float) -> float:
        return self.start_rad + math.copysign(s_m / self.radius_m, self.sweep_rad)

    def point(self, s_m: float) -> Vec3:
        phi = self._phi(s_m)
        return add(self.centre, add(scale(self.e1, self.radius_m * math.cos(phi)),
                                    scale(self.e2, self.radius_m * math.sin(phi))))

    def tangent(self, s_m: float) -> Vec3:
        phi = self._phi(s_m)
        d = add(scale(self.e1, -math.sin(phi)), scale(self.e2, math.cos(phi)))
        return d if self.sweep_rad >= 0 else scale(d, -1.0)

    def normal(self, s_m: float) -> Vec3:
        phi = self._phi(s_m)
        return scale(add(scale(self.e1, math.cos(phi)), scale(self.e2, math.sin(phi))), -1.0)


Segment: TypeAlias = Line | Arc


@dataclass(frozen=True)
class PathGeometry:
    """Segments in order; `stops_after[i]`: the vehicle comes to rest at the end of
    segment i (a sharp corner, or the last segment)."""

    segments: tuple[Segment, ...]
    stops_after: tuple[bool, ...]

    @property
    def length_m(self) -> float:
        return sum(seg.length_m for seg in self.segments)

    def sample(self, step_m: float) -> list[Vec3]:
        """Points every `step_m` along every segment, both ends included."""
        points: list[Vec3] = []
        for seg in self.segments:
            n = max(1, math.ceil(seg.length_m / step_m))
            points += [seg.point(seg.length_m * k / n) for k in range(n + 1)]
        return points


def _corner(prev: Vec3, corner: Vec3, nxt: Vec3, *, radius_m: float,
            room_in_m: float, room_out_m: float) -> Arc | None:
    """The arc rounding `corner` between the legs prev->corner and corner->nxt, or None
    when the corner is kept sharp (radius 0, a reversal, or no turn at all)."""
    u, w = unit(sub(corner, prev)), unit(sub(nxt, corner))
    theta = math.acos(max(-1.0, min(1.0, dot(u, w))))
    if radius_m <= 0.0 or theta < _STRAIGHT_RAD or theta > _REVERSAL_RAD:
        return None
    cut_m = min(radius_m * math.tan(theta / 2), room_in_m, room_out_m)
    radius = cut_m / math.tan(theta / 2)
    if radius < 0.05:
        return None
    inward = unit(sub(w, scale(u, dot(u, w))))  # in the legs' plane, towards the inside
    arc_start = sub(corner, scale(u, cut_m))
    centre = add(arc_start, scale(inward, radius))
    return Arc(centre, radius, scale(inward, -1.0), u, 0.0, theta)


def path_through(start: Vec3, waypoints: list[Vec3], corner_radius_m: float) -> PathGeometry:
    """From `start` through each waypoint, corners rounded with `corner_radius_m`
    (0: stop at each one). Waypoints closer than 1 cm to the previous are dropped."""
    points = [start]
    for wp in waypoints:
        if norm(sub(wp, points[-1])) > 0.01:
            points.append(wp)
    if len(points) < 2:
        return PathGeometry((), ())
    arcs: list[Arc | None] = [None]
    for i in range(1, len(points) - 1):
        room_in = norm(sub(points[i], points[i - 1])) / 2
        room_out = norm(sub(points[i + 1], points[i])) / 2
        arcs.append(_corner(points[i - 1], points[i], points[i + 1], radius_m=corner_radius_m,
                            room_in_m=room_in, room_out_m=room_out))
    arcs.append(None)
    segments: list[Segment] = []
    stops: list[bool] = []
    leg_start = points[0]
    for i in range(1, len(points)):
        arc = arcs[i]
        leg_end = points[i] if arc is None else arc.point(0.0)
        if norm(sub(leg_end, leg_start)) > _TINY_M:
            segments.append(Line(leg_start, leg_end))
            stops.append(arc is None)
        elif stops:
            stops[-1] = stops[-1] or arc is None
        if arc is not None:
            segments.append(arc)
            stops.append(False)
            leg_start = arc.point(arc.length_m)
        else:
            leg_start = points[i]
    stops[-1] = True
    return PathGeometry(tuple(segments), tuple(stops))


def orbit_around(start: Vec3, centre: Vec3, radius_m: float, turns: float,
                 clockwise: bool) -> PathGeometry:
    """A line from `start` to the nearest point of the circle (at the centre's altitude;
    due north of the centre if `start` is on the axis), a stop there, then `turns` turns."""
    offset = (start[0] - centre[0], start[1] - centre[1])
    start_rad = math.atan2(offset[1], offset[0]) if math.hypot(*offset) > 0.01 else 0.0
    arc = Arc(centre, radius_m, (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), start_rad,
              (1.0 if clockwise else -1.0) * 2 * math.pi * turns)
    entry = arc.point(0.0)
    segments: list[Segment] = []
    stops: list[bool] = []
    if norm(sub(entry, start)) > 0.01:
        segments.append(Line(start, entry))
        stops.append(True)
    segments.append(arc)
    stops.append(True)
    return PathGeometry(tuple(segments), tuple(stops))
