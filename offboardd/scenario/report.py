"""What the scenario runner reports: live progress, per-leg results, the summary, its error.

Frozen values, built by the runner and read by its callers (the `scenario` command's
plain-text output, the demo's terminal display and its plot). Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offboardd.scenario.geometry import Vector


class ScenarioError(Exception):
    """The mission could not go on (a leg timed out, control was lost, not ready...)."""


@dataclass(frozen=True)
class Progress:
    """One live update: which leg, how far through it, and what the vehicle reports."""

    leg_index: int  # 0-based
    leg_count: int
    leg_name: str
    fraction: float  # 0..1 through this leg
    phase: str  # the daemon's phase ("active", "releasing", "idle"...)
    fc_mode: str  # what PX4 reports ("OFFBOARD", "AUTO.LAND"...)
    armed: bool
    position_ned_m: Vector | None  # latest telemetry/position, None before the first one
    elapsed_s: float  # since the mission started
    leg_done: bool = False  # the leg's last update (fraction 1.0 when it succeeded)


@dataclass(frozen=True)
class PathSample:
    t_s: float  # since the mission started
    north_m: float
    east_m: float
    down_m: float

    @property
    def altitude_m(self) -> float:
        return -self.down_m


@dataclass(frozen=True)
class LegResult:
    name: str
    kind: str  # "takeoff", "goto", "velocity", "release", "land"
    ok: bool
    start_s: float
    duration_s: float
    max_tracking_error_m: float | None  # None for legs with no commanded path
    detail: str = ""


@dataclass(frozen=True)
class Summary:
    mission: str
    ok: bool
    failure: str | None
    legs: tuple[LegResult, ...]
    total_s: float
    commanded: tuple[PathSample, ...] = field(repr=False)
    flown: tuple[PathSample, ...] = field(repr=False)
    # (t_s, m/s) of the path and orbit legs as the daemon planned them (state.motion)
    planned_speed: tuple[tuple[float, float], ...] = field(default=(), repr=False)

    @property
    def max_tracking_error_m(self) -> float | None:
        errors = [leg.max_tracking_error_m for leg in self.legs
                  if leg.max_tracking_error_m is not None]
        return max(errors) if errors else None

    def lines(self) -> list[str]:
        """A human summary, one line per leg, for a terminal or a log."""
        verdict = "completed" if self.ok else f"FAILED: {self.failure}"
        out = [f"mission {self.mission!r} {verdict} in {self.total_s:.1f} s"]
        for leg in self.legs:
            err = ("" if leg.max_tracking_error_m is None
                   else f"  max tracking error {leg.max_tracking_error_m:.2f} m")
            mark = "ok  " if leg.ok else "FAIL"
            out.append(f"  {mark} {leg.name:<15} {leg.duration_s:5.1f} s{err}"
                       + (f"  ({leg.detail})" if leg.detail else ""))
        worst = self.max_tracking_error_m
        if worst is not None:
            out.append(f"  max tracking error {worst:.2f} m (distance from the commanded path)")
        out.append(f"  {len(self.flown)} flown samples, {len(self.commanded)} commanded")
        return out

    def as_dict(self, *, samples: bool = True) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "mission": self.mission, "ok": self.ok, "failure": self.failure,
            "total_s": round(self.total_s, 3),
            "max_tracking_error_m": self.max_tracking_error_m,
            "legs": [leg.__dict__ for leg in self.legs],
        }
        if samples:
            doc["commanded"] = [list(s.__dict__.values()) for s in self.commanded]
            doc["flown"] = [list(s.__dict__.values()) for s in self.flown]
            doc["sample_fields"] = ["t_s", "north_m", "east_m", "down_m"]
            doc["planned_speed"] = [list(pair) for pair in self.planned_speed]
        return doc
