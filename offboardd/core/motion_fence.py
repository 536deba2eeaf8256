"""A planned motion against the geofence, whole, before anything of it moves (issue 16).

Lines are judged exactly: the fence's distance circle and altitude band are convex, so a
line is inside them when its ends are; against a polygon (which may be concave) a line
with both ends inside is inside unless it crosses an edge, and the first crossing is
reported. Arcs are sampled every ARC_STEP_M. The first point outside refuses the whole
motion, named in the message. Pure.
"""

from __future__ import annotations

import math

from offboardd.core.envelope import Envelope
from offboardd.core.motion import Motion
from offboardd.core.motion_path import Line, Vec3, add, scale, sub, unit
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import PositionNed

ARC_STEP_M = 0.2
_BEYOND_M = 0.01  # a crossing is reported just past the edge, where the point is outside
_MAX_ARC_SAMPLES = 100_000


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
    for leg in motion.profile.legs:
        seg = leg.segment
        if isinstance(seg, Line):
            points = [seg.start]
            crossing = _first_crossing(seg.start, seg.end, fence.polygon)
            if crossing is not None:
                points.append(add(crossing, scale(unit(sub(seg.end, seg.start)), _BEYOND_M)))
            points.append(seg.end)
        else:
            n = max(1, math.ceil(seg.length_m / ARC_STEP_M))
            budget -= n
            if budget < 0:
                return Reason.MOTION_INVALID, "the path's arcs are too long to check"
            points = [seg.point(seg.length_m * k / n) for k in range(n + 1)]
        for point in points:
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


def _first_crossing(a: Vec3, b: Vec3,
                    polygon: tuple[tuple[float, float], ...]) -> Vec3 | None:
    """Where the line a -> b first crosses a polygon edge (horizontally), or None."""
    best_t: float | None = None
    dn, de = b[0] - a[0], b[1] - a[1]
    count = len(polygon)
    for i in range(count):
        (n1, e1), (n2, e2) = polygon[i], polygon[(i + 1) % count]
        en, ee = n2 - n1, e2 - e1
        denom = dn * ee - de * en
        if abs(denom) < 1e-12:
            continue  # parallel: an edge along the line is touched at its ends only
        t = ((n1 - a[0]) * ee - (e1 - a[1]) * en) / denom
        u = ((n1 - a[0]) * de - (e1 - a[1]) * dn) / denom
        if 0.0 < t < 1.0 and 0.0 <= u <= 1.0 and (best_t is None or t < best_t):
            best_t = t
    if best_t is None:
        return None
    return a[0] + best_t * dn, a[1] + best_t * de, a[2] + best_t * (b[2] - a[2])
