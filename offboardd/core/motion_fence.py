"""A planned motion against the geofence, whole, before anything of it moves (issue 16).

Lines are judged exactly: the fence's distance circle and altitude band are convex, so a
line is inside them when its ends are; against a polygon (which may be concave) a line is
in or out whole between two of the places it meets an edge, so its ends and a point of
each piece between them are tested. A level arc (an orbit, a corner between level legs) is
judged exactly too: it keeps its altitude, and it can leave the polygon or the distance
circle only where it meets an edge or that circle, angles solved in closed form, whatever
its length or turns: a point of each piece between two of them is tested (`_pieces`).
(Only a point just past the first crossing was tested once: a line or an orbit starting or
ending on an edge, or grazing a corner, flew metres outside unrefused: review, 2026-11-29.)
A tilted arc (a corner between a climbing and another leg) is inside when its centre is
farther inside than its radius; only one that comes closer is sampled, every ARC_STEP_M.
The first point outside refuses the whole motion, named in the message.

The check runs on the control loop's thread, between two ticks: its time is the stream's
gap. Sampling an orbit every 0.2 m held the loop for 0.12 s (distance fence only) to
1.9 s (a 256-vertex polygon) for 100 turns of 30 m: longer than COM_OF_LOSS_T (review,
2026-11-29). Exact, it is O(polygon vertices) per arc. Pure.
"""

from __future__ import annotations

import itertools
import math

from offboardd.core.envelope import Envelope
from offboardd.core.envelope_geometry import FenceShape
from offboardd.core.motion import Motion
from offboardd.core.motion_path import Arc, Line, Vec3
from offboardd.core.polygon import edges_near
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import PositionNed

ARC_STEP_M = 0.2
_BEYOND_M = 0.01  # a crossing is reported just past the edge, where the point is outside
# Tilted arcs that come within their radius of the fence are sampled: at most this many
# points (1 km of them), ~0.1 s of the loop against a 256-vertex polygon here.
_MAX_ARC_SAMPLES = 5_000


def first_point_outside(motion: Motion, envelope: Envelope) -> tuple[Reason, str] | None:
    """None when the whole motion is inside; else (reason, message) for the first point
    (in flight order) outside."""
    blocker = envelope.blocker()
    if blocker is not None:
        return blocker
    fence = envelope.fence
    if fence is None:
        return None  # no fence: the limits are planned in, nothing to check
    budget = _MAX_ARC_SAMPLES
    tested: Vec3 | None = None
    for leg in motion.profile.legs:
        seg = leg.segment
        if isinstance(seg, Line):
            points = _line_points(seg.start, seg.end, fence.polygon)
        elif _level(seg):
            points = _level_arc_points(seg, fence)
        elif fence.holds_ball(*seg.centre, seg.radius_m):
            continue  # every point of it is within its radius of a centre that far inside
        else:
            n = max(1, math.ceil(seg.length_m / ARC_STEP_M))
            budget -= n
            if budget < 0:
                return Reason.MOTION_INVALID, (
                    "its climbing or descending corners run close to the fence for too "
                    f"long to check (over {_MAX_ARC_SAMPLES * ARC_STEP_M:g} m): round them "
                    "with a smaller corner_radius_m or keep them farther inside")
            points = [seg.point(seg.length_m * k / n) for k in range(n + 1)]
        for point in points:
            if point == tested:
                continue  # a segment starts where the one before it ended
            tested = point
            if not fence.contains(*point):
                refusal = _outside(envelope, point)
                if refusal is not None:  # (a point on the very edge may pass `admit`)
                    return refusal
    return None


def _outside(envelope: Envelope, point: Vec3) -> tuple[Reason, str] | None:
    n, e, d = point
    verdict = envelope.admit(PositionNed(n, e, d))
    if verdict.setpoint is not None:
        return None
    assert verdict.reason is not None
    why = verdict.message.split("outside the fence: ")[-1].removeprefix("refused: ")
    return verdict.reason, (f"the path leaves the envelope at ({n:.1f}, {e:.1f}, {d:.1f}) m "
                            f"NED: {why}")


