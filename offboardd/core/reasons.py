"""Engine phases and reason codes, and how a reason maps onto the public `ErrorCode`.

`Reason` values are part of the public interface like `ErrorCode` (they go out in
replies, events and the published state): never rename one, only add. They refine an
`ErrorCode` (e.g. FC_REFUSED because of `mode_refused`) without widening errors.py.
"""

from __future__ import annotations

from enum import StrEnum

from offboardd.errors import ErrorCode


class Phase(StrEnum):
    IDLE = "idle"  # not streaming; nothing of ours in control
    WARMUP = "warmup"  # streaming the first setpoint, OFFBOARD not yet requested
    ENGAGING = "engaging"  # OFFBOARD requested, waiting for the FC to report it
    ARMING = "arming"  # in OFFBOARD, arm requested, waiting for HEARTBEAT to say armed
    ACTIVE = "active"  # streaming the commander's setpoints
    HOLDING = "holding"  # lease lapsed: streaming "stay here"; a setpoint quoting the token resumes
    RELEASING = "releasing"  # asking the FC for another mode, still streaming until it reports it
    FAILSAFE = "failsafe"  # we stopped on a failure; a new engage is needed
    PREEMPTED = "preempted"  # the FC left OFFBOARD unasked; a new engage is needed


STREAMING_PHASES = frozenset(
    {Phase.WARMUP, Phase.ENGAGING, Phase.ARMING, Phase.ACTIVE, Phase.HOLDING}
)


class Reason(StrEnum):
    # normal
    ENGAGED = "engaged"
    RELEASED = "released"
    COMMANDED_HOLD = "commanded_hold"
    COMMANDED_LAND = "commanded_land"
    COMMANDED_RTL = "commanded_rtl"
    COMMANDED_DISARM = "commanded_disarm"  # the operator disarmed: control ended, stream stopped
    RESUMED = "resumed"
    # commands refused up front
    PHASE_NOT_ALLOWED = "phase_not_allowed"
    NOT_IN_CONTROL = "not_in_control"  # no lease held: the commander is not flying it
    FC_UNKNOWN = "fc_unknown"
    FC_NOT_PX4 = "fc_not_px4"
    FC_PARAMS_UNKNOWN = "fc_params_unknown"
    FWDEXTSP_DISABLED = "fwdextsp_disabled"
    STREAM_TOO_SLOW = "stream_too_slow"
    # COM_OBL_RC_ACT Terminate / Disarm: every stop of our stream would cut the motors in the
    # air (opt in with [engine] allow_motor_cut_loss_action)
    LOSS_ACTION_CUTS_MOTORS = "loss_action_cuts_motors"
    # PX4 reports flight termination, a kill switch or lockdown (HEARTBEAT system_status
    # FLIGHT_TERMINATION): no motor runs; after a termination, until PX4 reboots
    FC_MOTORS_CUT = "fc_motors_cut"
    ESTIMATE_MISSING = "estimate_missing"
    CONFIRMATION_MISSING = "confirmation_missing"
    # a disarm without `force` while PX4 reports the vehicle in the air (taking off,
    # flying, landing): the daemon's own check, not left to PX4's (which v1.14 and later
    # have, but whose refusal says only TEMPORARILY_REJECTED)
    DISARM_IN_FLIGHT = "disarm_in_flight"
    SUPERSEDED = "superseded"
    MOTION_INVALID = "motion_invalid"  # a motion that cannot be planned (motion.py)
    # how a motion ended early (the motion_aborted event's reason)
    REPLACED = "replaced"  # by a newer motion or a setpoint
    # a motion's warning: its clock waits for a vehicle that trails it (motion_clock)
    VEHICLE_TRAILING = "vehicle_trailing"
    # the FC said no, or never said yes
    MODE_REFUSED = "mode_refused"
    MODE_TIMEOUT = "mode_timeout"
    ARM_REFUSED = "arm_refused"
    ARM_TIMEOUT = "arm_timeout"
    DISARM_REFUSED = "disarm_refused"
    DISARM_TIMEOUT = "disarm_timeout"
    # failsafes and takeovers
    LEASE_LAPSED = "lease_lapsed"
    LOSS_ACTION = "loss_action"
    ESCALATED = "escalated"
    PREEMPTED_MODE = "preempted_mode"
    PREEMPTED_DISARMED = "preempted_disarmed"
    PREEMPTED_MOTORS_CUT = "preempted_motors_cut"  # PX4 cut the motors under us (FC_MOTORS_CUT)
    FC_LINK_LOST = "fc_link_lost"
    FC_REBOOTED = "fc_rebooted"
    FC_SILENT = "fc_silent"
    EMERGENCY_STOP = "emergency_stop"
    # PX4 entered OFFBOARD by itself during the warm-up (its intended mode after a failsafe):
    # it flies the engage's setpoint from then on (a warning event, px4-offboard.md §3)
    OFFBOARD_BY_PX4 = "offboard_by_px4"
    CANCELLED = "cancelled"
    REPEAT_NOT_KEPT = "repeat_not_kept"  # a hand-over has enough repeats waiting already
    # the safety envelope (envelope.py): each names the limit or fence part that applied
    HOME_UNKNOWN = "home_unknown"  # the fence needs PX4's HOME_POSITION, not heard yet
    FENCE_DISTANCE = "fence_distance"  # max_distance_m from home
    FENCE_MIN_ALTITUDE = "fence_min_altitude"
    FENCE_MAX_ALTITUDE = "fence_max_altitude"
    FENCE_POLYGON = "fence_polygon"
    FENCE_TERRAIN_ALTITUDE = "fence_terrain_altitude"  # terrain altitude cannot be checked
    FENCE_STOP = "fence_stop"  # the stream was slowed so the vehicle stops at the fence
    FENCE_BREACH = "fence_breach"  # the vehicle was found outside: breach action taken
    LIMIT_HORIZONTAL_SPEED = "limit_horizontal_speed"
    LIMIT_VERTICAL_SPEED = "limit_vertical_speed"
    LIMIT_ACCELERATION = "limit_acceleration"
    LIMIT_TILT = "limit_tilt"
    LIMIT_THRUST = "limit_thrust"
    LIMIT_YAW_RATE = "limit_yaw_rate"


