"""Judge offboard setpoint messages as PX4 v1.16 does (px4-offboard.md §1, §2).

For SET_POSITION_TARGET_LOCAL_NED (#84), SET_POSITION_TARGET_GLOBAL_INT (#86) and
SET_ATTITUDE_TARGET (#82): `valid` (proof of life, flown), `dropped` (mavlink_receiver
discards it, sometimes with a CRITICAL STATUSTEXT: no proof of life) or
`controller_failsafe` (accepted as proof of life, but the multicopter position
controller refuses it and flies its own failsafe setpoint). Reads raw MAVLink fields
only; it must not import the daemon's core, keep state or read a clock. The same rules
serve every release the sim plays (px4_versions.py) but one: [SITL main] refuses
SET_ATTITUDE_TARGET with THROTTLE_IGNORE (`JudgeContext.throttle_ignore_refused`);
invalid setpoints and unsupported frames still count as loss there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from offboardd.mavlink.codec import Message
from offboardd.sim.home import Origin

Vec3 = tuple[float | None, float | None, float | None]

# POSITION_TARGET_TYPEMASK bits (bit set = ignore), px4-offboard.md §2.
_X, _Y, _Z, _VX, _VY, _VZ, _AX, _AY, _AZ = (1 << i for i in range(9))
_FORCE_SET = 512
_YAW = 1024
_YAW_RATE = 2048
# ATTITUDE_TARGET_TYPEMASK bits.
_ROLL_RATE, _PITCH_RATE, _YAW_RATE_ATT = 1, 2, 4
_THRUST_BODY_SET = 32
_THROTTLE = 64
_ATTITUDE = 128

FRAME_LOCAL_NED = 1
FRAME_BODY_NED = 8
FRAME_GLOBAL_TERRAIN_ALT_INT = 11
GLOBAL_FRAMES = (5, 6, FRAME_GLOBAL_TERRAIN_ALT_INT)  # GLOBAL_INT (AMSL), RELATIVE_ALT_INT


@dataclass(frozen=True)
class KinematicTarget:
    """Local NED position / velocity / acceleration per axis (None = not controlled)."""

    pos_m: Vec3
    vel_m_s: Vec3
    acc_m_s2: Vec3
    yaw_rad: float | None = None
    yaw_rate_rad_s: float | None = None


@dataclass(frozen=True)
class AttitudeTarget:
    """Attitude quaternion (w, x, y, z) and/or body rates, with collective thrust 0..1."""

    q: tuple[float, float, float, float] | None
    rates_rad_s: tuple[float, float, float] | None
    thrust: float


Target = KinematicTarget | AttitudeTarget


@dataclass(frozen=True)
class JudgeContext:
    """What PX4 knows when a setpoint arrives."""

    system_id: int
    component_id: int
    forward_external_setpoints: bool  # MAV_FWDEXTSP == 1
    yaw_rad: float  # current heading: BODY_NED velocity is rotated by heading only
    roll_rad: float
    pitch_rad: float
    global_valid: bool  # a global position estimate (needed by #86)
    origin: Origin  # the local NED origin (EKF2's reference), not home
    home_alt_m: float  # AMSL: frame 6 is read against it
    # SET_ATTITUDE_TARGET with THROTTLE_IGNORE (64) is no proof of life (Px4Version).
    throttle_ignore_refused: bool = False
    terrain_valid: bool = True  # EKF2's terrain estimate (needed by frame 11)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "valid" | "dropped" | "controller_failsafe"
    reason: str = ""
    statustext: str | None = None  # PX4's CRITICAL text, one per message (unthrottled)
    target: Target | None = None
    uses_position: bool = False  # offboard_control_mode flags: position needs a local
    uses_velocity: bool = False  # position estimate, velocity a local velocity


def _dropped(reason: str, text: str | None = None) -> Verdict:
    return Verdict("dropped", reason, text)


def _targets_us(msg: Message, ctx: JudgeContext) -> str | None:
    if msg.target_system not in (0, ctx.system_id):
        return f"target_system {msg.target_system} is not {ctx.system_id}"
    if msg.target_component not in (0, ctx.component_id):
        return f"target_component {msg.target_component} is not {ctx.component_id}"
    if not ctx.forward_external_setpoints:
        return "MAV_FWDEXTSP is 0"
    return None


def _pick(mask: int, bits: tuple[int, int, int], values: tuple[float, float, float]) -> Vec3:
    """Fields the mask keeps; NaN/inf count as absent (PX4 stores "ignored" as NaN)."""
    a, b, c = (_finite(v) if not mask & bit else None for bit, v in zip(bits, values, strict=True))
    return a, b, c


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _kinematic_verdict(name: str, target: KinematicTarget) -> Verdict:
    pos, vel, acc = target.pos_m, target.vel_m_s, target.acc_m_s2
    uses_pos = any(v is not None for v in pos)
    uses_vel = any(v is not None for v in vel)
    uses_acc = any(v is not None for v in acc)
    if not (uses_pos or uses_vel or uses_acc):
        return _dropped("no position, velocity or acceleration", f"{name} invalid")
    # mc_pos_control PositionControl::_inputValid(): x and y go in pairs, and every
    # axis needs at least one of position, velocity or acceleration.
    problem = ""
    for label, vec in (("position", pos), ("velocity", vel), ("acceleration", acc)):
        if (vec[0] is None) != (vec[1] is None):
            problem = f"{label} x and y not both set"
    for axis, label in enumerate("xyz"):
        if pos[axis] is None and vel[axis] is None and acc[axis] is None:
            problem = problem or f"axis {label} has no position, velocity or acceleration"
    kind = "controller_failsafe" if problem else "valid"
    return Verdict(kind, problem, None, target, uses_pos, uses_vel)


def judge_local_ned(msg: Message, ctx: JudgeContext) -> Verdict:
    """SET_POSITION_TARGET_LOCAL_NED as PX4's mavlink_receiver and position controller."""
    wrong = _targets_us(msg, ctx)
    if wrong:
        return _dropped(wrong)
    name = "SET_POSITION_TARGET_LOCAL_NED"
    frame, mask = int(msg.coordinate_frame), int(msg.type_mask)
    if frame not in (FRAME_LOCAL_NED, FRAME_BODY_NED):
        text = f"{name} coordinate frame {frame} unsupported"
        return _dropped(f"frame {frame} unsupported", text)
    acc_bits = (_AX, _AY, _AZ)
    if mask & _FORCE_SET and (mask & (_AX | _AY | _AZ)) != (_AX | _AY | _AZ):
        return _dropped("force setpoint", f"{name} force not supported")
    pos = _pick(mask, (_X, _Y, _Z), (msg.x, msg.y, msg.z))
    vel = _pick(mask, (_VX, _VY, _VZ), (msg.vx, msg.vy, msg.vz))
    acc = _pick(mask, acc_bits, (msg.afx, msg.afy, msg.afz))
    if frame == FRAME_BODY_NED:
        pos = (None, None, None)  # PX4 ignores position in BODY_NED
        vel = _rotate_heading(vel, ctx.yaw_rad) if None not in vel else (None, None, None)
        acc = _rotate_full(acc, ctx) if None not in acc else (None, None, None)
    yaw = None if mask & _YAW else _finite(msg.yaw)
    yaw_rate = None if mask & _YAW_RATE else _finite(msg.yaw_rate)
    return _kinematic_verdict(name, KinematicTarget(pos, vel, acc, yaw, yaw_rate))


