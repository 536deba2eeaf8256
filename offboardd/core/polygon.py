"""The polygon fence's plane geometry, and its edges near the vehicle kept between ticks.

Points are (north_m, east_m) in PX4's local frame; an edge is two consecutive corners.

`NearEdges`: a tick's velocity shaping needs only the faces the vehicle could reach
before it stops (envelope.Envelope.shape), and a position report only whether the
vehicle is inside (the breach check); walking every edge for each cost ~0.5 ms a tick and
~0.45 ms a report with 256 corners (bench/fence-results.md). Between two ticks the
vehicle moves centimetres, so one walk serves many: from an anchor point it keeps whether
the anchor is inside, how far its nearest edge is (`clear_m`, told up to the radius) and
every edge within `radius_m` of it. For a point `moved` metres from the anchor that answer
is still exact when
- moved + _BAND_M < clear_m: no edge lies between the two points, so inside is the same
  (the band keeps a point within rounding of an edge, or of an edge shorter than
  closest_point resolves, to the full point_in_polygon); and
- moved + reach_m <= radius_m: an edge within reach_m of the point is within radius_m of
  the anchor, so it is among those kept.
Otherwise the walk is made again about the point. Pure.
"""

from __future__ import annotations

import math

Point = tuple[float, float]
Edge = tuple[Point, Point]
_EPS = 1e-9
# Room the kept circle leaves beyond what was asked, so that the next ticks (the vehicle a
# little further on, a little faster) are answered from it: a walk every few metres.
_SLACK_M = 5.0
_REACH_ROOM = 1.5
_BAND_M = 1e-3  # see above: far above float rounding and the 3e-5 m an edge may be short


def edges_of(polygon: tuple[Point, ...]) -> tuple[Edge, ...]:
    """Corner i to corner i + 1, the last back to the first."""
    count = len(polygon)
    return tuple((polygon[i], polygon[(i + 1) % count]) for i in range(count))


def point_in_polygon(n: float, e: float, polygon: tuple[Point, ...]) -> bool:
    """Even-odd rule (ray casting along +east); a point on an edge may go either way."""
    inside = False
    count = len(polygon)
    for i in range(count):
        (n1, e1), (n2, e2) = polygon[i], polygon[(i + 1) % count]
        if (n1 > n) != (n2 > n):
            e_cross = e1 + (n - n1) * (e2 - e1) / (n2 - n1)
            if e < e_cross:
                inside = not inside
    return inside


def edges_near(n: float, e: float, radius_m: float, polygon: tuple[Point, ...]) -> list[Edge]:
    """The polygon's edges (each as its two corners) whose bounding box meets the square
    about (n, e) of half side `radius_m`: the only ones a circle or ball of that radius
    there can touch (a cheap pass before exact geometry; most edges miss a corner's arc)."""
    low_n, high_n, low_e, high_e = n - radius_m, n + radius_m, e - radius_m, e + radius_m
    out: list[Edge] = []
    count = len(polygon)
    for i in range(count):  # in edges_of's order, which the shaping's projections follow
        a, b = polygon[i], polygon[(i + 1) % count]
        if ((a[0] < low_n and b[0] < low_n) or (a[0] > high_n and b[0] > high_n)
                or (a[1] < low_e and b[1] < low_e) or (a[1] > high_e and b[1] > high_e)):
            continue
        out.append((a, b))
    return out


def closest_point(n: float, e: float, edge: Edge) -> Point:
    """The point of the segment closest to (n, e)."""
    (n1, e1), (n2, e2) = edge
    dn, de = n2 - n1, e2 - e1
    length2 = dn * dn + de * de
    t = 0.0 if length2 <= _EPS else ((n - n1) * dn + (e - e1) * de) / length2
    t = min(1.0, max(0.0, t))
    return n1 + t * dn, e1 + t * de


class NearEdges:
    def __init__(self, polygon: tuple[Point, ...]) -> None:
        self.polygon = polygon
        self.edges = edges_of(polygon)
        self._anchor: Point | None = None
        self._inside = False
        self._clear_m = 0.0
        self._radius_m = 0.0
        self._near: tuple[Edge, ...] = ()
        self.walks = 0  # how many times every edge was walked (tests, bench)

    def around(self, n: float, e: float, reach_m: float) -> tuple[bool, tuple[Edge, ...]]:
        """Whether (n, e) is inside the polygon, and edges (in the polygon's order) among
        which is every edge that comes within `reach_m` of it."""
        if not self._answers(n, e, reach_m):
            self._walk(n, e, _REACH_ROOM * reach_m + _SLACK_M)
        return self._inside, self._near

    def inside(self, n: float, e: float, *, walk: bool = True) -> bool:
        """point_in_polygon, from the anchor while the point is clear of every edge;
        else walked about the point (the vehicle's own), or without `walk` (a point
        beside the vehicle: the anchor stays with it) by point_in_polygon alone."""
        if self._answers(n, e, 0.0):
            return self._inside
        if not walk:
            return point_in_polygon(n, e, self.polygon)
        self._walk(n, e, _SLACK_M)
        return self._inside

    def _answers(self, n: float, e: float, reach_m: float) -> bool:
        if self._anchor is None:
            return False
        moved = math.hypot(n - self._anchor[0], e - self._anchor[1])
        return moved + _BAND_M < self._clear_m and moved + reach_m <= self._radius_m

    def _walk(self, n: float, e: float, radius_m: float) -> None:
        """Keep every edge within `radius_m` of (n, e) and the distance to the nearest
        (at most `radius_m`: no more is asked of it), measuring only the edges whose box
        comes within the square about the point (edges_near)."""
        self.walks += 1
        clear_m, near = radius_m, []
        for edge in edges_near(n, e, radius_m, self.polygon):
            qn, qe = closest_point(n, e, edge)
            distance_m = math.hypot(qn - n, qe - e)
            if distance_m <= radius_m:
                clear_m = min(clear_m, distance_m)
                near.append(edge)
        self._anchor = (n, e)
        self._inside = point_in_polygon(n, e, self.polygon)
        self._clear_m, self._radius_m, self._near = clear_m, radius_m, tuple(near)
