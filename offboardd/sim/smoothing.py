"""PX4's jerk-limited approach to a speed (its auto trajectories, VelocitySmoothing, kept
simple) and its braking curve (math::trajectory::computeMaxSpeedFromDistance)."""

from __future__ import annotations

import math


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