def _line_points(a: Vec3, b: Vec3, polygon: tuple[tuple[float, float], ...]) -> list[Vec3]:
    """The points of the line a -> b to test, in flight order: its ends and, when it meets
    a polygon edge (horizontally), a point of each piece between two such places (just past
    the first: where it leaves is what the refusal names). Meeting none, it is inside when
    its ends are."""
    dn, de = b[0] - a[0], b[1] - a[1]
    meets: set[float] = set()
    count = len(polygon)
    for i in range(count):
        (n1, e1), (n2, e2) = polygon[i], polygon[(i + 1) % count]
        en, ee = n2 - n1, e2 - e1
        denom = dn * ee - de * en
        if abs(denom) < 1e-12:
            continue  # parallel: an edge along the line is met at its neighbours' ends
        t = ((n1 - a[0]) * ee - (e1 - a[1]) * en) / denom
        u = ((n1 - a[0]) * de - (e1 - a[1]) * dn) / denom
        if 0.0 <= t <= 1.0 and -1e-9 <= u <= 1.0 + 1e-9:
            meets.add(t)
    if not meets:
        return [a, b]
    beyond = _BEYOND_M / max(math.hypot(dn, de), 1e-9)
    return [a] + [_along(a, b, t) for t in _pieces(sorted(meets | {0.0, 1.0}), beyond)] + [b]


def _pieces(bounds: list[float], beyond: float) -> list[float]:
    """A point of each piece between two consecutive bounds (in or out whole there): just
    past its start, or its middle when it is shorter than twice that."""
    return [t0 + min(beyond, (t1 - t0) / 2) for t0, t1 in itertools.pairwise(bounds)
            if t1 - t0 > 1e-12]


def _along(a: Vec3, b: Vec3, t: float) -> Vec3:
    return a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2])


def _level(arc: Arc) -> bool:
    """The arc keeps its altitude: its plane is horizontal."""
    return abs(arc.e1[2]) < 1e-9 and abs(arc.e2[2]) < 1e-9


def _level_arc_points(arc: Arc, fence: FenceShape) -> list[Vec3]:
    """The points of a level arc to test, in flight order: its ends and a point of each
    piece between two places where its circle meets a polygon edge or the distance circle
    (in or out whole between two of them: `_pieces`). A meeting at the start may come back
    as nearly 2 pi: its piece is tiny, and the one from the start is tested anyway."""
    radius, sweep = arc.radius_m, abs(arc.sweep_rad)
    span = min(sweep, 2 * math.pi)  # after a whole turn an arc only repeats its points
    meets = {o for o in _meetings(arc, fence) if o <= span}
    pieces = _pieces(sorted(meets | {0.0, span}), _BEYOND_M / radius) if meets else []
    return ([arc.point(0.0)] + [arc.point(o * radius) for o in pieces]
            + [arc.point(arc.length_m)])


def _meetings(arc: Arc, fence: FenceShape) -> list[float]:
    """Offsets (radians along the arc's sweep from its start, in [0, 2 pi)) of the
    points of its whole circle that lie on a polygon edge or on the distance circle."""
    c, r, e1, e2 = arc.centre, arc.radius_m, arc.e1, arc.e2

    def frame(n: float, e: float) -> tuple[float, float]:  # the arc's plane: p = r (cos, sin)
        dn, de = n - c[0], e - c[1]
        return dn * e1[0] + de * e1[1], dn * e2[0] + de * e2[1]

    angles: list[float] = []
    for (n1, e1_), (n2, e2_) in edges_near(c[0], c[1], r, fence.polygon):
        ax, ay = frame(n1, e1_)
        bx, by = frame(n2, e2_)
        dx, dy = bx - ax, by - ay
        a2 = dx * dx + dy * dy
        if a2 <= 1e-18:
            continue
        half_b = ax * dx + ay * dy  # |A + t D|^2 = r^2: a2 t^2 + 2 half_b t + (|A|^2 - r^2)
        disc = half_b * half_b - a2 * (ax * ax + ay * ay - r * r)
        if disc < 0.0:
            continue
        root = math.sqrt(disc)
        for t in ((-half_b - root) / a2, (-half_b + root) / a2):
            if 0.0 <= t <= 1.0:
                angles.append(math.atan2(ay + t * dy, ax + t * dx))
    s, home = fence.settings, fence.home
    if s.max_distance_m is not None:
        hx, hy = frame(home.north_m, home.east_m)
        m = math.hypot(hx, hy)
        if m > 1e-9:  # |r u - H| = R  <=>  cos(phi - psi) = (r^2 + m^2 - R^2) / (2 r m)
            k = (r * r + m * m - s.max_distance_m ** 2) / (2 * r * m)
            if -1.0 <= k <= 1.0:
                psi, delta = math.atan2(hy, hx), math.acos(k)
                angles += [psi - delta, psi + delta]
    direction = 1.0 if arc.sweep_rad >= 0 else -1.0
    return [((phi - arc.start_rad) * direction) % (2 * math.pi) for phi in angles]
