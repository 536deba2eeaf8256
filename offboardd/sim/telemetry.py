"""Build the telemetry messages PX4 sends, from the vehicle's state.

One builder per message name; a builder returns None when PX4 would not send the
message now (GLOBAL_POSITION_INT without a global position: PX4 publishes none before its
estimator has a global origin). LOCAL_POSITION_NED, ODOMETRY and GLOBAL_POSITION_INT go on
while the estimate is invalid, as PX4's do (since v1.14, PX4 #20389): only
ESTIMATOR_STATUS says it is. Pure: the caller passes `now_s`; rates and
links are `streams.py`'s and the server's business.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from offboardd.mavlink.codec import Message, dialect
from offboardd.sim.config import BOOT_ESTIMATE, BOOT_GLOBAL
from offboardd.sim.dynamics import GRAVITY_M_S2, euler_to_quaternion
from offboardd.sim.modes import FlightMode
from offboardd.sim.setpoints import AttitudeTarget, KinematicTarget
from offboardd.sim.streams import UNSENT_STREAM_IDS

if TYPE_CHECKING:
    from offboardd.sim.vehicle import Vehicle

d = dialect
_NAN = float("nan")
CAPABILITIES = (
    d.MAV_PROTOCOL_CAPABILITY_MISSION_FLOAT
    | d.MAV_PROTOCOL_CAPABILITY_PARAM_FLOAT
    | d.MAV_PROTOCOL_CAPABILITY_MISSION_INT
    | d.MAV_PROTOCOL_CAPABILITY_COMMAND_INT
    | d.MAV_PROTOCOL_CAPABILITY_PARAM_ENCODE_BYTEWISE
    | d.MAV_PROTOCOL_CAPABILITY_SET_ATTITUDE_TARGET
    | d.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED
    | d.MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_GLOBAL_INT
    | d.MAV_PROTOCOL_CAPABILITY_FLIGHT_TERMINATION
    | d.MAV_PROTOCOL_CAPABILITY_MAVLINK2
    | d.MAV_PROTOCOL_CAPABILITY_MISSION_FENCE
    | d.MAV_PROTOCOL_CAPABILITY_MISSION_RALLY
)
# EKF2 flags when healthy: attitude, velocities, relative/absolute horizontal and
# vertical position, predicted positions (ESTIMATOR_STATUS_FLAGS).
ESTIMATOR_FLAGS_OK = (
    d.ESTIMATOR_ATTITUDE | d.ESTIMATOR_VELOCITY_HORIZ | d.ESTIMATOR_VELOCITY_VERT
    | d.ESTIMATOR_POS_HORIZ_REL | d.ESTIMATOR_POS_HORIZ_ABS | d.ESTIMATOR_POS_VERT_ABS
    | d.ESTIMATOR_POS_VERT_AGL | d.ESTIMATOR_PRED_POS_HORIZ_REL
    | d.ESTIMATOR_PRED_POS_HORIZ_ABS
)  # fmt: skip
# [SITL main 2026-11-29] GPS cut in flight: 895 (ESTIMATOR_FLAGS_OK) -> 869 once EKF2's
# dead-reckoning time ran out (EKF2_NOAID_TOUT, 5 s), 101 two seconds on: what is left is
# the attitude and the vertical estimate (baro).
ESTIMATOR_FLAGS_BAD = (d.ESTIMATOR_ATTITUDE | d.ESTIMATOR_VELOCITY_VERT
                       | d.ESTIMATOR_POS_VERT_ABS | d.ESTIMATOR_POS_VERT_AGL)
_SENSORS = 0x3020FC2F  # gyro, accel, mag, baro, GPS, AHRS, motors, battery... (PX4-ish)

Builder = Callable[["Vehicle", float], Message | None]
MSG_ID_CURRENT_EVENT_SEQUENCE = 411


class OpaqueMessage(dialect.MAVLink_message):  # type: ignore[misc]
    """A message sent as given bytes: one pymavlink 2.4.50 does not know (peers must count
    and skip such frames, px4-offboard.md §5), or one the sim only replays."""

    def __init__(self, msg_id: int, name: str, crc_extra: int, payload: bytes) -> None:
        super().__init__(msg_id, name)
        self._fieldnames: list[str] = []
        self.id, self.msgname, self.crc_extra, self._payload = msg_id, name, crc_extra, payload

    def pack(self, mav: object, force_mavlink1: bool = False) -> bytes:
        frame: bytes = self._pack(mav, self.crc_extra, self._payload,
                                  force_mavlink1=force_mavlink1)
        return frame


def current_event_sequence(v: Vehicle, now_s: float) -> Message:
    """CURRENT_EVENT_SEQUENCE (#411; uint16 sequence, uint8 flags): crc_extra 106 is
    MAVLink's, computed from the definition (and found in PX4's frames)."""
    payload = struct.pack("<HB", len(v.record.statustexts) & 0xFFFF, 0)
    return OpaqueMessage(MSG_ID_CURRENT_EVENT_SEQUENCE, "CURRENT_EVENT_SEQUENCE", 106, payload)


# What PX4 SIH main sends on its onboard link that the sim does not model, replayed as PX4
# sent it: name -> (message id, crc_extra, payload as on the wire, MAVLink 2 trimmed), each
# captured from PX4 SIH main's UDP onboard link (Nov 2026). The crc_extra of each is the
# only one of 256 that checks PX4's frames (for the messages pymavlink knows, pymavlink's).
# ESC_INFO and ESC_STATUS are what a vehicle with four ESCs reports; the rest static bits.
REPLAYED: dict[str, tuple[int, int, str]] = {
    "SYSTEM_TIME": (2, 137, "038b5639306106003c10"),
    "PING": (4, 237, "606a3f000000000003"),
    "LINK_NODE_STATUS": (8, 117, "606a3f00000000000263000000000000d304"),
    "SCALED_PRESSURE": (29, 115, "780f000018f46e44000000009e04"),
    "MISSION_CURRENT": (42, 28, "0000ffff0102"),
    "DISTANCE_SENSOR": (132, 85, "640f000000001027000000001900000000000000000000000000000000000000"
                                 "00000000000001"),
    "VIBRATION": (241, 90, "606a3f00000000000d2dec2ec834393cd040d53d"),
    "ESC_INFO": (290, 251, "205d3c0000000000000000000000000000000000000000000000000000000000"
                           "000088138813881388130004000f"),
    "ESC_STATUS": (291, 10, "205d3c"),
    "TIME_ESTIMATE_TO_TARGET": (380, 232, "00000000ffffffffffffffffffffffffffffffff"),
    "GNSS_INTEGRITY": (441, 169, "00000000ffffffff0400000000ffffffff"),
    "ESTIMATOR_SENSOR_FUSION_STATUS": (514, 197, "0000c07f" * 9
                                                 + "01010000010101000001000000010101"),
    "OPEN_DRONE_ID_LOCATION": (12901, 254, "5a52401c44f41705b0daf4430080f4430000403b00ff7f47"
                                           "bc4d0200fbff000000000000000000000000000000000000"
                                           "0000000001000c050003"),
    "OPEN_DRONE_ID_SYSTEM": (12904, 77, "5852401c40f4170500007ac400007ac417b6f4430000000001"),
}  # fmt: skip


def _replayed(name: str) -> Builder:
    msg_id, crc_extra, payload_hex = REPLAYED[name]
    payload = bytes.fromhex(payload_hex)
    return lambda v, now_s: OpaqueMessage(msg_id, name, crc_extra, payload)


def _global(v: Vehicle) -> tuple[int, int, int]:
    lat, lon, alt_m = v.origin.to_global(*v.state.pos_m)
    return int(lat * 1e7), int(lon * 1e7), int(alt_m * 1000)


def heartbeat(v: Vehicle, now_s: float) -> Message:
    c = v.commander
    if c.armed:
        status = d.MAV_STATE_CRITICAL if c.failsafe else d.MAV_STATE_ACTIVE
    elif c.intent.allows_arming and c.can_run(c.intent) and not v.booting(now_s):
        status = d.MAV_STATE_STANDBY
    else:
        # Disarmed where arming would be refused: [SITL main, v1.16.2] UNINIT (0) in
        # OFFBOARD once the stream stopped (STANDBY again when it resumed), in AUTO.RTL
        # and AUTO.LAND; STANDBY in AUTO.LOITER and in OFFBOARD with a stream.
        status = d.MAV_STATE_UNINIT
    if c.terminated:  # HEARTBEAT.hpp: actuator_armed.termination overrides the rest
        status = d.MAV_STATE_FLIGHT_TERMINATION
    return d.MAVLink_heartbeat_message(
        d.MAV_TYPE_QUADROTOR, d.MAV_AUTOPILOT_PX4, v.shown_mode.base_mode(armed=c.armed),
        v.shown_mode.custom_mode, status, 3,
    )  # fmt: skip


def current_mode(v: Vehicle, now_s: float, mode: FlightMode | None = None,
                 intent: FlightMode | None = None) -> Message:  # fmt: skip
    """CURRENT_MODE: the mode PX4 runs and the user's intent (or `mode` and `intent`, a
    moment ago)."""
    c = v.commander
    shown = mode or v.shown_mode
    return d.MAVLink_current_mode_message(
        shown.standard_mode, shown.custom_mode, (intent or c.intent).custom_mode
    )


def sys_status(v: Vehicle, now_s: float) -> Message:
    remaining_pct, cell_mv = battery(v, now_s)
    # [SITL main] the pre-arm check's bit is healthy once PX4 could arm (STANDBY), not
    # while it boots: what MAVSDK's `is_armable` reads
    health = _SENSORS & ~d.MAV_SYS_STATUS_PREARM_CHECK if v.booting(now_s) else _SENSORS
    return d.MAVLink_sys_status_message(
        _SENSORS, _SENSORS, health, 250, 4 * cell_mv, -1, remaining_pct, 0, 0, 0, 0, 0, 0,
        0, 0, 0)  # fmt: skip


_CELLS = 4
_FULL_PCT = 99.0  # what PX4 SIH's estimate reads of a full pack
_FULL_CELL_MV, _HALF_CELL_MV = 4050, 3825  # at 99 % and at 50 % (PX4 SIH: 16.2 and 15.3 V)


def battery(v: Vehicle, now_s: float) -> tuple[int, int]:
    """PX4 SITL's battery simulator as PX4 SIH main reports it (remaining %, mV a cell):
    full while disarmed; armed, drained over SIM_BAT_DRAIN s to SIM_BAT_MIN_PCT and held
    there; no current measured. (The sim sent 90 %, 16.2 V and 10 A throughout: a low
    battery could never be tried against it; review, 2026-11-29.)"""
    c, params = v.commander, v.params
    pct = _FULL_PCT
    drain_s = params.get_float("SIM_BAT_DRAIN")
    if c.armed and drain_s > 0.0:
        pct = max(params.get_float("SIM_BAT_MIN_PCT"),
                  _FULL_PCT - 100.0 * (now_s - c.armed_at_s) / drain_s)
    cell_mv = _HALF_CELL_MV + (_FULL_CELL_MV - _HALF_CELL_MV) * (pct - 50.0) / (_FULL_PCT - 50.0)
    return round(max(0.0, pct)), round(max(3000.0, cell_mv))


def extended_sys_state(v: Vehicle, now_s: float) -> Message:
    return d.MAVLink_extended_sys_state_message(d.MAV_VTOL_STATE_UNDEFINED, v.landed_state)


def attitude(v: Vehicle, now_s: float) -> Message:
    s = v.state
    r = s.rates_rad_s
    return d.MAVLink_attitude_message(
        v.boot_ms(now_s), s.roll_rad, s.pitch_rad, s.yaw_rad, r[0], r[1], r[2]
    )


def attitude_quaternion(v: Vehicle, now_s: float) -> Message:
    s = v.state
    q = euler_to_quaternion(s.roll_rad, s.pitch_rad, s.yaw_rad)
    r = s.rates_rad_s
    return d.MAVLink_attitude_quaternion_message(
        v.boot_ms(now_s), q[0], q[1], q[2], q[3], r[0], r[1], r[2], [0.0] * 4
    )


def local_position_ned(v: Vehicle, now_s: float) -> Message:
    # (sent whether the estimate is valid or not: PX4 #20389; [SITL main] 30/s through a
    # GPS loss and the failsafe after it. The sim's estimate is the truth: PX4's drifts
    # once nothing aids it, ~2 m in 9 s of blind descent measured.)
    p, vel = v.state.pos_m, v.state.vel_m_s
    return d.MAVLink_local_position_ned_message(v.boot_ms(now_s), *p, *vel)


def global_position_int(v: Vehicle, now_s: float) -> Message | None:
    if not v.commander.global_valid or v.booting(now_s, BOOT_GLOBAL):
        return None
    lat, lon, alt_mm = _global(v)
    vel = v.state.vel_m_s
    hdg = int(math.degrees(v.state.yaw_rad) % 360 * 100)
    # relative_alt: above home, not the local origin (PX4's GLOBAL_POSITION_INT stream:
    # gpos.alt - home.alt)
    relative_mm = int((v.origin.alt_m + v.state.altitude_m - v.home.point.alt_m) * 1000)
    return d.MAVLink_global_position_int_message(
        v.boot_ms(now_s), lat, lon, alt_mm, relative_mm,
        int(vel[0] * 100), int(vel[1] * 100), int(vel[2] * 100), hdg,
    )  # fmt: skip


def odometry(v: Vehicle, now_s: float) -> Message:
    s = v.state
    q = euler_to_quaternion(s.roll_rad, s.pitch_rad, s.yaw_rad)
    c, sn = math.cos(s.yaw_rad), math.sin(s.yaw_rad)
    vx, vy = c * s.vel_m_s[0] + sn * s.vel_m_s[1], -sn * s.vel_m_s[0] + c * s.vel_m_s[1]
    return d.MAVLink_odometry_message(
        v.boot_us(now_s), d.MAV_FRAME_LOCAL_NED, d.MAV_FRAME_BODY_FRD, *s.pos_m, list(q),
        vx, vy, s.vel_m_s[2], *s.rates_rad_s, [_NAN] * 21, [_NAN] * 21, 0,
        d.MAV_ESTIMATOR_TYPE_AUTOPILOT, 100,
    )  # fmt: skip


def highres_imu(v: Vehicle, now_s: float) -> Message:
    s = v.state
    a = s.acc_m_s2
    return d.MAVLink_highres_imu_message(
        v.boot_us(now_s), a[0], a[1], a[2] - GRAVITY_M_S2, *s.rates_rad_s, 0.2, 0.0, 0.4,
        955.0, 0.0, v.origin.alt_m + s.altitude_m, 25.0, 0x1FFF, 0,
    )  # fmt: skip


def estimator_status(v: Vehicle, now_s: float) -> Message:
    # (booting: no horizontal position yet; LOCAL_POSITION_NED flows all the same, as
    # PX4's did from its start, and a mode change is accepted)
    ok = v.commander.estimator_valid and not v.booting(now_s, BOOT_ESTIMATE)
    flags = ESTIMATOR_FLAGS_OK if ok else ESTIMATOR_FLAGS_BAD
    if not v.commander.terrain_valid:
        flags &= ~d.ESTIMATOR_POS_VERT_AGL
    if not v.commander.global_valid:
        flags &= ~(d.ESTIMATOR_POS_HORIZ_ABS | d.ESTIMATOR_PRED_POS_HORIZ_ABS)
    return d.MAVLink_estimator_status_message(
        v.boot_us(now_s), flags,
        0.1, 0.1 if ok else 5.0, 0.1 if ok else 5.0, 0.05, 0.0, 0.0,
        0.5 if ok else 50.0, 0.8 if ok else 50.0,
    )  # fmt: skip


def battery_status(v: Vehicle, now_s: float) -> Message:
    remaining_pct, cell_mv = battery(v, now_s)
    return d.MAVLink_battery_status_message(
        0, d.MAV_BATTERY_FUNCTION_ALL, d.MAV_BATTERY_TYPE_LIPO, 2500,
        [cell_mv] * _CELLS + [65535] * 6, -1, -1, -1, remaining_pct, 0,
        d.MAV_BATTERY_CHARGE_STATE_OK, [0] * 4, 0, 0,
    )  # fmt: skip


def home_position(v: Vehicle, now_s: float) -> Message:
    """HOME_POSITION as PX4's stream builds it: home in WGS84 and in the local frame, its
    attitude as a quaternion (NaN when unknown), time_usec when it was set."""
    h = v.home.point
    q = [_NAN] * 4 if h.attitude_rad is None else list(euler_to_quaternion(*h.attitude_rad))
    return d.MAVLink_home_position_message(
        int(h.lat_deg * 1e7), int(h.lon_deg * 1e7), int(h.alt_m * 1000), *h.ned_m, q,
        0.0, 0.0, 0.0, h.set_us,
    )  # fmt: skip


def gps_raw_int(v: Vehicle, now_s: float) -> Message:
    if not v.gnss.has_fix:  # [SITL main] a cut receiver: no fix, no position, 255 satellites
        return d.MAVLink_gps_raw_int_message(
            v.boot_us(now_s), d.GPS_FIX_TYPE_NO_FIX, 0, 0, 0, 65535, 65535, 0, 65535, 255)
    lat, lon, alt_mm = _global(v)
    c = v.commander
    # (the receiver's fix, not the estimate's: [SITL main] a fix in the first GPS_RAW_INT
    # after a cut ended, the estimate 0.3-1.3 s later)
    fix = d.GPS_FIX_TYPE_3D_FIX if c.global_valid else d.GPS_FIX_TYPE_NO_FIX
    return d.MAVLink_gps_raw_int_message(
        v.boot_us(now_s), fix, lat, lon, alt_mm, 70, 90, 0, 65535, 12
    )


def vfr_hud(v: Vehicle, now_s: float) -> Message:
    s = v.state
    hdg = int(math.degrees(s.yaw_rad) % 360)
    return d.MAVLink_vfr_hud_message(
        0.0, math.hypot(s.vel_m_s[0], s.vel_m_s[1]), hdg, int(s.thrust * 100),
        v.origin.alt_m + s.altitude_m, -s.vel_m_s[2],
    )  # fmt: skip


def altitude(v: Vehicle, now_s: float) -> Message:
    alt = v.state.altitude_m
    amsl = v.origin.alt_m + alt
    return d.MAVLink_altitude_message(v.boot_us(now_s), amsl, amsl, -v.state.pos_m[2],
                                      alt, alt, alt)  # fmt: skip


def servo_output_raw(v: Vehicle, now_s: float) -> Message:
    pwm = int(1000 + 1000 * v.state.thrust) if v.commander.armed else 900
    return d.MAVLink_servo_output_raw_message(
        v.boot_us(now_s) & 0xFFFFFFFF, 0, *([pwm] * 4), *([0] * 12)
    )


def position_target_local_ned(v: Vehicle, now_s: float) -> Message:
    t = v.flown_target
    if not isinstance(t, KinematicTarget):
        return d.MAVLink_position_target_local_ned_message(
            v.boot_ms(now_s), d.MAV_FRAME_LOCAL_NED, 0xFFF, *([_NAN] * 11)
        )
    mask, vals = 0, []
    for i, x in enumerate((*t.pos_m, *t.vel_m_s, *t.acc_m_s2)):
        mask |= (1 << i) if x is None else 0
        vals.append(_NAN if x is None else x)
    mask |= 1024 if t.yaw_rad is None else 0
    mask |= 2048 if t.yaw_rate_rad_s is None else 0
    return d.MAVLink_position_target_local_ned_message(
        v.boot_ms(now_s), d.MAV_FRAME_LOCAL_NED, mask, *vals,
        _NAN if t.yaw_rad is None else t.yaw_rad,
        _NAN if t.yaw_rate_rad_s is None else t.yaw_rate_rad_s,
    )  # fmt: skip


def attitude_target(v: Vehicle, now_s: float) -> Message:
    t, s = v.flown_target, v.state
    thrust = t.thrust if isinstance(t, AttitudeTarget) else s.thrust
    q = euler_to_quaternion(s.roll_rad, s.pitch_rad, s.yaw_rad)
    if isinstance(t, AttitudeTarget) and t.q is not None:
        q = t.q
    return d.MAVLink_attitude_target_message(v.boot_ms(now_s), 0, list(q), 0.0, 0.0, 0.0, thrust)


def timesync(v: Vehicle, now_s: float) -> Message:
    return d.MAVLink_timesync_message(0, v.boot_us(now_s) * 1000)


def autopilot_version(v: Vehicle, now_s: float) -> Message:
    git_hash = [0x1D, 0x6A, 0x00, 0x5E, 0xC1, 0x0B, 0x8F, 0x2A]
    return d.MAVLink_autopilot_version_message(
        CAPABILITIES, v.px4.flight_sw_version, 0, 0, 0, git_hash, [0] * 8, [0] * 8,
        0x26AC, 0x0011, 0x0001_0000_0000_0000 | v.system_id, [0] * 18,
    )  # fmt: skip


BUILDERS: dict[str, Builder] = {
    "HEARTBEAT": heartbeat, "CURRENT_MODE": current_mode, "SYS_STATUS": sys_status,
    "EXTENDED_SYS_STATE": extended_sys_state, "ATTITUDE": attitude,
    "ATTITUDE_QUATERNION": attitude_quaternion, "LOCAL_POSITION_NED": local_position_ned,
    "GLOBAL_POSITION_INT": global_position_int, "ODOMETRY": odometry,
    "HIGHRES_IMU": highres_imu, "ESTIMATOR_STATUS": estimator_status,
    "BATTERY_STATUS": battery_status, "HOME_POSITION": home_position,
    "GPS_RAW_INT": gps_raw_int, "VFR_HUD": vfr_hud, "ALTITUDE": altitude,
    "SERVO_OUTPUT_RAW": servo_output_raw,
    "POSITION_TARGET_LOCAL_NED": position_target_local_ned,
    "ATTITUDE_TARGET": attitude_target, "TIMESYNC": timesync,
    "AUTOPILOT_VERSION": autopilot_version, "CURRENT_EVENT_SEQUENCE": current_event_sequence,
    **{name: _replayed(name) for name in REPLAYED},
}  # fmt: skip
BUILDER_IDS: dict[int, str] = {
    getattr(d, f"MAVLINK_MSG_ID_{name}", MSG_ID_CURRENT_EVENT_SEQUENCE): name
    for name in BUILDERS if name not in REPLAYED
} | {msg_id: name for name, (msg_id, _, _) in REPLAYED.items()}
# Every message id SET_MESSAGE_INTERVAL may name that the sim knows as a stream: the ones
# it builds or replays, and those PX4 only budgets (streams.PX4_UNSENT_STREAMS).
STREAM_IDS: dict[int, str] = UNSENT_STREAM_IDS | BUILDER_IDS
