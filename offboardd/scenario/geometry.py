"""Vector arithmetic for the scenario runner: local NED triples, distances, leg fractions.

Pure functions on plain tuples (north, east, down), in metres or metres per second.
"""

from __future__ import annotations

import math

Vector = tuple[float, float, float]  # north, east, down (m or m/s)


def add(a: Vector, b: Vector) -> Vector:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def scale(a: Vector, k: float) -> Vector:
    return (a[0] * k, a[1] * k, a[2] * k)


def distance_m(a: Vector, b: Vector) -> float:
    return math.dist(a, b)


def distance_to_segment_m(p: Vector, a: Vector, b: Vector) -> float:
    """Distance from p to the segment a-b (to a when a == b): the cross-track error."""
    ab = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
    length2 = ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2
    if length2 == 0.0:
        return distance_m(p, a)
    t = ((p[0] - a[0]) * ab[0] + (p[1] - a[1]) * ab[1] + (p[2] - a[2]) * ab[2]) / length2
    return distance_m(p, add(a, scale(ab, min(1.0, max(0.0, t)))))


def approach_fraction(start: Vector, target: Vector, now: Vector) -> float:
    """How far along from start to target (0..1) by remaining distance; 1 when start is there."""
    total = distance_m(start, target)
    if total < 1e-6:
        return 1.0
    return min(1.0, max(0.0, 1.0 - distance_m(now, target) / total))


def time_fraction(elapsed_s: float, duration_s: float) -> float:
    return min(1.0, max(0.0, elapsed_s / duration_s)) if duration_s > 0 else 1.0
