"""The mission as data: legs relative to where the vehicle starts, and the built-in missions.

A mission is a tuple of legs; every position is an offset in local NED from the vehicle's
position when the mission starts (on the ground), so the same mission flies wherever PX4's
EKF origin happens to be. Pure: no I/O, no clock; the runner (runner.py) flies it.

Each leg says how it is judged done: a position within `tolerance_m` (takeoff, goto), a
duration (velocity), the daemon reporting the release (release), the vehicle landed and
disarmed (land); and how long it may take (`timeout_s`).
"""

from __future__ import annotations

from dataclasses import dataclass

from offboardd.scenario.geometry import Vector


@dataclass(frozen=True)
class TakeoffLeg:
    """Engage and arm with a position setpoint `altitude_m` above the start position."""

    name: str
    altitude_m: float
    tolerance_m: float = 0.4
    timeout_s: float = 30.0


@dataclass(frozen=True)
class GotoLeg:
    """A position setpoint at `offset_ned_m` from the start position."""

    name: str
    offset_ned_m: Vector
    tolerance_m: float = 0.4
    timeout_s: float = 25.0


@dataclass(frozen=True)
class PathLeg:
    """One `path` command (planned and flown by the daemon): through `waypoints_ned_m`
    (offsets from the start position), corners rounded; done at its motion_done."""

    name: str
    waypoints_ned_m: tuple[Vector, ...]
    speed_m_s: float = 3.0
    corner_radius_m: float = 2.0
    timeout_s: float = 60.0


@dataclass(frozen=True)
class OrbitLeg:
    """One `orbit` command: `turns` round `center_ned_m` (an offset from the start) at
    `radius_m`, facing the centre; done at its motion_done."""

    name: str
    center_ned_m: Vector
    radius_m: float
    speed_m_s: float = 2.0
    turns: float = 1.0
    timeout_s: float = 60.0


MotionLeg = PathLeg | OrbitLeg


@dataclass(frozen=True)
class VelocityLeg:
    """A velocity setpoint held for `duration_s` (done by time, not by position)."""

    name: str
    velocity_ned_m_s: Vector
    duration_s: float


@dataclass(frozen=True)
class ReleaseLeg:
    """Hand control back (the daemon asks PX4 for its release mode, Hold by default)."""

    name: str = "release"
    timeout_s: float = 10.0


@dataclass(frozen=True)
class LandLeg:
    """Ask PX4 to land (AUTO.LAND); done when the vehicle is on the ground and disarmed."""

    name: str = "land"
    timeout_s: float = 60.0


Leg = TakeoffLeg | GotoLeg | PathLeg | OrbitLeg | VelocityLeg | ReleaseLeg | LandLeg
STEERED = (TakeoffLeg, GotoLeg, PathLeg, OrbitLeg, VelocityLeg)  # legs that fly a path


@dataclass(frozen=True)
class Mission:
    name: str
    legs: tuple[Leg, ...]

    def __post_init__(self) -> None:
        if not self.legs or not isinstance(self.legs[0], TakeoffLeg):
            raise ValueError(f"mission {self.name!r} must start with a takeoff leg")
        handed_back = False  # after a release or a land the vehicle is not ours to steer
        for leg in self.legs[1:]:
            if isinstance(leg, STEERED) and handed_back:
                raise ValueError(f"{leg.name}: no takeoff, goto or velocity leg after a "
                                 "release or land (control was handed back)")
            handed_back = handed_back or isinstance(leg, ReleaseLeg | LandLeg)
        for leg in self.legs:
            if isinstance(leg, TakeoffLeg) and not 0.5 <= leg.altitude_m <= 120.0:
                # 120 m: the usual regulatory ceiling; below 0.5 m PX4 may not leave the ground
                raise ValueError(f"{leg.name}: altitude_m {leg.altitude_m} outside 0.5..120")
            if isinstance(leg, VelocityLeg) and not 0 < leg.duration_s <= 60:
                raise ValueError(f"{leg.name}: duration_s {leg.duration_s} outside (0, 60]")


def square_mission(
    *, name: str = "square", altitude_m: float = 5.0, side_m: float = 8.0,
    speed_m_s: float = 3.0, corner_radius_m: float = 2.0, velocity_s: float = 3.0,
    tolerance_m: float = 0.4,
) -> Mission:
    """Takeoff, a square of `side_m` (N, E, S, W) at `altitude_m` as one `path` with rounded
    corners, an `orbit` inside it, a velocity leg east, release, land: the demo's mission
    (about 50 s on the built-in sim)."""
    up = -altitude_m
    half = side_m / 2
    square = ((side_m, 0.0, up), (side_m, side_m, up), (0.0, side_m, up), (0.0, 0.0, up))
    return Mission(name, (
        TakeoffLeg("takeoff", altitude_m, tolerance_m),
        PathLeg("square path", square, speed_m_s, corner_radius_m),
        OrbitLeg("orbit", (half, 0.0, up), half, speed_m_s * 2 / 3, 1.0),
        VelocityLeg("velocity east", (0.0, speed_m_s * 2 / 3, 0.0), velocity_s),
        ReleaseLeg(),
        LandLeg(),
    ))


MISSIONS: dict[str, Mission] = {
    "square": square_mission(),
    # the same shape, smaller and lower: for tests and a quick check (about 20 s)
    "short": square_mission(name="short", altitude_m=2.5, side_m=3.0, speed_m_s=2.0,
                            corner_radius_m=1.0, velocity_s=1.5, tolerance_m=0.5),
}
