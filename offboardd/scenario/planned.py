"""The daemon's plan of a running motion, as a mission script sees it: `state.motion`
carries the point and speed streamed now (`setpoint_ned_m`, `speed_m_s`), so the runner
records the planned path and speed profile and judges the flown path against it.

Pure: the runner feeds it the state documents and positions it reads.
"""

from __future__ import annotations

import itertools
from typing import Any

from offboardd.scenario import geometry as geo
from offboardd.scenario.geometry import Vector

_RECENT_SEGMENTS = 40  # the flown position is judged against this much of the plan


class PlannedTrack:
    def __init__(self, command_id: str) -> None:
        self.command_id = command_id
        self.points: list[Vector] = []
        self.speeds: list[tuple[float, float]] = []  # (t_s, planned speed m/s)
        self.progress = 0.0

    def sample(self, state: dict[str, Any], t_s: float) -> Vector | None:
        """The planned point in `state` if it is this motion's (and new), else None."""
        motion = state.get("motion")
        if not isinstance(motion, dict) or motion.get("command_id") != self.command_id:
            return None
        point = motion.get("setpoint_ned_m")
        if not (isinstance(point, list) and len(point) == 3):
            return None
        self.progress = float(motion.get("progress", self.progress))
        here: Vector = (float(point[0]), float(point[1]), float(point[2]))
        if self.points and here == self.points[-1]:
            return None
        self.points.append(here)
        self.speeds.append((t_s, float(motion.get("speed_m_s", 0.0))))
        return here

    def error_m(self, position: Vector) -> float | None:
        """Distance from `position` to the recent plan (None before two points)."""
        recent = self.points[-_RECENT_SEGMENTS - 1:]
        if len(recent) < 2:
            return None
        return min(geo.distance_to_segment_m(position, a, b)
                   for a, b in itertools.pairwise(recent))
