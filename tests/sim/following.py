"""Fly a planned motion on the sim's dynamics alone, as the daemon streams it to PX4.

The daemon's own planner (core/motion_path + motion_profile) makes the plan; it is
sampled at the stream's 20 Hz into position + velocity + acceleration targets, and the
sim's `Dynamics` integrates at the sim's 100 Hz tick. No sockets and no clock: a 40 m
goto takes milliseconds, so the sim tests can judge the following figures that the
real-PX4 tier measures (tests/px4/test_px4_following.py) with the same code
(bench/following.py).
"""

from __future__ import annotations

from bench.following import Following, Planned
from offboardd.core.motion_path import PathGeometry, Vec3, orbit_around, path_through
from offboardd.core.motion_profile import Limits, plan_path
from offboardd.sim.dynamics import Dynamics
from offboardd.sim.dynamics import Limits as SimLimits
from offboardd.sim.setpoints import KinematicTarget

STREAM_HZ = 20.0
TICK_HZ = 100.0
ALT_M = 5.0
SETTLE_S = 2.5


def limits(speed_m_s: float) -> Limits:
    """The daemon's defaults: [envelope] 12 / 3 / 1.5 m/s, 3 m/s², [motion] 4 m/s³."""
    return Limits(speed_m_s=speed_m_s, max_horizontal_m_s=12.0, max_up_m_s=3.0,
                  max_down_m_s=1.5, max_accel_m_s2=3.0, max_jerk_m_s3=4.0)


def hovering(at: Vec3) -> Dynamics:
    """A body at rest in the air at `at`, settled on a position target there."""
    dyn = Dynamics()
    dyn.state.pos_m = list(at)
    hold = KinematicTarget(at, (None, None, None), (None, None, None))
    for _ in range(int(2 * TICK_HZ)):
        dyn.step(1 / TICK_HZ, hold, SimLimits())
    return dyn


def fly(dyn: Dynamics, path: PathGeometry, speed_m_s: float) -> Following:
    """Stream `path`'s plan at `speed_m_s` on time (no pacing) to `dyn`, then its end for
    SETTLE_S: the plan as streamed and the flight, for bench.following."""
    profile = plan_path(path, limits(speed_m_s))
    end_s = sum(leg.trajectory.duration for leg in profile.legs) + SETTLE_S
    plan: list[Planned] = []
    flown: list[tuple[float, Vec3]] = []
    target: KinematicTarget | None = None
    per_send = round(TICK_HZ / STREAM_HZ)
    for tick in range(int(end_s * TICK_HZ)):
        t_s = tick / TICK_HZ
        if tick % per_send == 0:
            st = profile.state_at(t_s)
            target = KinematicTarget(st.position, st.velocity, st.acceleration)
            plan.append(Planned(t_s, st.position, st.velocity))
        assert target is not None
        dyn.step(1 / TICK_HZ, target, SimLimits())
        flown.append((t_s + 1 / TICK_HZ, (dyn.state.pos_m[0], dyn.state.pos_m[1],
                                           dyn.state.pos_m[2])))
    return Following(plan, flown)


def goto(speed_m_s: float, north_m: float) -> Following:
    start = (0.0, 0.0, -ALT_M)
    return fly(hovering(start), path_through(start, [(north_m, 0.0, -ALT_M)], 0.0), speed_m_s)


def corner(speed_m_s: float = 3.0, side_m: float = 16.0, radius_m: float = 3.0) -> Following:
    start = (0.0, 0.0, -ALT_M)
    waypoints = [(side_m, 0.0, -ALT_M), (side_m, side_m, -ALT_M)]
    return fly(hovering(start), path_through(start, waypoints, radius_m), speed_m_s)


def orbit(centre: Vec3, radius_m: float, speed_m_s: float = 3.0) -> Following:
    start = (centre[0], centre[1] + radius_m, centre[2])
    return fly(hovering(start), orbit_around(start, centre, radius_m, 1.0, True), speed_m_s)
