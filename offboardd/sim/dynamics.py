"""Simple multicopter dynamics and PX4-like controllers, in local NED about the origin.

Kinematic targets (position / velocity / acceleration per axis) go through a cascaded
P position -> P velocity controller with PX4's speed limits, as mc_pos_control does;
attitude and body-rate targets drive the attitude and a thrust model whose hover thrust
is about 0.5 (the SIH quad's is 0.48-0.50, px4-offboard.md §4). The ground is flat at
the local origin's altitude (down = 0); home moves about it (home.py). Pure: time comes
in as `dt_s`; no commander rules here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from offboardd.sim.setpoints import AttitudeTarget, KinematicTarget

GRAVITY_M_S2 = 9.80665
HOVER_THRUST = 0.49  # a level 0.5 thrust then climbs slowly, as on SITL
_POS_GAIN = 1.0  # MPC_XY_P / MPC_Z_P are ~1
_VEL_GAIN = 4.0  # velocity P, critically damped with the position loop
_ACC_HOR_MAX = 5.0  # MPC_ACC_HOR_MAX
_ACC_UP_MAX = 4.0  # MPC_ACC_UP_MAX
_ACC_DOWN_MAX = 3.0  # MPC_ACC_DOWN_MAX
_YAW_GAIN = 2.8  # MC_YAW_P
_YAW_RATE_MAX = math.radians(45)  # MPC_YAWRAUTO_MAX
_ATT_TAU_S = 0.1  # attitude loop time constant
_DRAG_PER_S = 0.3  # linear drag, only for attitude/rate flight (kinematic loops cancel it)
_TILT_MAX = math.radians(45)  # MPC_TILTMAX_AIR


@dataclass(frozen=True)
class Limits:
    xy_m_s: float = 12.0  # MPC_XY_VEL_MAX
    up_m_s: float = 3.0  # MPC_Z_VEL_MAX_UP
    down_m_s: float = 1.5  # MPC_Z_VEL_MAX_DN
    # MPC_Z_VEL_I_ACC while PX4's vertical velocity integral matters (the takeoff ramp,
    # takeoff.py); 0 clears it: with no disturbance to learn, the sim needs it nowhere else.
    z_vel_i_acc: float = 0.0


@dataclass
class BodyState:
    pos_m: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # N, E, D
    vel_m_s: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    acc_m_s2: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    roll_rad: float = 0.0
    pitch_rad: float = 0.0
    yaw_rad: float = 0.0
    rates_rad_s: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    thrust: float = 0.0  # collective 0..1
    z_integral_m_s2: float = 0.0  # the vertical velocity integral (down positive)

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
        if isinstance(target, KinematicTarget):
            acc = self._kinematic(dt_s, target, limits)
        elif isinstance(target, AttitudeTarget):
            acc = self._attitude(dt_s, target)
        else:  # disarmed: no thrust, the body falls to the ground and rests there
            s.thrust = 0.0
            s.z_integral_m_s2 = 0.0
            s.rates_rad_s = [0.0, 0.0, 0.0]
            acc = [-_DRAG_PER_S * s.vel_m_s[0], -_DRAG_PER_S * s.vel_m_s[1], GRAVITY_M_S2]
        s.acc_m_s2 = acc
        for i in range(3):
            s.vel_m_s[i] += acc[i] * dt_s
            s.pos_m[i] += s.vel_m_s[i] * dt_s
        if s.pos_m[2] >= 0.0 and s.vel_m_s[2] >= 0.0:  # ground contact: stop, sit level
            s.pos_m[2] = 0.0
            s.vel_m_s = [0.0, 0.0, 0.0]
            if target is None or s.thrust < HOVER_THRUST:
                s.roll_rad = s.pitch_rad = 0.0

    def _kinematic(self, dt_s: float, t: KinematicTarget, lim: Limits) -> list[float]:
        s = self.state
        vel_sp: list[float | None] = []
        for i in range(3):
            p, v = t.pos_m[i], t.vel_m_s[i]
            if p is not None:
                vel_sp.append(_POS_GAIN * (p - s.pos_m[i]) + (v or 0.0))
            else:
                vel_sp.append(v)
        vn, ve = vel_sp[0], vel_sp[1]
        if vn is not None and ve is not None:
            speed = math.hypot(vn, ve)
            if speed > lim.xy_m_s:
                vel_sp[0], vel_sp[1] = vn * lim.xy_m_s / speed, ve * lim.xy_m_s / speed
        vd = vel_sp[2]
        if vd is not None:  # the upward limit wins (PX4's constrain): a negative one, the
            # takeoff ramp's start, forces a descent even below the downward limit
            vel_sp[2] = -lim.up_m_s if vd < -lim.up_m_s else min(lim.down_m_s, vd)
        acc = []
        for i in range(3):
            a_ff = t.acc_m_s2[i] or 0.0
            sp = vel_sp[i]
            acc.append(a_ff if sp is None else _VEL_GAIN * (sp - s.vel_m_s[i]) + a_ff)
        if lim.z_vel_i_acc > 0.0 and vel_sp[2] is not None:
            s.z_integral_m_s2 += lim.z_vel_i_acc * (vel_sp[2] - s.vel_m_s[2]) * dt_s
            acc[2] += s.z_integral_m_s2
        else:
            s.z_integral_m_s2 = 0.0
        hor = math.hypot(acc[0], acc[1])
        if hor > _ACC_HOR_MAX:
            acc[0], acc[1] = acc[0] * _ACC_HOR_MAX / hor, acc[1] * _ACC_HOR_MAX / hor
        # Resting on the ground a downward demand only lowers the thrust (to zero at g).
        acc[2] = max(-_ACC_UP_MAX, min(GRAVITY_M_S2 if s.on_ground else _ACC_DOWN_MAX, acc[2]))
        if t.yaw_rad is not None:
            err = _wrap(t.yaw_rad - s.yaw_rad)
            rate = max(-_YAW_RATE_MAX, min(_YAW_RATE_MAX, _YAW_GAIN * err))
        else:
            rate = t.yaw_rate_rad_s or 0.0
        s.yaw_rad = _wrap(s.yaw_rad + rate * dt_s)
        # Attitude and thrust that produce this acceleration (reported in telemetry).
        lift = GRAVITY_M_S2 - acc[2]
        c, sn = math.cos(s.yaw_rad), math.sin(s.yaw_rad)
        forward = c * acc[0] + sn * acc[1]
        right = -sn * acc[0] + c * acc[1]
        s.pitch_rad = math.atan2(-forward, max(lift, 0.1))
        s.roll_rad = math.atan2(right * math.cos(s.pitch_rad), max(lift, 0.1))
        s.rates_rad_s = [0.0, 0.0, rate]
        s.thrust = min(1.0, HOVER_THRUST * math.sqrt(max(lift, 0.0) ** 2 + forward**2
                                                     + right**2) / GRAVITY_M_S2)  # fmt: skip
        return acc

    def _attitude(self, dt_s: float, t: AttitudeTarget) -> list[float]:
        s = self.state
        if t.q is not None:
            roll, pitch, yaw = quaternion_to_euler(t.q)
            k = min(1.0, dt_s / _ATT_TAU_S)
            s.roll_rad += k * (max(-_TILT_MAX, min(_TILT_MAX, roll)) - s.roll_rad)
            s.pitch_rad += k * (max(-_TILT_MAX, min(_TILT_MAX, pitch)) - s.pitch_rad)
            s.yaw_rad = _wrap(s.yaw_rad + k * _wrap(yaw - s.yaw_rad))
            s.rates_rad_s = [0.0, 0.0, 0.0]
        elif t.rates_rad_s is not None:
            s.rates_rad_s = list(t.rates_rad_s)
            s.roll_rad = _wrap(s.roll_rad + t.rates_rad_s[0] * dt_s)
            s.pitch_rad = max(-1.5, min(1.5, s.pitch_rad + t.rates_rad_s[1] * dt_s))
            s.yaw_rad = _wrap(s.yaw_rad + t.rates_rad_s[2] * dt_s)
        s.thrust = t.thrust
        f = t.thrust / HOVER_THRUST * GRAVITY_M_S2  # specific force along body -z
        cr, sr = math.cos(s.roll_rad), math.sin(s.roll_rad)
        cp, sp = math.cos(s.pitch_rad), math.sin(s.pitch_rad)
        cy, sy = math.cos(s.yaw_rad), math.sin(s.yaw_rad)
        # Third column of the body->NED rotation, times -f.
        return [
            -f * (cy * sp * cr + sy * sr) - _DRAG_PER_S * s.vel_m_s[0],
            -f * (sy * sp * cr - cy * sr) - _DRAG_PER_S * s.vel_m_s[1],
            -f * cp * cr + GRAVITY_M_S2 - _DRAG_PER_S * s.vel_m_s[2],
        ]
