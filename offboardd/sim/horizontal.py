"""Horizontal flight on kinematic targets, the way PX4 SIH flies them: why it lags a plan.

Measured on PX4 SIH (tests/px4/test_px4_following.py, bench/motion-results.md), PX4
follows a moving position + velocity + acceleration plan late: at cruise the plan leads
by a distance that grows with speed, and in a 10 m/s goto's acceleration the planned
point ran metres ahead. Three things in PX4 and its SIH vehicle make that lag, and the
sim models each of them (its own code, from how PX4 describes them):

- SIH's airframe has first-order drag, SIH_KDV 1 N per m/s on SIH_MASS 1 kg: 1 m/s² per
  m/s. PX4's controller does not feed drag forward, so only the feedback terms hold the
  speed: the velocity integral (MPC_XY_VEL_I_ACC, slow) and a position error through
  MPC_XY_P times MPC_XY_VEL_P_ACC. At 10 m/s the drag alone needs 10 m/s², a 45° tilt,
  MPC_TILTMAX_AIR: PX4 barely holds that speed.
- mc_pos_control's velocity PID damps with the measured acceleration (MPC_XY_VEL_D_ACC
  times the velocity's derivative, low-passed at MPC_VELD_LP): while the plan
  accelerates, part of its acceleration feed-forward is taken back.
- The thrust tilts through the attitude loop (MC_ROLL_P / MC_PITCH_P 4: ~1/4 s), so the
  horizontal force follows its setpoint late.

MPC_XY_VEL_MAX cuts the velocity setpoint as PX4 does, keeping the position error's part
whole before the feed-forward's. Left out: the rate loop and the motors' own lag.
Vertical flight stays in dynamics.py (its timelines are measured separately, takeoff.py),
and so do the targets of PX4's own modes (`tight` below).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

GRAVITY_M_S2 = 9.80665
MPC_XY_P = 0.95  # position error -> velocity, 1/s
MPC_XY_VEL_P_ACC = 1.8  # velocity error -> acceleration, 1/s
MPC_XY_VEL_I_ACC = 0.4  # its integral, 1/s²
MPC_XY_VEL_D_ACC = 0.2  # times the measured acceleration (subtracted)
MPC_VELD_LP_HZ = 5.0  # the velocity derivative's low-pass
TILT_MAX_RAD = math.radians(45.0)  # MPC_TILTMAX_AIR: bounds the horizontal acceleration
ATTITUDE_TAU_S = 1.0 / 4.0  # 1 / MC_ROLL_P: the tilt's first-order response
DRAG_PER_S = 1.0  # SIH_KDV / SIH_MASS
# PX4's horizontal anti-windup: the integral unwinds by 2 / MPC_XY_VEL_P_ACC times the
# acceleration the tilt limit cut off (PositionControl's tracking anti-windup).
_ARW_GAIN_S = 2.0 / MPC_XY_VEL_P_ACC

Vec2 = tuple[float, float]


@dataclass
class HorizontalState:
    """The horizontal controller's memory (north, east)."""

    integral_m_s2: list[float] = field(default_factory=lambda: [0.0, 0.0])
    measured_acc_m_s2: list[float] = field(default_factory=lambda: [0.0, 0.0])  # low-passed
    thrust_acc_m_s2: list[float] = field(default_factory=lambda: [0.0, 0.0])  # what tilts give

    def settle(self, thrust_acc_m_s2: Vec2 = (0.0, 0.0)) -> None:
        """Forget the loops' history (on the ground, disarmed, after attitude flight)."""
        self.integral_m_s2 = [0.0, 0.0]
        self.measured_acc_m_s2 = [0.0, 0.0]
        self.thrust_acc_m_s2 = list(thrust_acc_m_s2)


def _clamp_norm(v: Vec2, limit: float) -> Vec2:
    n = math.hypot(*v)
    return v if n <= limit else (v[0] * limit / n, v[1] * limit / n)


Axes = tuple[float | None, float | None]


def limit_keeping_first(first: Vec2, second: Vec2, limit: float) -> Vec2:
    """`first + second` cut to `limit` m/s with `first` kept whole (itself cut if it alone
    is over): what is left goes along `second`'s direction. PX4's PositionControl limits
    its horizontal velocity setpoint so, the position error's part before the feed-forward
    (ControlMath::constrainXY)."""
    total = (first[0] + second[0], first[1] + second[1])
    if math.hypot(*total) <= limit:
        return total
    first_m_s, second_m_s = math.hypot(*first), math.hypot(*second)
    if first_m_s >= limit or second_m_s < 1e-9:
        return _clamp_norm(first, limit) if first_m_s > 1e-9 else (0.0, 0.0)
    # |first + k u| = limit along u, second's unit vector: the root with k >= 0
    u = (second[0] / second_m_s, second[1] / second_m_s)
    along = first[0] * u[0] + first[1] * u[1]
    k = -along + math.sqrt(along * along - (first_m_s * first_m_s - limit * limit))
    return (first[0] + k * u[0], first[1] + k * u[1])