def judge_global_int(msg: Message, ctx: JudgeContext) -> Verdict:
    """SET_POSITION_TARGET_GLOBAL_INT: frames 5, 6, 11; position needs lat, lon and alt."""
    wrong = _targets_us(msg, ctx)
    if wrong:
        return _dropped(wrong)
    name = "SET_POSITION_TARGET_GLOBAL_INT"
    frame, mask = int(msg.coordinate_frame), int(msg.type_mask)
    if frame not in GLOBAL_FRAMES:
        text = f"{name} coordinate frame {frame} unsupported"
        return _dropped(f"frame {frame} unsupported", text)
    if not ctx.global_valid:
        return _dropped("no global position estimate")
    if frame == FRAME_GLOBAL_TERRAIN_ALT_INT and not ctx.terrain_valid:
        # mavlink_receiver.cpp (v1.16 to main): "valid terrain alt required", dropped
        # before any proof of life ([SITL v1.17.0] a bare peer streaming it: AUTO.RTL)
        return _dropped("no terrain estimate")
    if mask & _FORCE_SET and (mask & (_AX | _AY | _AZ)) != (_AX | _AY | _AZ):
        return _dropped("force setpoint", f"{name} force not supported")
    pos: Vec3 = (None, None, None)
    if not mask & (_X | _Y | _Z):
        lat, lon = msg.lat_int * 1e-7, msg.lon_int * 1e-7
        north, east, _ = ctx.origin.to_local(lat, lon, 0.0)
        # Frame 5 is AMSL; 11 above terrain, flat at the origin's altitude here; 6 above
        # home, converted as PX4 does it (mavlink_receiver.cpp: (home - alt) - ref_alt,
        # off by twice home's height above the origin, docs/px4.md): -alt with home there.
        alt = float(msg.alt)
        if frame == 5:
            down = ctx.origin.alt_m - alt
        elif frame == 6:
            down = (ctx.home_alt_m - ctx.origin.alt_m) - alt
        else:
            down = -alt
        if math.isfinite(down):
            pos = (north, east, down)
    vel = _pick(mask, (_VX, _VY, _VZ), (msg.vx, msg.vy, msg.vz))
    acc = _pick(mask, (_AX, _AY, _AZ), (msg.afx, msg.afy, msg.afz))
    yaw = None if mask & _YAW else _finite(msg.yaw)
    yaw_rate = None if mask & _YAW_RATE else _finite(msg.yaw_rate)
    return _kinematic_verdict(name, KinematicTarget(pos, vel, acc, yaw, yaw_rate))


