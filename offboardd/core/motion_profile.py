"""Time along a motion's path: jerk-limited speed profiles computed by ruckig.

Each segment of a PathGeometry gets a one-dimensional ruckig profile along its arc
length, from the speed it is entered at to the speed it is left at, within that
segment's speed limit (the commanded speed, the envelope's horizontal and vertical
limits for its direction, and on an arc sqrt(LATERAL_SHARE a r), so the centripetal part
leaves room to brake), the acceleration limit (on an arc, what the centripetal part
leaves) and the jerk limit. The speeds at the joins come from a forward and a backward
pass, so every slow-down fits in the segment before it. The result is time-
parameterised: `state_at(t)` gives position, velocity and acceleration (tangential plus
centripetal) in local NED, which the stream sends as position + velocity + acceleration
feed-forward.

ruckig (https://github.com/pantor/ruckig) is the time-optimal online trajectory generator
robotics uses; it plans in ~1 us here, so re-planning on every command costs nothing.

Pure apart from ruckig (no clock: t is seconds since the profile's start).
"""

from __future__ import annotations

import bisect
import importlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruckig import Trajectory

from offboardd.core.motion_path import Line, PathGeometry, Segment, Vec3, add, norm, scale, unit

LATERAL_SHARE = 0.7  # of the acceleration limit an arc's centripetal part may use
_MIN_SPEED_M_S = 0.05


@dataclass(frozen=True)
class Limits:
    """What the envelope allows a planned motion (motion_settings builds it)."""

    speed_m_s: float  # the command's speed
    max_horizontal_m_s: float
    max_up_m_s: float
    max_down_m_s: float
    max_accel_m_s2: float  # min(envelope max_acceleration, g tan(max_tilt))
    max_jerk_m_s3: float


class PlanError(ValueError):
    """The motion cannot be planned (ruckig found no profile): refused, never flown."""


@dataclass(frozen=True)
class Leg:
    segment: Segment
    trajectory: Trajectory
    t0_s: float
    s0_m: float  # distance along the whole path where this leg begins


@dataclass(frozen=True)
class MotionState:
    position: Vec3
    velocity: Vec3
    acceleration: Vec3
    leg: int
    s_m: float  # distance along the whole path


def segment_speed_limit(seg: Segment, lim: Limits) -> float:
    """The highest speed allowed anywhere on `seg` (constant over it)."""
    if isinstance(seg, Line):
        t = seg.tangent(0.0)
        h, down = math.hypot(t[0], t[1]), t[2]
    else:  # the largest vertical share of the arc's plane
        down = math.hypot(seg.e1[2], seg.e2[2])
        h = 1.0
    v = lim.speed_m_s
    if h > 1e-6:
        v = min(v, lim.max_horizontal_m_s / h)
    if abs(down) > 1e-6:
        v = min(v, (lim.max_down_m_s if down > 0 else lim.max_up_m_s) / abs(down))
        if not isinstance(seg, Line):
            v = min(v, lim.max_up_m_s / abs(down))
    if not isinstance(seg, Line):
        v = min(v, math.sqrt(LATERAL_SHARE * lim.max_accel_m_s2 * seg.radius_m))
    return max(v, _MIN_SPEED_M_S)


def _segment_accel(seg: Segment, v_lim: float, lim: Limits) -> float:
    if isinstance(seg, Line):
        return lim.max_accel_m_s2
    centripetal = v_lim * v_lim * seg.curvature_per_m
    return max(0.1, math.sqrt(max(0.0, lim.max_accel_m_s2**2 - centripetal**2)))


def speed_change_distance_m(v1: float, v2: float, accel: float, jerk: float) -> float:
    """Distance a jerk-limited change of speed v1 -> v2 takes (zero acceleration at both
    ends): the average speed times the time the change takes."""
    dv = abs(v1 - v2)
    t = dv / accel + accel / jerk if dv >= accel * accel / jerk else 2 * math.sqrt(dv / jerk)
    return (v1 + v2) / 2 * t


def _reachable(v_from: float, length_m: float, accel: float, jerk: float, cap: float) -> float:
    """The highest speed (<= cap) that a change from v_from reaches within length_m."""
    lo, hi = 0.0, cap
    if speed_change_distance_m(v_from, hi, accel, jerk) <= length_m:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        if speed_change_distance_m(v_from, mid, accel, jerk) <= length_m:
            lo = mid
        else:
            hi = mid
    return lo


def _ruckig() -> Any:
    """ruckig, imported on the first motion (~3 ms once): a daemon that only streams
    setpoints never loads it and its C++ runtime (2.1 MB of RSS, bench/README.md)."""
    return importlib.import_module("ruckig")


