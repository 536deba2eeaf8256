"""A planned motion: a motion command turned into a timed path, and what it streams.

`plan(cmd, start, ...)` builds the path (motion_path) from where the motion starts and
times it (motion_profile). Where it starts: the running motion's planned state when one
runs (so a replacement continues from exactly what is being streamed: no step), else the
vehicle's estimate. Moving along the new path's first direction, the new profile takes
the speed over; moving any other way, it first stops (on the running motion's own path,
else jerk-limited along the current direction), then flies the path from there.

`Motion.setpoint_at(now)` is position + velocity + acceleration feed-forward with the
yaw policy applied; it rests at the end once `done(now)`. Its clock (motion_clock)
starts with `begin(now)` (the engine calls it once in ACTIVE), so an engaging goto waits
at its start through the warm-up, OFFBOARD and arming; `follow(now, vehicle)` at each
send slows it while the vehicle trails the planned point (`lead_vehicle` turns that on).

Pure: time is passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from offboardd.core.envelope_geometry import Home
from offboardd.core.motion_clock import MotionClock
from offboardd.core.motion_commands import (
    FollowPath,
    Goto,
    MotionCommand,
    Orbit,
    Place,
    Stop,
    Yaw,
    YawMode,
)
from offboardd.core.motion_path import (
    PathGeometry,
    Vec3,
    dot,
    norm,
    orbit_around,
    path_through,
    scale,
    unit,
)
from offboardd.core.motion_profile import (
    Limits,
    MotionState,
    PathStop,
    PlanError,
    Profile,
    plan_path,
    plan_stop,
    segment_speed_limit,
)
from offboardd.core.setpoints import AltitudeFrame, GlobalPosition, PositionVelocityNed

_ALIGNED_COS = 0.97  # moving within ~14 deg of the new path's direction: carry the speed on
_AT_REST_M_S = 0.1
_FACE_MIN_SHARE = 0.2  # face_travel turns only where the path has this much horizontal part


@dataclass(frozen=True)
class Start:
    """Where a new motion begins: position, velocity, acceleration (NED) and heading."""

    position: Vec3
    velocity: Vec3
    acceleration: Vec3
    yaw_rad: float | None


def to_local(place: Place, home: Home | None) -> Vec3:
    """A motion's place in local NED; a global one needs PX4's home (PlanError without)."""
    if not isinstance(place, GlobalPosition):
        return place.north_m, place.east_m, place.down_m
    if home is None:
        raise PlanError("a global_position needs PX4's home position, not known yet")
    if place.altitude_frame is AltitudeFrame.TERRAIN:
        raise PlanError("a motion cannot fly an altitude above terrain: use amsl or relative")
    north, east = home.to_local(place.lat_deg, place.lon_deg)
    above_home = place.alt_m if place.altitude_frame is AltitudeFrame.RELATIVE else (
        place.alt_m - home.alt_amsl_m)
    return north, east, home.down_m - above_home


class Motion:
    def __init__(self, cmd: MotionCommand, profile: Profile, yaw: Yaw, start_yaw: float | None,
                 centre: Vec3 | None = None) -> None:
        self.command = cmd
        self.profile = profile
        self._yaw = yaw
        self._last_yaw = start_yaw
        self._centre = centre
        self.clock = MotionClock()  # begin(); before it the motion waits at its start
        self.unleased_until_s: float | None = None  # on_lease_lapse = finish: the extension
        self.internal = False  # the engine's own (a lease-lapse stop): no events of its own
        # Its whole path was found inside the fence (motion_fence): streamed as planned.
        # Otherwise (the engine's own stops, a `stop` whose braking reaches past the
        # fence) its points are shaped by the fence as any setpoint is (Envelope.shape).
        self.fence_checked = False
        self.waiting_told = False  # the warning that it waits for the vehicle, given once
        self._last: tuple[float, MotionState] | None = None  # (profile time, its state)

    @property
    def kind(self) -> str:
        return self.command.kind.value

    @property
    def command_id(self) -> str:
        return self.command.command_id

    def lead_vehicle(self, max_lead_m: float, lim: Limits) -> Motion:
        """Let the clock wait for a vehicle that trails the planned point by more than
        half of `max_lead_m` (motion_clock; 0: the clock runs on time)."""
        self.clock = MotionClock(max_lead_m, lim.max_accel_m_s2)
        return self

    def begin(self, now: float) -> None:
        self.clock.begin(now)

    def _t(self, now: float) -> float:
        return self.clock.profile_t_s(now)

    def _profile_state(self, t_s: float) -> MotionState:
        """The profile at `t_s`, kept for the next ask: a send asks twice for the same
        instant (the clock's `follow`, then the setpoint)."""
        if self._last is None or self._last[0] != t_s:
            self._last = (t_s, self.profile.state_at(t_s))
        return self._last[1]

    def follow(self, now: float, vehicle: tuple[Vec3, Vec3] | None) -> None:
        """At each send: the clock moves on at the rate the vehicle's lead allows
        (`vehicle`: its position and velocity, NED, or None when not known)."""
        self.clock.follow(now, self._profile_state(self._t(now)), vehicle)

    def path_stop(self, now: float, lim: Limits) -> PathStop:
        """A stop from now on this motion's own path, which was checked against the fence:
        a straight one along the direction of travel may leave it (an orbit near the fence).
        It starts at the speed streamed now (the clock's rate)."""
        return PathStop(self.profile, self._t(now), lim, self.clock.rate)

    def stop_on_path(self, cmd: Stop, now: float, lim: Limits) -> Motion:
        """A stop that keeps to this motion's path (PathStop), facing as streamed now."""
        return Motion(cmd, self.path_stop(now, lim), Yaw(), self.setpoint_at(now).yaw_rad)

    def state_at(self, now: float) -> MotionState:
        """What is streamed at `now`: the profile's state at the clock's time, its speed
        scaled by the clock's rate and its acceleration by rate². The rate's own change is
        left out of the acceleration: it is feedback on the vehicle, and fed forward it
        pushed a vehicle at its speed limit to slow further, the lead grew and the clock
        slowed more (a limit cycle in the sim under a 1.5 m/s MPC_XY_VEL_MAX)."""
        st = self._profile_state(self._t(now))
        rate = self.clock.rate
        if rate == 1.0:
            return st
        return MotionState(st.position, scale(st.velocity, rate),
                           scale(st.acceleration, rate * rate), st.leg, st.s_m)

    def done(self, now: float) -> bool:
        """The profile has run out and the vehicle is near its end (or not known)."""
        return (self.clock.begun and self._t(now) >= self.profile.duration_s
                and self.clock.arrived())

    def end_time_s(self, now: float) -> float:
        """When it ends if the vehicle follows from now on (inf before it begins)."""
        if not self.clock.begun:
            return math.inf
        return now + max(0.0, float(self.profile.duration_s) - self._t(now))

    def setpoint_at(self, now: float) -> PositionVelocityNed:
        st = self.state_at(now)
        (n, e, d), (vn, ve, vd), (an, ae, ad) = st.position, st.velocity, st.acceleration
        return PositionVelocityNed(n, e, d, vn, ve, vd, yaw_rad=self._yaw_at(st),
                                   north_m_s2=an, east_m_s2=ae, down_m_s2=ad)

    def _yaw_at(self, st: MotionState) -> float | None:
        mode = self._yaw.mode
        if mode is YawMode.FIXED:
            return self._yaw.yaw_rad
        if mode is YawMode.FACE_TRAVEL:
            tangent = self.profile.legs[st.leg].segment.tangent(
                st.s_m - self.profile.legs[st.leg].s0_m)
            if math.hypot(tangent[0], tangent[1]) >= _FACE_MIN_SHARE:
                self._last_yaw = math.atan2(tangent[1], tangent[0])
        elif mode is YawMode.FACE_CENTER and self._centre is not None:
            dn, de = self._centre[0] - st.position[0], self._centre[1] - st.position[1]
            if math.hypot(dn, de) > 0.3:
                self._last_yaw = math.atan2(de, dn)
        return self._last_yaw

    def progress(self, now: float) -> dict[str, Any]:
        """What `state` shows of it: kind, progress 0..1, distance to go, ETA, leg."""
        st = self.state_at(now)
        start, length = self.profile.s_start_m, self.profile.length_m
        return {
            "kind": self.kind,
            "command_id": self.command_id,
            "started": self.clock.begun,
            "progress": 1.0 if length <= start else round(
                min(1.0, max(0.0, st.s_m - start) / (length - start)), 3),
            "distance_to_go_m": round(max(0.0, length - st.s_m), 2),
            "eta_s": round(max(0.0, self.profile.duration_s - self._t(now)), 2),
            # the planned point's lead over the vehicle, and the clock's rate (motion_clock)
            "lead_m": None if self.clock.lead_m is None else round(self.clock.lead_m, 2),
            "clock_rate": round(self.clock.rate, 3),
            "leg": st.leg - self.profile.leg_start,  # (a stop on a path: from its own)
            "legs": len(self.profile.legs) - self.profile.leg_start,
            # what is streamed now: the planned point and speed (a plot's "planned")
            "setpoint_ned_m": [round(x, 3) for x in st.position],
            "speed_m_s": round(norm(st.velocity), 3),
        }


def _geometry(cmd: MotionCommand, origin: Vec3, home: Home | None) -> PathGeometry:
    if isinstance(cmd, Goto):
        return path_through(origin, [to_local(cmd.target, home)], 0.0)
    if isinstance(cmd, FollowPath):
        return path_through(origin, [to_local(wp, home) for wp in cmd.waypoints],
                            cmd.corner_radius_m)
    assert isinstance(cmd, Orbit)
    return orbit_around(origin, to_local(cmd.center, home), cmd.radius_m, cmd.turns,
                        cmd.clockwise)


def plan(cmd: MotionCommand, start: Start, lim: Limits, home: Home | None,
         stop_first: Profile | None = None) -> Motion:
    """The motion `cmd` asks for, from `start` (PlanError: refused, with why). When it
    must stop first, `stop_first` is how (the running motion's stop on its own path),
    else a straight stop along the direction of travel."""
    speed = norm(start.velocity)
    if isinstance(cmd, Stop):
        return Motion(cmd, plan_stop(start.position, start.velocity, start.acceleration, lim),
                      Yaw(), start.yaw_rad)
    yaw = cmd.yaw
    centre = to_local(cmd.center, home) if isinstance(cmd, Orbit) else None
    geometry = _geometry(cmd, start.position, home)
    if speed < _AT_REST_M_S and not geometry.segments:  # already there: done at once
        return Motion(cmd, plan_stop(start.position, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), lim),
                      yaw, start.yaw_rad, centre)
    if speed < _AT_REST_M_S:
        return Motion(cmd, plan_path(geometry, lim), yaw, start.yaw_rad, centre)
    heading = unit(start.velocity)
    # Moving, with a path ahead that starts the way we go, no faster than that path allows
    # (its speed, its climb or descent, its arc): fly on into it. Faster, the carried speed
    # held the whole leg (a goto at 2 m/s flown at 12 with 2.7 m/s down, a 0.5 m orbit at
    # 12 m/s: review), so it stops first. With no path at all (the target within a
    # centimetre, as when a goto is sent again near its end), stop.
    if (geometry.segments and dot(heading, geometry.segments[0].tangent(0.0)) >= _ALIGNED_COS
            and speed <= segment_speed_limit(geometry.segments[0], lim) + 1e-6):
        a_along = dot(heading, start.acceleration)
        try:  # carry the speed on, if every slow-down still fits
            return Motion(cmd, plan_path(geometry, lim, speed, a_along), yaw, start.yaw_rad,
                          centre)
        except PlanError:
            pass
    stop = stop_first or plan_stop(start.position, start.velocity, start.acceleration, lim)
    rest = stop.state_at(stop.duration_s).position
    after = _geometry(cmd, rest, home)
    profile = stop.then(plan_path(after, lim)) if after.segments else stop
    return Motion(cmd, profile, yaw, start.yaw_rad, centre)

