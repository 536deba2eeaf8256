"""Typed events from the flight-controller side, already decoded by mavlink/translate_in.

Every FC event carries the MAVLink source (system, component) it came from, so the
engine can ignore other systems on a shared link. Values only; no pymavlink here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TypeAlias

from offboardd.core.commands import Command

# MAVLink values the core needs, copied so the core stays free of pymavlink
# (mavlink common.xml; translate tests check them against the dialect).
MAV_AUTOPILOT_PX4 = 12
MAV_AUTOPILOT_INVALID = 8
MAV_MODE_FLAG_SAFETY_ARMED = 128
MAV_CMD_DO_SET_MODE = 176
MAV_CMD_SET_MESSAGE_INTERVAL = 511
MAV_CMD_COMPONENT_ARM_DISARM = 400


class AckResult(IntEnum):
    """MAV_RESULT."""

    ACCEPTED = 0
    TEMPORARILY_REJECTED = 1
    DENIED = 2
    UNSUPPORTED = 3
    FAILED = 4
    IN_PROGRESS = 5
    CANCELLED = 6


class SystemStatus(IntEnum):
    """MAV_STATE: HEARTBEAT system_status."""

    UNINIT = 0
    BOOT = 1
    CALIBRATING = 2
    STANDBY = 3
    ACTIVE = 4
    CRITICAL = 5  # PX4: armed, in a failsafe
    EMERGENCY = 6
    POWEROFF = 7
    # PX4: flight termination, a kill switch or lockdown: it runs no motor, armed or not
    # (VehicleState.motors_cut)
    FLIGHT_TERMINATION = 8


class LandedState(IntEnum):
    """MAV_LANDED_STATE."""

    UNDEFINED = 0
    ON_GROUND = 1
    IN_AIR = 2
    TAKEOFF = 3
    LANDING = 4


@dataclass(frozen=True, kw_only=True)
class FcEvent:
    source_system: int = 0
    source_component: int = 0


@dataclass(frozen=True)
class FcHeartbeat(FcEvent):
    autopilot: int
    mav_type: int
    base_mode: int
    custom_mode: int
    system_status: int

    @property
    def armed(self) -> bool:
        return bool(self.base_mode & MAV_MODE_FLAG_SAFETY_ARMED)


@dataclass(frozen=True)
class FcCurrentMode(FcEvent):
    """CURRENT_MODE (#436): sent by PX4 at once on a mode change when requested (§4)."""

    custom_mode: int
    intended_custom_mode: int


@dataclass(frozen=True)
class FcCommandAck(FcEvent):
    command: int
    result: int  # an AckResult value, kept as int: unknown results must not crash
    # Whom PX4 answers: the command's sender (MAVLink 2 extension fields; 0 = not said, as
    # in MAVLink 1 or older firmware). PX4 sends an ACK on every link its target was seen
    # on, so on a shared link another client's ACKs reach us too (engine_fc._ours).
    target_system: int = 0
    target_component: int = 0


@dataclass(frozen=True)
class FcParamValue(FcEvent):
    name: str
    value: int | float  # already byte-wise decoded for integer params


@dataclass(frozen=True)
class FcAutopilotVersion(FcEvent):
    flight_sw_version: int
    capabilities: int


@dataclass(frozen=True)
class FcLocalPosition(FcEvent):
    """LOCAL_POSITION_NED: PX4 sends it only while the local position is valid (§1)."""

    time_boot_ms: int
    north_m: float
    east_m: float
    down_m: float
    north_m_s: float
    east_m_s: float
    down_m_s: float


@dataclass(frozen=True)
class FcGlobalPosition(FcEvent):
    time_boot_ms: int
    lat_deg: float
    lon_deg: float
    alt_amsl_m: float
    alt_relative_m: float


@dataclass(frozen=True)
class FcHomePosition(FcEvent):
    """HOME_POSITION (#242): PX4's home, WGS84 and in the local NED frame (x, y, z). PX4
    sets it on the first position fix, again at arming and at take-off; the envelope's
    fence is measured from it (envelope_geometry.Home)."""

    lat_deg: float
    lon_deg: float
    alt_amsl_m: float
    north_m: float
    east_m: float
    down_m: float


@dataclass(frozen=True)
class FcAttitude(FcEvent):
    time_boot_ms: int
    roll_rad: float
    pitch_rad: float
    yaw_rad: float


@dataclass(frozen=True)
class FcExtendedSysState(FcEvent):
    landed_state: int  # a LandedState value


@dataclass(frozen=True)
class FcEstimatorStatus(FcEvent):
    flags: int  # ESTIMATOR_STATUS_FLAGS bits


@dataclass(frozen=True)
class FcStatusText(FcEvent):
    severity: int  # MAV_SEVERITY: 0 emergency .. 7 debug
    text: str


@dataclass(frozen=True)
class FcLinkUp(FcEvent):
    """The transport to the FC (re)opened; a heartbeat still has to prove the FC is there."""


@dataclass(frozen=True)
class FcLinkDown(FcEvent):
    """The transport to the FC closed (serial unplugged...): the FC is lost at once."""

    detail: str = ""


FcMessageEvent: TypeAlias = (
    FcHeartbeat
    | FcCurrentMode
    | FcCommandAck
    | FcParamValue
    | FcAutopilotVersion
    | FcLocalPosition
    | FcGlobalPosition
    | FcHomePosition
    | FcAttitude
    | FcExtendedSysState
    | FcEstimatorStatus
    | FcStatusText
)

Event: TypeAlias = FcMessageEvent | FcLinkUp | FcLinkDown | Command

FC_MESSAGE_TYPES: tuple[type[FcMessageEvent], ...] = (
    FcHeartbeat,
    FcCurrentMode,
    FcCommandAck,
    FcParamValue,
    FcAutopilotVersion,
    FcLocalPosition,
    FcGlobalPosition,
    FcHomePosition,
    FcAttitude,
    FcExtendedSysState,
    FcEstimatorStatus,
    FcStatusText,
)