def _ruckig_1d(v0: float, a0: float, *, v_max: float, a_max: float, j_max: float,
               target_s: float | None, target_v: float) -> Trajectory:
    rk = _ruckig()
    otg, inp, traj = rk.Ruckig(1), rk.InputParameter(1), rk.Trajectory(1)
    inp.current_position, inp.current_velocity, inp.current_acceleration = [0.0], [v0], [a0]
    inp.max_velocity, inp.max_acceleration, inp.max_jerk = [v_max], [a_max], [j_max]
    if target_s is None:
        inp.control_interface = rk.ControlInterface.Velocity
        inp.target_velocity, inp.target_acceleration = [target_v], [0.0]
    else:
        inp.target_position, inp.target_velocity, inp.target_acceleration = (
            [target_s], [target_v], [0.0])
        inp.min_velocity = [0.0]  # never backwards along the path
    try:
        otg.calculate(inp, traj)
    except rk.RuckigError as exc:
        raise PlanError(f"no jerk-limited profile: {str(exc).splitlines()[0]}") from exc
    return traj


class Profile:
    """Legs in time order; `duration_s` after which the motion rests at `end`."""

    def __init__(self, legs: list[Leg], jerk_m_s3: float) -> None:
        if not legs:
            raise PlanError("nothing to fly: the path has no length")
        self.legs = legs
        self._jerk = jerk_m_s3
        self._starts = [leg.t0_s for leg in legs]
        last = legs[-1]
        self.duration_s = last.t0_s + last.trajectory.duration
        self.length_m = last.s0_m + last.segment.length_m
        # Where along `legs` it begins: a stop on a path begins mid-way along its base's.
        self.s_start_m = 0.0
        self.leg_start = 0

    def state_at(self, t_s: float) -> MotionState:
        t_s = min(max(t_s, 0.0), self.duration_s)
        i = max(0, bisect.bisect_right(self._starts, t_s) - 1)
        leg = self.legs[i]
        s, v, a = (x[0] for x in leg.trajectory.at_time(t_s - leg.t0_s))
        seg = leg.segment
        s = min(max(s, 0.0), seg.length_m)
        tangent = seg.tangent(s)
        centripetal = v * v * seg.curvature_per_m
        if centripetal > 0.0:
            # A line meets an arc with a step in curvature (no clothoids here), so the
            # centripetal feed-forward would step too: it builds up and fades at the jerk
            # limit over the arc's ends instead, and PX4's position loop covers the rest.
            ramp_m = max(1e-6, v * centripetal / self._jerk)
            centripetal *= min(1.0, s / ramp_m, (seg.length_m - s) / ramp_m)
        accel = add(scale(tangent, a), scale(seg.normal(s), centripetal))
        return MotionState(seg.point(s), scale(tangent, v), accel, i, leg.s0_m + s)

    @property
    def flown_m(self) -> float:
        """The distance it flies (a stop on a path: only the stretch it brakes over)."""
        return self.length_m - self.s_start_m

    def then(self, other: Profile) -> Profile:
        return Profile(_shifted(self, other), self._jerk)


def _shifted(first: Profile, second: Profile) -> list[Leg]:
    """`first`'s legs, then `second`'s moved to begin where `first` ends."""
    return first.legs + [Leg(leg.segment, leg.trajectory, leg.t0_s + first.duration_s,
                             leg.s0_m + first.length_m) for leg in second.legs]


class Chained(Profile):
    """`first`, then `second` from where it ends, when `first` is not timed by its legs:
    a stop on a running motion's path (PathStop), then the replacing motion's path."""

    def __init__(self, first: Profile, second: Profile) -> None:
        super().__init__(_shifted(first, second), first._jerk)
        self._first, self._second = first, second
        self.s_start_m, self.leg_start = first.s_start_m, first.leg_start

    def state_at(self, t_s: float) -> MotionState:
        if t_s <= self._first.duration_s:
            return self._first.state_at(t_s)
        st = self._second.state_at(t_s - self._first.duration_s)
        return MotionState(st.position, st.velocity, st.acceleration,
                           st.leg + len(self._first.legs), st.s_m + self._first.length_m)

    def then(self, other: Profile) -> Profile:
        return Chained(self, other)


