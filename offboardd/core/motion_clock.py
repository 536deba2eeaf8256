"""A motion's own clock: time along its profile that waits for a vehicle trailing it.

A planned motion is timed (motion_profile), and PX4 flies its position + velocity +
acceleration feed-forward closely in the air. Where PX4 cannot follow, the planned point
used to run on alone: from the ground PX4 ramps its take-off over MPC_TKO_RAMP_T (its
first climb ~3 s after arming on PX4 main), so an engaging goto reported `motion_done`
before the vehicle was off the ground; and a path planned faster than PX4's own limits
(MPC_XY_VEL_MAX below the envelope's speed), or flown into a wind PX4 cannot beat, left
the vehicle chasing a point ever further ahead, in a straight line across the corners of
the path the fence check had passed.

So the clock runs at `rate` 1 while the vehicle is within half of `max_lead_m` of the
planned point, slows linearly to a standstill as the lead grows to `max_lead_m`, and
changes its rate no faster than the motion's acceleration limit allows at its speed.
The lead counts what the vehicle lags behind along the path and how far it is beside
it, never how far it is ahead (waiting for a vehicle ahead would only let it run on);
it is judged less what PX4 lags by its nature (it follows a moving plan up to
PX4_FOLLOWS_S behind: measured on PX4 SIH, bench/motion-results.md; so the vehicle's own
speed along the path times that is not trailing), and where it would end if the planned
point began to slow now at the acceleration limit (plus closing speed² / 2a), so a point
pulling away fast slows in time instead of overshooting by its braking distance.
The streamed velocity is the profile's times the rate and the acceleration the
profile's times rate²; the rate follows its target over _RATE_TAU_S and changes no
faster than keeps the streamed speed's change within the acceleration limit, so nothing
is asked to jump. A bounded lead also bounds how hard PX4 is asked to catch up: its
position loop turns a lead of d metres into about MPC_XY_P x d m/s (0.95 x 2 m by
default).

The motion is done when its profile has run out *and* the vehicle is within half of
`max_lead_m` of its end. Without a position estimate (blind) the clock runs on time, as
it does with `max_lead_m` 0 (off).

Pure: time and the vehicle's position are passed in.
"""

from __future__ import annotations

import math

from offboardd.core.motion_path import Vec3, dot, norm, scale, sub
from offboardd.core.motion_profile import MotionState

_MAX_RATE_CHANGE_PER_S = 2.0  # whatever the speed: 1 -> 0 in half a second at the most
# The rate follows its target over this time constant: the target depends on the rate
# itself (through the closing speed), and met in one tick the two chattered, the streamed
# acceleration flipping +-3 m/s^2 from tick to tick (seen in the sim under a 1.5 m/s limit).
_RATE_TAU_S = 0.5
_WAITING_RATE = 0.9  # a clock slower than this is waiting for the vehicle
# PX4's position loop follows a moving plan late, the more so the faster (SIH drag that
# nothing feeds forward): 0.37-0.39 s behind at 3 m/s, 0.75-0.78 s at 10 m/s (PX4 SIH
# main, tests/px4/test_px4_following.py). A lag up to this is PX4's nature, not trailing.
PX4_FOLLOWS_S = 0.8


def along_m_s(planned: MotionState, vehicle_v_ned: Vec3) -> float:
    """The vehicle's speed along the path's direction (0 at rest or moving back)."""
    speed = norm(planned.velocity)
    if speed < 1e-3:
        return 0.0
    return max(0.0, dot(vehicle_v_ned, planned.velocity) / speed)


def lead_m(planned: MotionState, vehicle_ned: Vec3) -> float:
    """How far the planned point leads the vehicle: the lag along the path's direction
    (none when the vehicle is ahead) and the distance beside it, together; at rest (a
    profile's start or end), the whole distance."""
    gap = sub(planned.position, vehicle_ned)
    speed = norm(planned.velocity)
    if speed < 1e-3:
        return norm(gap)
    tangent = scale(planned.velocity, 1.0 / speed)
    along = dot(gap, tangent)
    beside = norm(sub(gap, scale(tangent, along)))
    return math.hypot(max(along, 0.0), beside)