def judge_attitude(msg: Message, ctx: JudgeContext) -> Verdict:
    """SET_ATTITUDE_TARGET: attitude unless ATTITUDE ignored; rates need roll and pitch."""
    wrong = _targets_us(msg, ctx)
    if wrong:
        return _dropped(wrong)
    mask = int(msg.type_mask)
    q: tuple[float, float, float, float] | None = None
    degenerate_q = False
    if not mask & _ATTITUDE:
        w, x, y, z = (float(v) for v in msg.q)
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        if math.isfinite(norm) and norm >= 1e-6:
            q = (w / norm, x / norm, y / norm, z / norm)
        else:
            # mavlink_receiver never looks at the numbers: the attitude flag alone is
            # proof of life. [SITL v1.16.2, v1.17.0, main] a NaN or all-zero quaternion
            # (mask 7, thrust 0.3) streamed 1.3 s: DO_SET_MODE OFFBOARD ACCEPTED, OFFBOARD
            # entered, as with a level one. What PX4 then flies was not measured: the sim
            # keeps the attitude it has.
            degenerate_q = True
    rates: tuple[float, float, float] | None = None
    if not mask & (_ROLL_RATE | _PITCH_RATE):
        yaw_rate = 0.0 if mask & _YAW_RATE_ATT else float(msg.body_yaw_rate)
        rates = (float(msg.body_roll_rate), float(msg.body_pitch_rate), yaw_rate)
        if not all(math.isfinite(r) for r in rates):
            rates = None
    if q is None and rates is None and not degenerate_q:
        return _dropped("neither attitude nor body rates")
    if mask & _THROTTLE and ctx.throttle_ignore_refused:
        # [SITL main] mask 71 (rates and throttle ignored, level attitude) streamed 1.3 s:
        # DO_SET_MODE OFFBOARD armed -> TEMPORARILY_REJECTED, no STATUSTEXT, as for an
        # all-ignored setpoint; v1.16.2 and v1.17.0 entered OFFBOARD with it.
        return _dropped("THROTTLE_IGNORE: no thrust")
    if mask & _THROTTLE:
        thrust = 0.0  # px4-offboard.md §1: THROTTLE_IGNORE on a multicopter = zero thrust
    elif mask & _THRUST_BODY_SET:
        # thrust_body is a MAVLink 2 extension (absent in pymavlink 2.4.50): absent = zeros.
        thrust_body = getattr(msg, "thrust_body", None) or (0.0, 0.0, 0.0)
        thrust = -float(thrust_body[2])
    else:
        thrust = float(msg.thrust)
    thrust = min(1.0, max(0.0, thrust)) if math.isfinite(thrust) else 0.0
    return Verdict("valid", "", None, AttitudeTarget(q, rates, thrust))


def _rotate_heading(v: Vec3, yaw_rad: float) -> Vec3:
    x, y, z = (float(c or 0.0) for c in v)
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    return (c * x - s * y, s * x + c * y, z)


def _rotate_full(v: Vec3, ctx: JudgeContext) -> Vec3:
    """Body FRD -> NED with the full attitude (ZYX Euler)."""
    x, y, z = (float(c or 0.0) for c in v)
    cr, sr = math.cos(ctx.roll_rad), math.sin(ctx.roll_rad)
    cp, sp = math.cos(ctx.pitch_rad), math.sin(ctx.pitch_rad)
    cy, sy = math.cos(ctx.yaw_rad), math.sin(ctx.yaw_rad)
    n = cy * cp * x + (cy * sp * sr - sy * cr) * y + (cy * sp * cr + sy * sr) * z
    e = sy * cp * x + (sy * sp * sr + cy * cr) * y + (sy * sp * cr - cy * sr) * z
    d = -sp * x + cp * sr * y + cp * cr * z
    return (n, e, d)