def velocity_setpoint(pos_sp: Axes, vel_ff: Axes, pos: Vec2, limit_m_s: float,
                      pos_gain: float = MPC_XY_P) -> Vec2 | None:
    """The position gain on the position error plus the velocity feed-forward, within
    MPC_XY_VEL_MAX, the position part first; None where neither position nor velocity
    is controlled."""
    from_pos, ff = [0.0, 0.0], [0.0, 0.0]
    for i in range(2):
        p, v = pos_sp[i], vel_ff[i]
        if p is None and v is None:
            return None
        ff[i] = v or 0.0
        from_pos[i] = 0.0 if p is None else pos_gain * (p - pos[i])
    return limit_keeping_first((from_pos[0], from_pos[1]), (ff[0], ff[1]), limit_m_s)


def step(s: HorizontalState, dt_s: float, *, pos_sp: Axes, vel_ff: Axes, acc_ff: Vec2,
         pos: Vec2, vel: Vec2, body_acc: Vec2, limit_m_s: float) -> Vec2:
    """One tick of PX4's loops on SIH: the body's horizontal acceleration (thrust less
    drag), NED."""
    vel_sp = velocity_setpoint(pos_sp, vel_ff, pos, limit_m_s)
    k_lp = dt_s / (dt_s + 1.0 / (2.0 * math.pi * MPC_VELD_LP_HZ))
    for i in range(2):
        s.measured_acc_m_s2[i] += k_lp * (body_acc[i] - s.measured_acc_m_s2[i])
    acc_sp, err = acc_ff, (0.0, 0.0)  # acceleration only: no velocity loop, no integral
    if vel_sp is not None:
        err = (vel_sp[0] - vel[0], vel_sp[1] - vel[1])
        acc_sp = (acc_ff[0] + MPC_XY_VEL_P_ACC * err[0] + s.integral_m_s2[0]
                  - MPC_XY_VEL_D_ACC * s.measured_acc_m_s2[0],
                  acc_ff[1] + MPC_XY_VEL_P_ACC * err[1] + s.integral_m_s2[1]
                  - MPC_XY_VEL_D_ACC * s.measured_acc_m_s2[1])
    limited = _clamp_norm(acc_sp, GRAVITY_M_S2 * math.tan(TILT_MAX_RAD))
    if vel_sp is not None:
        for i in range(2):
            unwind = _ARW_GAIN_S * (acc_sp[i] - limited[i])
            s.integral_m_s2[i] += MPC_XY_VEL_I_ACC * (err[i] - unwind) * dt_s
    k_att = min(1.0, dt_s / ATTITUDE_TAU_S)
    for i in range(2):
        s.thrust_acc_m_s2[i] += k_att * (limited[i] - s.thrust_acc_m_s2[i])
    return (s.thrust_acc_m_s2[0] - DRAG_PER_S * vel[0],
            s.thrust_acc_m_s2[1] - DRAG_PER_S * vel[1])


# The sim's own modes' loop: critically damped, no lag, drag cancelled (the old model).
_TIGHT_POS_GAIN = 1.0
_TIGHT_VEL_GAIN = 4.0
_TIGHT_ACC_MAX_M_S2 = 5.0  # MPC_ACC_HOR_MAX


def tight(s: HorizontalState, *, pos_sp: Axes, vel_ff: Axes, acc_ff: Vec2, pos: Vec2,
          vel: Vec2, limit_m_s: float) -> Vec2:
    """A target of PX4's own modes, which PX4 flies along its own smoothed trajectory
    (not modelled): followed closely, as the sim always did."""
    vel_sp = velocity_setpoint(pos_sp, vel_ff, pos, limit_m_s, _TIGHT_POS_GAIN)
    acc = acc_ff
    if vel_sp is not None:
        acc = (acc_ff[0] + _TIGHT_VEL_GAIN * (vel_sp[0] - vel[0]),
               acc_ff[1] + _TIGHT_VEL_GAIN * (vel_sp[1] - vel[1]))
    acc = _clamp_norm(acc, _TIGHT_ACC_MAX_M_S2)
    s.settle(acc)  # the tilt gives exactly this: no integral, no lag
    return acc
