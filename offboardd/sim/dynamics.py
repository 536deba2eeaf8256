"""Simple multicopter dynamics and PX4-like controllers, in local NED about the origin.

Kinematic targets (position / velocity / acceleration per axis) go through a cascaded
position -> velocity controller with PX4's speed limits, as mc_pos_control does: the
horizontal one, for offboard setpoints, with PX4's gains, tilt response and SIH's drag
(horizontal.py: it follows a moving plan as late as PX4 SIH does), the vertical one a
P -> P pair. Attitude and body-rate targets drive the attitude and a thrust model whose
hover thrust is about 0.5 (the SIH quad's is 0.48-0.50, px4-offboard.md §4). The ground
is flat at the local origin's altitude (down = 0); home moves about it (home.py). Pure:
time comes in as `dt_s`; no commander rules here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from offboardd.sim import horizontal
from offboardd.sim.horizontal import HorizontalState
from offboardd.sim.setpoints import AttitudeTarget, KinematicTarget

GRAVITY_M_S2 = 9.80665
HOVER_THRUST = 0.49  # a level 0.5 thrust then climbs slowly, as on SITL
_POS_GAIN = 1.0  # MPC_Z_P
_VEL_GAIN = 4.0  # vertical velocity P, critically damped with the position loop
_ACC_UP_MAX = 4.0  # MPC_ACC_UP_MAX
_ACC_DOWN_MAX = 3.0  # MPC_ACC_DOWN_MAX
# PX4's own modes turn along their trajectory at MPC_YAWRAUTO_MAX; an offboard yaw is
# flown by the attitude loop up to MC_YAWRATE_MAX through SIH's weak yaw authority, and
# overshoots. [SITL main 2026-11-27] a 90 deg step: 8 deg after 0.33 s, 80 deg after
# 0.88-0.94 s, 141 deg/s at most, 105.8 deg at 1.4 s, back through 90 deg at 2.0 s
# (tests/px4/test_px4_yaw.py). Fitted (RMS 1.9 deg over the first 2 s): the yaw error times
# _OFFBOARD_YAW_GAIN asks a rate, which the airframe follows over _YAW_RATE_TAU_S at
# most _YAW_ACC_MAX; PX4 answers ~0.1 s later than this (its pipeline, not modelled).
_YAW_GAIN = 2.8  # MC_YAW_P
_YAW_RATE_MAX = math.radians(45)  # MPC_YAWRAUTO_MAX
_OFFBOARD_YAW_GAIN = 3.5  # 1/s
_OFFBOARD_YAW_RATE_MAX = math.radians(200)  # MC_YAWRATE_MAX
_YAW_RATE_TAU_S = 0.25
_YAW_ACC_MAX = math.radians(200)  # rad/s^2
# Attitude and rate flight, where nothing feeds drag back: SIH's airframe drag, SIH_KDV
# 1 N per m/s on SIH_MASS 1 kg, and the attitude loop's lag (MC_ROLL_P / MC_PITCH_P 4).
# [SITL main 2026-11-27] pitched 10 deg at 0.5 thrust: 1.7 m/s after ~3 s and no faster
# (g tan 10 deg / 1 per s), 5.4-5.8 m in 5 s (tests/px4/test_px4_attitude_drag.py; the
# sim 6.6 m: PX4's pitch answers 0.1 s after the setpoint, the sim's at once).
_ATT_TAU_S = horizontal.ATTITUDE_TAU_S
_DRAG_PER_S = horizontal.DRAG_PER_S
_TILT_MAX = math.radians(45)  # MPC_TILTMAX_AIR
_ROLL_PITCH_RATE_MAX = math.radians(220)  # MC_ROLLRATE_MAX, MC_PITCHRATE_MAX


@dataclass(frozen=True)
class Limits:
    xy_m_s: float = 12.0  # MPC_XY_VEL_MAX
    up_m_s: float = 3.0  # MPC_Z_VEL_MAX_UP
    down_m_s: float = 1.5  # MPC_Z_VEL_MAX_DN
    # MPC_Z_VEL_I_ACC while PX4's vertical velocity integral matters (the takeoff ramp,
    # takeoff.py); 0 clears it: with no disturbance to learn, the sim needs it nowhere else.
    z_vel_i_acc: float = 0.0
    # A target of PX4's own modes (Hold, Takeoff, Land, RTL...): PX4 flies those along its
    # own jerk-limited trajectory with feed-forward, which the sim does not plan; it flies
    # them on a tight P -> P loop instead (their timelines as measured), not horizontal.py.
    own_trajectory: bool = False
    # ...unless the sim plans that trajectory itself (Hold's braking, smoothing.StopAhead):
    # then PX4's loops (horizontal.step) fly it, as they fly PX4's.
    xy_planned: bool = False


@dataclass
class BodyState:
    pos_m: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # N, E, D
    vel_m_s: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    acc_m_s2: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    roll_rad: float = 0.0
    pitch_rad: float = 0.0
    yaw_rad: float = 0.0
    rates_rad_s: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # body p, q, r
    yaw_rate_rad_s: float = 0.0  # the yaw loop's own rate, which it slews
    thrust: float = 0.0  # collective 0..1
    z_integral_m_s2: float = 0.0  # the vertical velocity integral (down positive)
    xy: HorizontalState = field(default_factory=HorizontalState)

    @property
    def on_ground(self) -> bool:
        return self.pos_m[2] >= -0.02

    @property
    def altitude_m(self) -> float:
        return -self.pos_m[2]


def _wrap(angle_rad: float) -> float:
    return (angle_rad + math.pi) % (2 * math.pi) - math.pi


def quaternion_to_euler(q: tuple[float, float, float, float]) -> tuple[float, float, float]:
    w, x, y, z = q
    roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return roll, pitch, yaw


def euler_to_quaternion(roll: float, pitch: float, yaw: float) -> tuple[float, ...]:
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    )


class Dynamics:
    """One rigid body; `step` integrates `dt_s` under a target (None = motors off)."""

    def __init__(self) -> None:
        self.state = BodyState()

    def reset(self) -> None:
        self.state = BodyState()

    def step(self, dt_s: float, target: KinematicTarget | AttitudeTarget | None,
             limits: Limits) -> None:  # fmt: skip
        s = self.state
        before = (s.roll_rad, s.pitch_rad, s.yaw_rad)
        if isinstance(target, KinematicTarget):
            acc = self._kinematic(dt_s, target, limits)
        elif isinstance(target, AttitudeTarget):
            acc = self._attitude(dt_s, target)
        else:  # disarmed: no thrust, the body falls to the ground and rests there
            s.thrust = 0.0
            s.z_integral_m_s2 = 0.0
            s.xy.settle()
            s.rates_rad_s = [0.0, 0.0, 0.0]
            s.yaw_rate_rad_s = 0.0
            # SIH's drag holds the fall too: 5 m in ~1.2 s at ~6.7 m/s, not 1.0 s at 9.9
            # (measured: tests/sim/emergency_stop_flight.py)
            acc = [-_DRAG_PER_S * v for v in s.vel_m_s]
            acc[2] += GRAVITY_M_S2
        s.acc_m_s2 = acc
        for i in range(3):
            s.vel_m_s[i] += acc[i] * dt_s
            s.pos_m[i] += s.vel_m_s[i] * dt_s
        flown_rates = isinstance(target, AttitudeTarget) and target.q is None
        if not flown_rates and dt_s > 0.0:
            self._body_rates(dt_s, *before)
        if s.pos_m[2] >= 0.0 and s.vel_m_s[2] >= 0.0:  # ground contact: stop, sit level
            s.pos_m[2] = 0.0
            s.vel_m_s = [0.0, 0.0, 0.0]
            if target is None or s.thrust < HOVER_THRUST:
                s.roll_rad = s.pitch_rad = 0.0
                s.rates_rad_s[0] = s.rates_rad_s[1] = 0.0

    def _body_rates(self, dt_s: float, roll0: float, pitch0: float, yaw0: float) -> None:
        """The body rates a gyro reads, from how the attitude changed (PX4 reports them in
        ATTITUDE; the sim sent 0 for roll and pitch: review), Euler rates turned body:
        p = roll' - yaw' sin(pitch), q = pitch' cos(roll) + yaw' sin(roll) cos(pitch),
        r = yaw' cos(roll) cos(pitch) - pitch' sin(roll)."""
        s = self.state
        roll_dot = _wrap(s.roll_rad - roll0) / dt_s
        pitch_dot = (s.pitch_rad - pitch0) / dt_s
        yaw_dot = _wrap(s.yaw_rad - yaw0) / dt_s
        cr, sr = math.cos(s.roll_rad), math.sin(s.roll_rad)
        cp, sp = math.cos(s.pitch_rad), math.sin(s.pitch_rad)
        limit = _ROLL_PITCH_RATE_MAX
        s.rates_rad_s = [max(-limit, min(limit, roll_dot - yaw_dot * sp)),
                         max(-limit, min(limit, pitch_dot * cr + yaw_dot * sr * cp)),
                         yaw_dot * cr * cp - pitch_dot * sr]

    def _kinematic(self, dt_s: float, t: KinematicTarget, lim: Limits) -> list[float]:
        s = self.state
        pos_sp, vel_ff = (t.pos_m[0], t.pos_m[1]), (t.vel_m_s[0], t.vel_m_s[1])
        acc_ff = (t.acc_m_s2[0] or 0.0, t.acc_m_s2[1] or 0.0)
        pos, vel = (s.pos_m[0], s.pos_m[1]), (s.vel_m_s[0], s.vel_m_s[1])
        if lim.own_trajectory and not lim.xy_planned:
            acc_n, acc_e = horizontal.tight(s.xy, pos_sp=pos_sp, vel_ff=vel_ff, acc_ff=acc_ff,
                                            pos=pos, vel=vel, limit_m_s=lim.xy_m_s)
        else:
            acc_n, acc_e = horizontal.step(s.xy, dt_s, pos_sp=pos_sp, vel_ff=vel_ff,
                                           acc_ff=acc_ff, pos=pos, vel=vel,
                                           body_acc=(s.acc_m_s2[0], s.acc_m_s2[1]),
                                           limit_m_s=lim.xy_m_s)
        p, v = t.pos_m[2], t.vel_m_s[2]
        vd = v if p is None else _POS_GAIN * (p - s.pos_m[2]) + (v or 0.0)
        if vd is not None:  # the upward limit wins (PX4's constrain): a negative one, the
            # takeoff ramp's start, forces a descent even below the downward limit
            vd = -lim.up_m_s if vd < -lim.up_m_s else min(lim.down_m_s, vd)
        acc_d = t.acc_m_s2[2] or 0.0
        if vd is not None:
            acc_d += _VEL_GAIN * (vd - s.vel_m_s[2])
        if lim.z_vel_i_acc > 0.0 and vd is not None:
            s.z_integral_m_s2 += lim.z_vel_i_acc * (vd - s.vel_m_s[2]) * dt_s
            acc_d += s.z_integral_m_s2
        else:
            s.z_integral_m_s2 = 0.0
        # Resting on the ground a downward demand only lowers the thrust (to zero at g).
        acc_d = max(-_ACC_UP_MAX, min(GRAVITY_M_S2 if s.on_ground else _ACC_DOWN_MAX, acc_d))
        if s.on_ground and acc_d >= 0.0:  # not lifting: no horizontal force either
            s.xy.settle()
            acc_n = acc_e = 0.0
        acc = [acc_n, acc_e, acc_d]
        rate = self._yaw_rate(dt_s, t, lim)
        s.yaw_rad = _wrap(s.yaw_rad + rate * dt_s)
        # Attitude and thrust that produce this acceleration (reported in telemetry): the
        # tilt gives the thrust's horizontal part, drag comes on top.
        lift = GRAVITY_M_S2 - acc[2]
        thrust_n, thrust_e = s.xy.thrust_acc_m_s2
        c, sn = math.cos(s.yaw_rad), math.sin(s.yaw_rad)
        forward = c * thrust_n + sn * thrust_e
        right = -sn * thrust_n + c * thrust_e
        s.pitch_rad = math.atan2(-forward, max(lift, 0.1))
        s.roll_rad = math.atan2(right * math.cos(s.pitch_rad), max(lift, 0.1))
        s.yaw_rate_rad_s = rate
        s.thrust = min(1.0, HOVER_THRUST * math.sqrt(max(lift, 0.0) ** 2 + forward**2
                                                     + right**2) / GRAVITY_M_S2)  # fmt: skip
        return acc

    def _yaw_rate(self, dt_s: float, t: KinematicTarget, lim: Limits) -> float:
        s = self.state
        if lim.own_trajectory:  # PX4's own modes
            if t.yaw_rad is None:
                return t.yaw_rate_rad_s or 0.0
            err = _wrap(t.yaw_rad - s.yaw_rad)
            return max(-_YAW_RATE_MAX, min(_YAW_RATE_MAX, _YAW_GAIN * err))
        if t.yaw_rad is not None:
            want = _OFFBOARD_YAW_GAIN * _wrap(t.yaw_rad - s.yaw_rad)
        else:
            want = t.yaw_rate_rad_s or 0.0
        want = max(-_OFFBOARD_YAW_RATE_MAX, min(_OFFBOARD_YAW_RATE_MAX, want))
        now = s.yaw_rate_rad_s
        step = _YAW_ACC_MAX * dt_s
        return now + max(-step, min(step, (want - now) * min(1.0, dt_s / _YAW_RATE_TAU_S)))

    def _attitude(self, dt_s: float, t: AttitudeTarget) -> list[float]:
        s = self.state
        if t.q is not None:
            roll, pitch, yaw = quaternion_to_euler(t.q)
            k = min(1.0, dt_s / _ATT_TAU_S)
            s.roll_rad += k * (max(-_TILT_MAX, min(_TILT_MAX, roll)) - s.roll_rad)
            s.pitch_rad += k * (max(-_TILT_MAX, min(_TILT_MAX, pitch)) - s.pitch_rad)
            s.yaw_rad = _wrap(s.yaw_rad + k * _wrap(yaw - s.yaw_rad))
            s.yaw_rate_rad_s = 0.0
        elif t.rates_rad_s is not None:
            s.rates_rad_s = list(t.rates_rad_s)
            s.yaw_rate_rad_s = t.rates_rad_s[2]
            s.roll_rad = _wrap(s.roll_rad + t.rates_rad_s[0] * dt_s)
            s.pitch_rad = max(-1.5, min(1.5, s.pitch_rad + t.rates_rad_s[1] * dt_s))
            s.yaw_rad = _wrap(s.yaw_rad + t.rates_rad_s[2] * dt_s)
        s.thrust = t.thrust
        f = t.thrust / HOVER_THRUST * GRAVITY_M_S2  # specific force along body -z
        cr, sr = math.cos(s.roll_rad), math.sin(s.roll_rad)
        cp, sp = math.cos(s.pitch_rad), math.sin(s.pitch_rad)
        cy, sy = math.cos(s.yaw_rad), math.sin(s.yaw_rad)
        # Third column of the body->NED rotation, times -f.
        thrust_n = -f * (cy * sp * cr + sy * sr)
        thrust_e = -f * (sy * sp * cr - cy * sr)
        s.xy.settle((thrust_n, thrust_e))  # a kinematic target next starts from this tilt
        return [
            thrust_n - _DRAG_PER_S * s.vel_m_s[0],
            thrust_e - _DRAG_PER_S * s.vel_m_s[1],
            -f * cp * cr + GRAVITY_M_S2 - _DRAG_PER_S * s.vel_m_s[2],
        ]