class PathStop(Profile):
    """A stop on a running profile's own path: the profile flown on with its clock slowed
    smoothly to a standstill. A straight stop along the direction of travel can leave a
    fence the path keeps to (an orbit near its edge: review; a `stop` was then refused and
    the motion flew on, and a lease lapse held 0.7 m outside); the path was checked as a
    whole, so a stop on it stays inside.

    The speed is scaled by k(t), from 1 to 0 over `duration_s` (a smoothstep, so the
    braking builds up and fades out); the tangential deceleration k'v peaks at 1.5 v / T,
    T chosen to keep it within the share of the acceleration limit an arc leaves free and
    within the jerk limit; the path's own acceleration scales by k² (the centripetal part
    falls with the speed). `rate` is where k starts: the running motion's clock rate
    (motion_clock: below 1 while the vehicle trails), so the stop begins at the speed
    being streamed."""

    def __init__(self, base: Profile, base_t0_s: float, lim: Limits, rate: float = 1.0
                 ) -> None:
        super().__init__(base.legs, base._jerk)
        self._base, self._tb0, self._k0 = base, base_t0_s, rate
        brake_m_s2 = max(0.1, math.sqrt(1.0 - LATERAL_SHARE**2) * lim.max_accel_m_s2)
        t_s, speed = 0.0, rate * norm(base.state_at(base_t0_s).velocity)
        for _ in range(3):  # the peak speed over the stretch the stop flies, then T again
            t_s = max(0.1, 1.5 * speed / brake_m_s2, math.sqrt(6.0 * speed / lim.max_jerk_m_s3))
            steps = 20
            speed = rate * max(
                norm(base.state_at(base_t0_s + rate * t_s / 2 * k / steps).velocity)
                for k in range(steps + 1))
        self.duration_s = t_s
        begin = base.state_at(base_t0_s)
        self.s_start_m, self.leg_start = begin.s_m, begin.leg
        self.length_m = self.state_at(t_s).s_m  # where it ends along its base's legs

    def state_at(self, t_s: float) -> MotionState:
        big_t = self.duration_s
        u = min(max(t_s, 0.0), big_t) / big_t
        k = self._k0 * (1.0 - 3.0 * u * u + 2.0 * u**3)
        k_rate = self._k0 * (-6.0 * u + 6.0 * u * u) / big_t
        st = self._base.state_at(self._tb0 + self._k0 * big_t * (u - u**3 + u**4 / 2.0))
        return MotionState(st.position, scale(st.velocity, k),
                           add(scale(st.acceleration, k * k), scale(st.velocity, k_rate)),
                           st.leg, st.s_m)

    def then(self, other: Profile) -> Profile:
        return Chained(self, other)  # (its legs are its base's: they do not time it)


def plan_path(path: PathGeometry, lim: Limits, entry_speed_m_s: float = 0.0,
              entry_accel_m_s2: float = 0.0) -> Profile:
    """The profile of `path`, entered at `entry_speed_m_s` along its first tangent."""
    segs = [seg for seg in path.segments if seg.length_m > 1e-6]
    stops = [stop for seg, stop in zip(path.segments, path.stops_after, strict=True)
             if seg.length_m > 1e-6]
    if not segs:
        raise PlanError("nothing to fly: the path has no length")
    j = lim.max_jerk_m_s3
    v_lims = [segment_speed_limit(seg, lim) for seg in segs]
    accels = [_segment_accel(seg, v, lim) for seg, v in zip(segs, v_lims, strict=True)]
    # joins[k]: the speed between segment k-1 and k; joins[0] the entry, joins[-1] = 0.
    joins = [entry_speed_m_s] + [
        0.0 if stops[k] else min(v_lims[k], v_lims[k + 1]) for k in range(len(segs) - 1)
    ] + [0.0]
    for k in range(len(segs) - 1, 0, -1):  # backward: every slow-down fits
        joins[k] = min(joins[k], _reachable(joins[k + 1], segs[k].length_m, accels[k], j,
                                            joins[k]))
    for k in range(1, len(segs)):  # forward: every speed-up fits
        joins[k] = min(joins[k], _reachable(joins[k - 1], segs[k - 1].length_m,
                                            accels[k - 1], j, joins[k]))
    legs: list[Leg] = []
    t0 = s0 = 0.0
    a_in = entry_accel_m_s2
    for k, seg in enumerate(segs):
        v_max = max(v_lims[k], joins[k])
        traj = _ruckig_1d(joins[k], a_in, v_max=v_max, a_max=accels[k], j_max=j,
                          target_s=seg.length_m, target_v=joins[k + 1])
        legs.append(Leg(seg, traj, t0, s0))
        t0 += traj.duration
        s0 += seg.length_m
        a_in = 0.0
    return Profile(legs, j)


def plan_stop(position: Vec3, velocity: Vec3, acceleration: Vec3, lim: Limits) -> Profile:
    """A jerk-limited stop along the current direction of travel (the acceleration across
    it is dropped); a vehicle at rest gets a zero-length leg that ends at once."""
    speed = norm(velocity)
    direction = unit(velocity) if speed > 1e-3 else (1.0, 0.0, 0.0)
    a_along = sum(d * a for d, a in zip(direction, acceleration, strict=True))
    traj = _ruckig_1d(speed, a_along, v_max=max(speed, _MIN_SPEED_M_S),
                      a_max=lim.max_accel_m_s2, j_max=lim.max_jerk_m_s3,
                      target_s=None, target_v=0.0)
    length = max(traj.at_time(traj.duration)[0][0], 0.0)
    end = add(position, scale(direction, length))
    return Profile([Leg(Line(position, end), traj, 0.0, 0.0)], lim.max_jerk_m_s3)