class MotionClock:
    """Profile time for a motion: `profile_t_s(now)`, advanced by `follow`."""

    def __init__(self, max_lead_m: float = 0.0, max_accel_m_s2: float = 1.0) -> None:
        self.max_lead_m = max_lead_m  # 0: off, the clock runs on time
        self._max_accel = max_accel_m_s2
        self._t_s = 0.0  # profile time at _at_s
        self._at_s: float | None = None  # None: not begun (the motion waits at its start)
        self.rate = 1.0
        self.lead_m: float | None = None  # the last lead measured (None: off or blind)
        self._waiting_since_s: float | None = None

    @property
    def begun(self) -> bool:
        return self._at_s is not None

    @property
    def free_lead_m(self) -> float:
        return self.max_lead_m / 2.0

    def begin(self, now: float) -> None:
        if self._at_s is None:
            self._at_s = now

    def profile_t_s(self, now: float) -> float:
        if self._at_s is None:
            return 0.0
        return self._t_s + max(0.0, now - self._at_s) * self.rate

    def follow(self, now: float, planned_at: MotionState,
               vehicle: tuple[Vec3, Vec3] | None) -> None:
        """At a send: move the clock to `now`, then set its rate for the lead of the
        planned point there (`planned_at`, the profile's state) over the vehicle
        (position and velocity, NED; None: not known)."""
        if self._at_s is None:
            return
        dt = max(0.0, now - self._at_s)
        self._t_s, self._at_s = self.profile_t_s(now), now
        if self.max_lead_m <= 0.0 or vehicle is None:
            self.lead_m, target = None, 1.0
        else:
            self.lead_m = lead_m(planned_at, vehicle[0])
            coming = along_m_s(planned_at, vehicle[1])
            closing = max(0.0, norm(planned_at.velocity) * self.rate - coming)
            # the lead as judged: less PX4's own lag, plus what it pulls away while slowing
            trail_m = (self.lead_m - PX4_FOLLOWS_S * coming
                       + closing * closing / (2.0 * self._max_accel))
            over = (trail_m - self.free_lead_m) / self.free_lead_m
            target = min(1.0, max(0.0, 1.0 - over))
        self._set_rate(target, dt, planned_at)
        # by the rate, not the lead: a lead held at the threshold flickers across it
        waiting = self.lead_m is not None and self.rate < _WAITING_RATE
        if not waiting:
            self._waiting_since_s = None
        elif self._waiting_since_s is None:
            self._waiting_since_s = now

    def _set_rate(self, target: float, dt: float, planned: MotionState) -> None:
        """Toward `target`, the streamed speed changing (the profile's tangential
        acceleration times rate², plus its speed times the rate's change) within the
        acceleration limit."""
        if dt <= 0.0:
            return
        speed = norm(planned.velocity)
        if speed < 1e-3:  # at rest nothing streamed moves: no warp to limit or smooth
            change = target - self.rate
        else:
            along = dot(planned.acceleration, planned.velocity) / speed * self.rate**2
            fall = max(-_MAX_RATE_CHANGE_PER_S, (-self._max_accel - along) / speed)
            rise = min(_MAX_RATE_CHANGE_PER_S, (self._max_accel - along) / speed)
            wanted = (target - self.rate) * min(1.0, dt / _RATE_TAU_S)
            change = min(max(wanted, fall * dt), max(rise, 0.0) * dt)
        self.rate += change

    def arrived(self) -> bool:
        """At the profile's end, may the motion be done: off, blind, or the vehicle near."""
        return self.lead_m is None or self.lead_m <= self.free_lead_m

    def waiting_s(self, now: float) -> float:
        """How long the clock has run slowed (waiting for the vehicle) without a break."""
        return 0.0 if self._waiting_since_s is None else now - self._waiting_since_s
