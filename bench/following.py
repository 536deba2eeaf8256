"""How a vehicle follows a moving plan: lag in time and distance, lead, overshoot, radius.

Shared by the real-PX4 tier (tests/px4/test_px4_following.py, PX4 SIH and the built-in
sim through the same tee) and the sim's own tests. Input is what was streamed, `Sent`
(time, planned position and velocity, NED) and what was flown (time, position, NED),
both on one clock. Each flown sample is judged against the plan as streamed at its time.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.tracking import Vec3, nearest_on_segment, polyline_distance_m
from offboardd.core.motion_path import dot, norm, sub


@dataclass(frozen=True)
class Planned:
    t_s: float
    pos_ned_m: Vec3
    vel_ned_m_s: Vec3


class Following:
    """The plan as streamed (`plan`, sorted by time) against the flown samples."""

    def __init__(self, plan: Sequence[Planned], flown: Sequence[tuple[float, Vec3]]) -> None:
        self.plan = list(plan)
        self._times = [p.t_s for p in self.plan]
        self.flown = [(t, p) for t, p in flown if self.plan and t >= self.plan[0].t_s]

    def planned_at(self, t_s: float) -> Planned | None:
        """The setpoint in force at `t_s` (the last one streamed before it)."""
        i = bisect.bisect_right(self._times, t_s) - 1
        return self.plan[i] if i >= 0 else None

    def lead_m(self, t_s: float, pos: Vec3) -> float:
        """How far the planned point in force is from the vehicle."""
        sp = self.planned_at(t_s)
        return math.inf if sp is None else math.dist(sp.pos_ned_m, pos)

    def along_lag_m(self, t_s: float, pos: Vec3) -> float | None:
        """The planned point's lead along its direction of travel (None at rest)."""
        sp = self.planned_at(t_s)
        if sp is None:
            return None
        speed = norm(sp.vel_ned_m_s)
        if speed < 0.1:
            return None
        return dot(sub(sp.pos_ned_m, pos), sp.vel_ned_m_s) / speed

    def time_lag_s(self, t_s: float, pos: Vec3, window_s: float = 3.0) -> float | None:
        """How long ago the plan passed nearest the vehicle's position now."""
        hi = bisect.bisect_right(self._times, t_s)
        lo = bisect.bisect_left(self._times, t_s - window_s)
        best, best_t = math.inf, None
        for a, b in zip(self.plan[lo:hi - 1], self.plan[lo + 1:hi], strict=True):
            f, d = nearest_on_segment(pos, a.pos_ned_m, b.pos_ned_m)
            if d < best:
                best, best_t = d, a.t_s + f * (b.t_s - a.t_s)
        return None if best_t is None else t_s - best_t

    def cruise(self, speed_m_s: float, share: float = 0.97) -> list[tuple[float, Vec3]]:
        """The flown samples while the plan ran at `speed_m_s` (its cruise) for 1.5 s or
        more: the vehicle has settled into its constant-speed lag there."""
        out = []
        for t, p in self.flown:
            steady = all(
                (sp := self.planned_at(t - back)) is not None
                and norm(sp.vel_ned_m_s) >= share * speed_m_s
                for back in (0.0, 0.5, 1.0, 1.5))
            if steady:
                out.append((t, p))
        return out


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else math.nan


def straight_figures(f: Following, speed_m_s: float) -> dict[str, float]:
    """A straight goto: the lag at cruise (median, time and along-track distance) and the
    largest lead of the planned point over the vehicle (the acceleration phase)."""
    cruise = f.cruise(speed_m_s)
    lags_s = [x for t, p in cruise if (x := f.time_lag_s(t, p)) is not None]
    lags_m = [x for t, p in cruise if (x := f.along_lag_m(t, p)) is not None]
    return {"cruise_lag_s": _median(lags_s), "cruise_lag_m": _median(lags_m),
            "max_lead_m": round(max((f.lead_m(t, p) for t, p in f.flown), default=math.nan), 3),
            "cruise_samples": len(cruise)}


def corner_errors_m(f: Following, vertex: Vec3, within_m: float = 8.0) -> list[float]:
    """Sorted distances to the streamed path of the samples flown within `within_m` of a
    corner's waypoint: its overshoot, apart from how the vehicle entered the path."""
    window_s = 3.0
    out = []
    for t, p in f.flown:
        if math.dist(p, vertex) < within_m:
            line = [x.pos_ned_m for x in f.plan if t - window_s <= x.t_s <= t]
            if len(line) >= 2:
                out.append(polyline_distance_m(p, line))
    return sorted(out)


def radial_errors_m(f: Following, centre: Vec3, radius_m: float, speed_m_s: float
                    ) -> dict[str, float]:  # fmt: skip
    """An orbit: |distance to the centre - radius| while the plan circled at speed."""
    errors = sorted(abs(math.hypot(p[0] - centre[0], p[1] - centre[1]) - radius_m)
                    for _, p in f.cruise(speed_m_s))
    if not errors:
        return {"radial_median_m": math.nan, "radial_max_m": math.nan}
    return {"radial_median_m": _median(errors), "radial_max_m": round(errors[-1], 3)}
