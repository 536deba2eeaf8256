"""Core setpoints and actions -> pymavlink messages for the FC.

`SETPOINT_WIRE` is the one table mapping each setpoint kind to its message, frame and the
fields it uses; `type_mask()` derives the ignore bits from it (px4-offboard.md §2; the
MAVSDK masks there are the tests' cross-check). FORCE_SET (512) and THROTTLE_IGNORE (64)
are never set: PX4 refuses the first with acceleration and zeroes a multicopter's thrust
on the second (§1). Commands target the autopilot's sysid exactly, never 0 (§4).

Pure: builds message objects, never encodes, sends, or reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Flag, auto

from offboardd.core.actions import (
    Action,
    ArmDisarm,
    RequestMessage,
    RequestMode,
    RequestParams,
    SendCompanionHeartbeat,
    SendSetpoint,
    SetMessageInterval,
    Target,
)
from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    Attitude,
    BodyRates,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    SetpointKind,
    VelocityBody,
    VelocityNed,
)
from offboardd.mavlink.codec import Message
from offboardd.mavlink.codec import slim_dialect as dialect

# POSITION_TARGET_TYPEMASK bits (bit set = ignore that field)
IGNORE_POSITION = 1 | 2 | 4
IGNORE_VELOCITY = 8 | 16 | 32
IGNORE_ACCELERATION = 64 | 128 | 256
IGNORE_YAW = 1024
IGNORE_YAW_RATE = 2048
# ATTITUDE_TARGET_TYPEMASK bits
IGNORE_BODY_RATES = 1 | 2 | 4
IGNORE_ATTITUDE = 128

# PX4's magic number that makes COMPONENT_ARM_DISARM a forced disarm (§4).
FORCE_DISARM_MAGIC = 21196


class Uses(Flag):
    POSITION = auto()
    VELOCITY = auto()
    ACCELERATION = auto()
    ATTITUDE = auto()
    BODY_RATES = auto()


@dataclass(frozen=True)
class SetpointWire:
    message_id: int
    frame: int | None  # MAV_FRAME; None for SET_ATTITUDE_TARGET (it has no frame field)
    uses: Uses


_LOCAL = dialect.MAVLINK_MSG_ID_SET_POSITION_TARGET_LOCAL_NED
_GLOBAL = dialect.MAVLINK_MSG_ID_SET_POSITION_TARGET_GLOBAL_INT
_ATT = dialect.MAVLINK_MSG_ID_SET_ATTITUDE_TARGET

SETPOINT_WIRE: dict[SetpointKind, SetpointWire] = {
    SetpointKind.POSITION_NED: SetpointWire(_LOCAL, dialect.MAV_FRAME_LOCAL_NED, Uses.POSITION),
    SetpointKind.VELOCITY_NED: SetpointWire(_LOCAL, dialect.MAV_FRAME_LOCAL_NED, Uses.VELOCITY),
    SetpointKind.VELOCITY_BODY: SetpointWire(_LOCAL, dialect.MAV_FRAME_BODY_NED, Uses.VELOCITY),
    SetpointKind.ACCELERATION_NED: SetpointWire(
        _LOCAL, dialect.MAV_FRAME_LOCAL_NED, Uses.ACCELERATION
    ),
    SetpointKind.POSITION_VELOCITY_NED: SetpointWire(
        _LOCAL, dialect.MAV_FRAME_LOCAL_NED, Uses.POSITION | Uses.VELOCITY
    ),
    # frame depends on the altitude reference: see GLOBAL_FRAMES
    SetpointKind.GLOBAL_POSITION: SetpointWire(
        _GLOBAL, dialect.MAV_FRAME_GLOBAL_INT, Uses.POSITION
    ),
    SetpointKind.ATTITUDE: SetpointWire(_ATT, None, Uses.ATTITUDE),
    SetpointKind.BODY_RATES: SetpointWire(_ATT, None, Uses.BODY_RATES),
}

GLOBAL_FRAMES: dict[AltitudeFrame, int] = {
    AltitudeFrame.AMSL: dialect.MAV_FRAME_GLOBAL_INT,
    AltitudeFrame.RELATIVE: dialect.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
    AltitudeFrame.TERRAIN: dialect.MAV_FRAME_GLOBAL_TERRAIN_ALT_INT,
}


def frame_of(sp: Setpoint) -> int | None:
    if isinstance(sp, GlobalPosition):
        return GLOBAL_FRAMES[sp.altitude_frame]
    return SETPOINT_WIRE[sp.kind].frame


def type_mask(sp: Setpoint) -> int:
    """The ignore bits for `sp`: every field group it does not use."""
    uses = SETPOINT_WIRE[sp.kind].uses
    if isinstance(sp, Attitude | BodyRates):
        return IGNORE_BODY_RATES if uses & Uses.ATTITUDE else IGNORE_ATTITUDE
    if isinstance(sp, PositionVelocityNed) and sp.has_acceleration:
        uses |= Uses.ACCELERATION
    mask = 0
    if not uses & Uses.POSITION:
        mask |= IGNORE_POSITION
    if not uses & Uses.VELOCITY:
        mask |= IGNORE_VELOCITY
    if not uses & Uses.ACCELERATION:
        mask |= IGNORE_ACCELERATION
    yaw_rad = None if isinstance(sp, VelocityBody) else sp.yaw_rad
    if yaw_rad is None:
        mask |= IGNORE_YAW
    if sp.yaw_rate_rad_s is None:
        mask |= IGNORE_YAW_RATE
    return mask


def _local_fields(sp: Setpoint) -> tuple[float, ...]:
    """(x, y, z, vx, vy, vz, ax, ay, az) with 0.0 for ignored fields."""
    p = v = a = (0.0, 0.0, 0.0)
    if isinstance(sp, PositionNed):
        p = (sp.north_m, sp.east_m, sp.down_m)
    elif isinstance(sp, VelocityNed):
        v = (sp.north_m_s, sp.east_m_s, sp.down_m_s)
    elif isinstance(sp, VelocityBody):
        v = (sp.forward_m_s, sp.right_m_s, sp.down_m_s)
    elif isinstance(sp, AccelerationNed):
        a = (sp.north_m_s2, sp.east_m_s2, sp.down_m_s2)
    elif isinstance(sp, PositionVelocityNed):
        p = (sp.north_m, sp.east_m, sp.down_m)
        v = (sp.north_m_s, sp.east_m_s, sp.down_m_s)
        if sp.north_m_s2 is not None and sp.east_m_s2 is not None and sp.down_m_s2 is not None:
            a = (sp.north_m_s2, sp.east_m_s2, sp.down_m_s2)
    return (*p, *v, *a)


def setpoint_message(sp: Setpoint, target: Target, time_boot_ms: int = 0) -> Message:
    """The SET_* message for `sp`. PX4 stamps setpoints on receipt, so time_boot_ms is
    informative only (§1)."""
    sysid, compid = target.system_id, target.component_id
    if isinstance(sp, Attitude):
        return dialect.MAVLink_set_attitude_target_message(
            time_boot_ms, sysid, compid, type_mask(sp), list(sp.quaternion), 0.0, 0.0, 0.0,
            sp.thrust,
        )  # fmt: skip
    if isinstance(sp, BodyRates):
        return dialect.MAVLink_set_attitude_target_message(
            time_boot_ms, sysid, compid, type_mask(sp), [1.0, 0.0, 0.0, 0.0],
            sp.roll_rate_rad_s, sp.pitch_rate_rad_s, sp.yaw_rate_rad_s, sp.thrust,
        )  # fmt: skip
    yaw = 0.0
    if not isinstance(sp, VelocityBody) and sp.yaw_rad is not None:
        yaw = sp.yaw_rad
    yaw_rate = 0.0 if sp.yaw_rate_rad_s is None else sp.yaw_rate_rad_s
    if isinstance(sp, GlobalPosition):
        return dialect.MAVLink_set_position_target_global_int_message(
            time_boot_ms, sysid, compid, frame_of(sp), type_mask(sp),
            round(sp.lat_deg * 1e7), round(sp.lon_deg * 1e7), sp.alt_m,
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, yaw, yaw_rate,
        )  # fmt: skip
    return dialect.MAVLink_set_position_target_local_ned_message(
        time_boot_ms, sysid, compid, frame_of(sp), type_mask(sp), *_local_fields(sp), yaw, yaw_rate
    )


class SetpointMessages:
    """`messages_for`, with the setpoint's message kept while the stream repeats it.

    A hover streams one setpoint object tick after tick (the envelope passes it through
    unchanged), and its message is the same each time (time_boot_ms is 0): built once,
    and the codec then only re-sequences its frame (MavlinkCodec.encode). Building and
    packing it again was a tenth of a tick's Python (cProfile, bench/stream-plan.md).
    Setpoints are frozen: the same object is the same setpoint.
    """

    def __init__(self) -> None:
        self._setpoint: Setpoint | None = None
        self._target: Target | None = None
        self._message: Message = None

    def messages_for(self, action: Action) -> list[Message]:
        if not isinstance(action, SendSetpoint):
            return messages_for(action)
        if action.setpoint is not self._setpoint or action.target != self._target:
            self._message = setpoint_message(action.setpoint, action.target)
            self._setpoint, self._target = action.setpoint, action.target
        return [self._message]


def _command(target: Target, command: int, *params: float) -> Message:
    p = list(params) + [0.0] * (7 - len(params))
    return dialect.MAVLink_command_long_message(
        target.system_id, target.component_id, command, 0, *p
    )


def companion_heartbeat() -> Message:
    """ONBOARD_CONTROLLER (18), autopilot INVALID (8): never GCS, which PX4 would count
    as a ground station (§5)."""
    return dialect.MAVLink_heartbeat_message(
        dialect.MAV_TYPE_ONBOARD_CONTROLLER,
        dialect.MAV_AUTOPILOT_INVALID,
        0,
        0,
        dialect.MAV_STATE_ACTIVE,
        3,  # MAVLink protocol version field, always 3
    )


def messages_for(action: Action) -> list[Message]:
    """The MAVLink messages an FC-bound action becomes ([] for replies and notices)."""
    if isinstance(action, SendSetpoint):
        return [setpoint_message(action.setpoint, action.target)]
    if isinstance(action, SendCompanionHeartbeat):
        return [companion_heartbeat()]
    if isinstance(action, RequestMode):
        mode = action.mode
        return [
            _command(
                action.target,
                dialect.MAV_CMD_DO_SET_MODE,
                dialect.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED,
                mode.main_mode,
                mode.sub_mode,
            )
        ]
    if isinstance(action, ArmDisarm):
        force = FORCE_DISARM_MAGIC if action.force and not action.arm else 0
        return [
            _command(
                action.target,
                dialect.MAV_CMD_COMPONENT_ARM_DISARM,
                1.0 if action.arm else 0.0,
                force,
            )
        ]
    if isinstance(action, RequestParams):
        return [
            dialect.MAVLink_param_request_read_message(
                action.target.system_id, action.target.component_id, name.encode("ascii"), -1
            )
            for name in action.names
        ]
    if isinstance(action, RequestMessage):
        return [_command(action.target, dialect.MAV_CMD_REQUEST_MESSAGE, action.message_id)]
    if isinstance(action, SetMessageInterval):
        return [
            _command(
                action.target,
                dialect.MAV_CMD_SET_MESSAGE_INTERVAL,
                action.message_id,
                action.interval_us,
            )
        ]
    return []