_ERROR_CODES: dict[Reason, ErrorCode] = {
    Reason.PHASE_NOT_ALLOWED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.NOT_IN_CONTROL: ErrorCode.NOT_IN_CONTROL,
    Reason.FC_UNKNOWN: ErrorCode.FC_TIMEOUT,
    Reason.FC_NOT_PX4: ErrorCode.FC_NOT_PX4,
    Reason.FC_PARAMS_UNKNOWN: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FWDEXTSP_DISABLED: ErrorCode.COMMAND_NOT_ALLOWED,  # checked up front, as the others
    Reason.STREAM_TOO_SLOW: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LOSS_ACTION_CUTS_MOTORS: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FC_MOTORS_CUT: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.ESTIMATE_MISSING: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.CONFIRMATION_MISSING: ErrorCode.COMMAND_INVALID,
    Reason.DISARM_IN_FLIGHT: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.SUPERSEDED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.MOTION_INVALID: ErrorCode.COMMAND_INVALID,
    Reason.REPLACED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.MODE_REFUSED: ErrorCode.FC_REFUSED,
    Reason.MODE_TIMEOUT: ErrorCode.FC_TIMEOUT,
    Reason.ARM_REFUSED: ErrorCode.FC_REFUSED,
    Reason.ARM_TIMEOUT: ErrorCode.FC_TIMEOUT,
    Reason.DISARM_REFUSED: ErrorCode.FC_REFUSED,
    Reason.DISARM_TIMEOUT: ErrorCode.FC_TIMEOUT,
    Reason.LEASE_LAPSED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.PREEMPTED_MODE: ErrorCode.FC_REFUSED,
    Reason.PREEMPTED_DISARMED: ErrorCode.FC_REFUSED,
    Reason.PREEMPTED_MOTORS_CUT: ErrorCode.FC_REFUSED,
    Reason.FC_LINK_LOST: ErrorCode.FC_TIMEOUT,
    Reason.FC_REBOOTED: ErrorCode.FC_TIMEOUT,
    Reason.FC_SILENT: ErrorCode.FC_TIMEOUT,
    Reason.EMERGENCY_STOP: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.CANCELLED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.REPEAT_NOT_KEPT: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.ESCALATED: ErrorCode.FC_REFUSED,
    # a setpoint outside the envelope is well-formed but not allowed here
    Reason.HOME_UNKNOWN: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FENCE_DISTANCE: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FENCE_MIN_ALTITUDE: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FENCE_MAX_ALTITUDE: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FENCE_POLYGON: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.FENCE_TERRAIN_ALTITUDE: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LIMIT_HORIZONTAL_SPEED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LIMIT_VERTICAL_SPEED: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LIMIT_ACCELERATION: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LIMIT_TILT: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LIMIT_THRUST: ErrorCode.COMMAND_NOT_ALLOWED,
    Reason.LIMIT_YAW_RATE: ErrorCode.COMMAND_NOT_ALLOWED,
}


def error_code_for(reason: Reason) -> ErrorCode:
    """The public ErrorCode a failed reply with this reason carries."""
    return _ERROR_CODES.get(reason, ErrorCode.COMMAND_NOT_ALLOWED)
