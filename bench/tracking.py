"""Planned against flown: how far a flown path strays from the setpoints streamed for it.

Shared by bench/motion.py (the sim) and the real-PX4 tier (tests/px4/test_px4_motion.py).
Each flown sample is compared with the polyline of the setpoints sent in the `window_s`
before it (a vehicle follows a little behind), so a path that crosses itself is never
judged against its other pass.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

Vec3 = tuple[float, float, float]


def nearest_on_segment(p: Vec3, a: Vec3, b: Vec3) -> tuple[float, float]:
    """(how far along a -> b, 0..1, the point nearest `p` lies; its distance from `p`)."""
    ab = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
    denom = ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2
    t = 0.0 if denom == 0 else max(0.0, min(1.0, (
        (p[0] - a[0]) * ab[0] + (p[1] - a[1]) * ab[1] + (p[2] - a[2]) * ab[2]) / denom))
    return t, math.dist(p, (a[0] + t * ab[0], a[1] + t * ab[1], a[2] + t * ab[2]))


def polyline_distance_m(p: Vec3, line: Sequence[Vec3]) -> float:
    return min((nearest_on_segment(p, a, b)[1] for a, b in itertools.pairwise(line)),
               default=math.inf)


def tracking_errors_m(flown: Sequence[tuple[float, Vec3]], sent: Sequence[tuple[float, Vec3]],
                      window_s: float = 3.0) -> list[float]:
    """Sorted distances of each flown (t, position) to the sent (t, position) polyline of
    the `window_s` before it (both on one clock)."""
    times = [t for t, _ in sent]
    points = [p for _, p in sent]
    errors = []
    for t, p in flown:
        hi, lo = bisect.bisect_right(times, t), bisect.bisect_left(times, t - window_s)
        if hi - lo >= 2:
            errors.append(polyline_distance_m(p, points[lo:hi]))
    return sorted(errors)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]
