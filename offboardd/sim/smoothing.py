"""PX4's jerk-limited approach to a speed (its auto trajectories, VelocitySmoothing, kept
simple), its braking curve (math::trajectory::computeMaxSpeedFromDistance), and Hold's
braking onto the stop it predicts."""

from __future__ import annotations

import math

Vec2 = tuple[float, float]
_HOLD_DELAY_S = 0.6  # Navigator::calculate_breaking_stop's delay: 0.6 MPC_JERK_AUTO / jerk


def braking_speed_m_s(distance_m: float, jerk_m_s3: float, acc_m_s2: float) -> float:
    """The fastest speed from which PX4's trajectory still stops within `distance_m` under
    these limits (math::trajectory::computeMaxSpeedFromDistance, final speed 0)."""
    b = 4.0 * acc_m_s2 * acc_m_s2 / jerk_m_s3
    return 0.5 * (-b + math.sqrt(b * b + 8.0 * acc_m_s2 * max(0.0, distance_m)))


class JerkLimited:
    """One velocity setpoint reaching its target under a jerk and an acceleration limit,
    without overshoot (PX4's trajectories, VelocitySmoothing; kept simple)."""

    def __init__(self) -> None:
        self._vel_m_s: float | None = None
        self._acc_m_s2 = 0.0

    def toward(self, target_m_s: float, start_m_s: float, dt_s: float, jerk_m_s3: float,
               acc_max_m_s2: float) -> float:  # fmt: skip
        vel = start_m_s if self._vel_m_s is None else self._vel_m_s
        gap = target_m_s - vel
        self._acc_m_s2 = min(self._acc_m_s2 + jerk_m_s3 * dt_s, acc_max_m_s2,
                             math.sqrt(2 * jerk_m_s3 * abs(gap)))  # fmt: skip
        step = min(abs(gap), self._acc_m_s2 * dt_s)
        self._vel_m_s = vel + math.copysign(step, gap)
        return self._vel_m_s


def braking_distance_m(speed_m_s: float, acc_m_s2: float) -> float:
    """Where PX4 predicts a multicopter stops when it is asked to hold at speed
    (Navigator::calculate_breaking_stop: math::trajectory::computeBrakingDistanceFromVelocity
    with MPC_ACC_HOR and its 0.6 s delay)."""
    return speed_m_s * (speed_m_s / (2.0 * acc_m_s2) + _HOLD_DELAY_S)


class StopAhead:
    """PX4's Hold entered at speed (Loiter::set_loiter_position, rotary wing): its loiter
    point is not where the switch found the vehicle but ahead along its course by the
    braking distance PX4 predicts, and its smoothed trajectory brakes onto that point.
    Here the trajectory is a straight one from where the vehicle was, its speed on PX4's
    braking curve through `JerkLimited`; flown by PX4's own loops (horizontal.step), whose
    velocity integral still pushes the way it flew, the vehicle overshoots the point and
    creeps back as PX4 SIH does ([SITL main 2026-11-29] tests/sim/hold_flight.py)."""

    def __init__(self, pos_ne_m: Vec2, vel_ne_m_s: Vec2, jerk_m_s3: float, acc_m_s2: float
                 ) -> None:  # fmt: skip
        speed = math.hypot(*vel_ne_m_s)
        self._start = pos_ne_m
        self._unit = (vel_ne_m_s[0] / speed, vel_ne_m_s[1] / speed) if speed > 1e-3 else (1.0, 0.0)
        self.length_m = braking_distance_m(speed, acc_m_s2)
        self._jerk_m_s3, self._acc_m_s2 = jerk_m_s3, acc_m_s2
        self._along_m = 0.0
        self._speed_m_s = speed
        self._smooth = JerkLimited()

    @property
    def stop_ne_m(self) -> Vec2:
        """The loiter point PX4 sets."""
        return self._at(self.length_m)

    def _at(self, along_m: float) -> Vec2:
        return (self._start[0] + along_m * self._unit[0], self._start[1] + along_m * self._unit[1])

    def step(self, dt_s: float) -> tuple[Vec2, Vec2, Vec2]:
        """The trajectory's (position, velocity, acceleration) after `dt_s` more, NE."""
        left_m = self.length_m - self._along_m
        want = braking_speed_m_s(left_m, self._jerk_m_s3, self._acc_m_s2)
        before = self._speed_m_s
        self._speed_m_s = self._smooth.toward(want, before, dt_s, self._jerk_m_s3, self._acc_m_s2)
        self._along_m = min(self.length_m, self._along_m + self._speed_m_s * dt_s)
        acc = (self._speed_m_s - before) / dt_s if dt_s > 0 else 0.0
        u = self._unit
        return (self._at(self._along_m), (self._speed_m_s * u[0], self._speed_m_s * u[1]),
                (acc * u[0], acc * u[1]))  # fmt: skip
