"""A many-cornered concave polygon fence, flown the same way by the daemon on real PX4 SIH
(tests/px4/test_px4_fence.py) and on the sim (tests/integration/test_envelope_e2e.py): a
128-corner circle of FENCE_M with a V-shaped dent east, a 3 m/s leg north-west into its
round part and a 2 m/s leg due east at the dent's tip, where two walls meet.

[SITL main 2026-11-29, two runs] the leg north-west stopped 7.49-7.52 m out (the flats
7.99 m), the leg east at 2.76-2.82 m (the tip 3.2 m; its stop line, 1 m in, 2.2 m: PX4
creeps on past the line by ~0.5 m, as at a circle fence). The sim, the same day: 7.54 m
and 2.70 m.
"""

from __future__ import annotations

import math

FENCE_M = 8.0
CORNERS = 128
DENT_FROM = 0.7  # of the radius: the arc east of it folded in
TIP_EAST_M = (2 * DENT_FROM - 1) * FENCE_M
NORTH_WEST_RAD = math.radians(-40.0)
LEG_NW_M_S, LEG_NW_S = 3.0, 8.0
LEG_EAST_M_S, LEG_EAST_S = 2.0, 6.0


def dented_circle(radius_m: float = FENCE_M, corners: int = CORNERS) -> list[list[float]]:
    """A `corners`-gon about the origin whose arc east of DENT_FROM x r is folded inwards
    about that line: a V-shaped dent whose tip, a concave corner, lies due east at
    (2 DENT_FROM - 1) r."""
    out = []
    fold_m = DENT_FROM * radius_m
    for k in range(corners):
        a = 2 * math.pi * k / corners
        n, e = radius_m * math.cos(a), radius_m * math.sin(a)
        out.append([round(n, 3), round(e if e <= fold_m else 2 * fold_m - e, 3)])
    return out


def check_legs(farthest_north_west_m: float, farthest_east_m: float) -> None:
    """Inside the fence on both legs, and not held far short of the stop line."""
    figures = (farthest_north_west_m, farthest_east_m)
    assert FENCE_M - 1.5 < farthest_north_west_m < FENCE_M, figures
    assert TIP_EAST_M - 1.5 < farthest_east_m < TIP_EAST_M, figures
