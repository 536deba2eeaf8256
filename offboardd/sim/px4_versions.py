"""What differs between the PX4 releases the sim can play (`SimConfig.px4_version`).

One frozen `Px4Version` per release, each field a behaviour the rest of the sim asks
about instead of hard-coding one release; every value cites the PX4 pull request or the
measurement it comes from (px4-offboard.md §7). "[SITL main]" is PX4 main of August
2026 ("v1.19.0-dev", SIH), which 1.18 is taken to behave like; 1.17 follows the PR
list, its own behaviour is unmeasured unless said. This module holds data only: the
commander, the commands, the parameter table and the links read it; it must not
import them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from offboardd.mavlink.codec import dialect as d

# (name, MAV_PARAM_TYPE, PX4 default) for parameters a release adds.
ParamDef = tuple[str, int, int | float]


def flight_sw_version(major: int, minor: int, patch: int, kind: int = 255) -> int:
    """AUTOPILOT_VERSION.flight_sw_version; kind 255 = FIRMWARE_VERSION_TYPE_OFFICIAL."""
    return (major << 24) | (minor << 16) | (patch << 8) | kind


@dataclass(frozen=True)
class Px4Version:
    name: str  # "1.16": what --px4-version takes
    flight_sw_version: int
    # DO_SET_MODE answered twice, the first ACK always ACCEPTED ([SITL] v1.16.2 and
    # v1.17.0); [SITL main] once.
    double_set_mode_ack: bool
    # PX4-Autopilot#26391 (backport of #26289, v1.17): an offboard loss action that is a
    # manual mode (COM_OBL_RC_ACT 0 Position, 1 Altitude, 2 Stabilized) without manual
    # control becomes NAV_RCL_ACT's action. [SITL main] 0 -> AUTO.RTL after 1.09-1.13 s.
    manual_loss_action_needs_rc: bool
    # NAV_RCL_ACT values this release knows, as offboard-loss fallbacks: a mode name, or
    # "TERMINATE" / "DISARM" (modes.MotorCut); "OFFBOARD" for no failsafe at all:
    # [SITL v1.17.0, main] NAV_RCL_ACT 0 (Disabled), COM_OBL_RC_ACT 0, stream stopped at
    # 2 m: still OFFBOARD, armed, system_status ACTIVE 8 s later, holding 2 m (±0.2);
    # OFFBOARD re-requested without a stream: TEMPORARILY_REJECTED. v1.18 adds 7 "Hold
    # mode (no failsafe)" (#27792): [SITL main] the same, no mode change.
    rc_loss_actions: tuple[tuple[int, str], ...]
    # Parameters: removed in this release, and added (not in v1.16.2's table).
    removed_params: frozenset[str]
    added_params: tuple[ParamDef, ...]
    # PARAM_ERROR (#345) for a read or set of an unknown parameter (PX4-Autopilot#25699,
    # merged to main after the v1.17 branch cut: mavlink/mavlink#2591). Older: no answer
    # to a read, STATUSTEXT "[pm] unknown param" to a set.
    param_error: bool
    # The pilot's stick override: "COM_RC_OVERRIDE" (bit 0 auto modes, bit 1 offboard,
    # threshold COM_RC_STICK_OV) or, from v1.18 (#27041), "MAN_OVERRIDE_SPD" (any mode,
    # off when negative).
    rc_override_param: Literal["COM_RC_OVERRIDE", "MAN_OVERRIDE_SPD"]
    # CURRENT_MODE only on a vehicle_status publication, never faster than the requested
    # interval ([SITL main], current_mode_stream.py); False: v1.16's periodic stream
    # plus an immediate one on every change (streams.py).
    current_mode_on_status: bool
    # MAV_CMD_* answered UNSUPPORTED because the release removed them (#27251, #27252):
    # use MAV_CMD_REQUEST_MESSAGE.
    removed_commands: frozenset[int]
    # Message ids the release has no stream for: MAV_CMD_SET_MESSAGE_INTERVAL on them,
    # even to stop one, is answered FAILED, and they never come. [SITL v1.16.2]
    # GNSS_INTEGRITY (#441) and ESTIMATOR_SENSOR_FUSION_STATUS (#514) -> FAILED; [SITL
    # v1.17.0] #514 -> FAILED; [SITL main] both accepted and sent at 1/s.
    streamless_ids: frozenset[int] = frozenset()
    # Streams the release has (SET_MESSAGE_INTERVAL accepted) that its SIH never sends on
    # the onboard link, nor counts against a serial link's data rate. [SITL v1.16.2,
    # v1.17.0] ESC_INFO (#290) and ESC_STATUS (#291) are not on the wire (main: 10/s each)
    # and are budgeted only once esc_status is advertised (their get_size()); ADSB_VEHICLE
    # (#246) is configured at "unlimited" rate, which update_rate_mult skips (main: 5/s,
    # budgeted). On 57,600 baud with the streams left alone LOCAL_POSITION_NED came at
    # 3.0/s on both (main: 2.4/s).
    silent_ids: frozenset[int] = frozenset()
    # SET_ATTITUDE_TARGET with THROTTLE_IGNORE (64) gives no proof of life: [SITL main]
    # mask 71 -> OFFBOARD TEMPORARILY_REJECTED; [SITL v1.16.2, v1.17.0] accepted, flown.
    throttle_ignore_refused: bool = False
    # AUTO.LAND: seconds from touchdown until the land detector's LNDMC_TRIG_TIME
    # hysteresis starts (the thrust winding down, and on v1.16/v1.17 SIH the estimated
    # vertical speed settling below LNDMC_Z_VEL_MAX). [SITL main] touchdown -> ON_GROUND
    # 1.95-2.02 s (three landings, LNDMC_TRIG_TIME 1 s).
    touchdown_settle_s: float = 1.0
    # Defaults the release sets apart from the table's (params.py: v1.16's), as its
    # multicopter airframes boot with them (ROMFS rc.mc_defaults).
    changed_defaults: tuple[tuple[str, int | float], ...] = ()
    # GET_MESSAGE_INTERVAL of a stream the link does not have: -1; [SITL v1.16.2] 0
    # (its get_message_interval started from an unsigned 0; v1.17 from -1)
    absent_stream_interval_us: int = -1
    # REQUEST_MESSAGE of MESSAGE_INTERVAL answered as GET_MESSAGE_INTERVAL; [SITL v1.16.2]
    # DENIED (no stream builds MESSAGE_INTERVAL there)
    interval_by_request: bool = True
    # A failsafe's flight termination reported as the TERMINATION mode: HEARTBEAT and
    # CURRENT_MODE send nav_state up to v1.17, nav_state_display (the intended mode's) from
    # v1.18. [SITL v1.16.2, v1.17.0] GF_ACTION=4 -> TERMINATION (v1.16.2: ~0.9 s before
    # system_status FLIGHT_TERMINATION); [SITL v1.18] OFFBOARD stays reported.
    termination_as_mode: bool = False
    # Descend (Land without a position estimate) reported as AUTO.DESCEND (main, #27918);
    # older releases report AUTO.LAND
    descend_as_own_mode: bool = False


_SILENT_BEFORE_V1_18 = frozenset({290, 291, 246})  # ESC_INFO, ESC_STATUS, ADSB_VEHICLE
_RC_LOSS_ACTIONS_V1_16 = ((0, "OFFBOARD"), (1, "AUTO.LOITER"), (2, "AUTO.RTL"), (3, "AUTO.LAND"),
                          (5, "TERMINATE"), (6, "DISARM"))  # fmt: skip
_REQUEST_COMMANDS_REMOVED_V1_18 = frozenset({
    d.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES,  # 520
    d.MAV_CMD_REQUEST_PROTOCOL_VERSION,  # 519
    d.MAV_CMD_GET_HOME_POSITION,  # 410
    d.MAV_CMD_REQUEST_FLIGHT_INFORMATION,  # 528
    d.MAV_CMD_REQUEST_STORAGE_INFORMATION,  # 525
})  # fmt: skip

V1_16 = Px4Version(
    name="1.16",
    flight_sw_version=flight_sw_version(1, 16, 2),  # [SITL] v1.16.2
    double_set_mode_ack=True,
    manual_loss_action_needs_rc=False,  # [SITL] POSCTL without RC: descends and lands
    rc_loss_actions=_RC_LOSS_ACTIONS_V1_16,
    removed_params=frozenset(),
    added_params=(),
    param_error=False,
    rc_override_param="COM_RC_OVERRIDE",
    current_mode_on_status=False,
    removed_commands=frozenset(),
    streamless_ids=frozenset({441, 514}),  # GNSS_INTEGRITY, ESTIMATOR_SENSOR_FUSION_STATUS
    silent_ids=_SILENT_BEFORE_V1_18,
    touchdown_settle_s=2.7,  # [SITL v1.16.2] touchdown -> ON_GROUND 3.59-3.87 s
    absent_stream_interval_us=0,
    interval_by_request=False,
    termination_as_mode=True,
)
V1_17 = Px4Version(
    name="1.17",
    flight_sw_version=flight_sw_version(1, 17, 0),
    double_set_mode_ack=True,  # [SITL v1.17.0] two ACCEPTED ACKs, as v1.16.2
    manual_loss_action_needs_rc=True,  # #26391 was a backport to the v1.17 branch
    rc_loss_actions=_RC_LOSS_ACTIONS_V1_16,
    removed_params=frozenset(),
    added_params=(),
    param_error=False,  # #25699 missed the v1.17 branch cut
    rc_override_param="COM_RC_OVERRIDE",
    current_mode_on_status=True,  # [SITL v1.17.0] 2.0/s at rest (main: ~2.4), on status
    removed_commands=frozenset(),
    streamless_ids=frozenset({514}),  # ESTIMATOR_SENSOR_FUSION_STATUS
    silent_ids=_SILENT_BEFORE_V1_18,
    touchdown_settle_s=2.1,  # [SITL v1.17.0] touchdown -> ON_GROUND 2.15-3.71 s
    termination_as_mode=True,
)
V1_18 = Px4Version(
    name="1.18",
    flight_sw_version=flight_sw_version(1, 18, 0),
    double_set_mode_ack=False,  # [SITL main] one COMMAND_ACK
    manual_loss_action_needs_rc=True,  # [SITL main] COM_OBL_RC_ACT=0 -> AUTO.RTL
    rc_loss_actions=(*_RC_LOSS_ACTIONS_V1_16, (7, "OFFBOARD")),  # #27792, [SITL main]
    removed_params=frozenset({"COM_RC_OVERRIDE", "COM_RC_STICK_OV"}),  # #27041
    # [SITL main] PARAM_VALUE MAN_OVERRIDE_SPD: type 9 (REAL32), 1.0
    added_params=(("MAN_OVERRIDE_SPD", d.MAV_PARAM_TYPE_REAL32, 1.0),),
    param_error=True,  # [SITL main] COM_RC_OVERRIDE read -> PARAM_ERROR, error 1
    rc_override_param="MAN_OVERRIDE_SPD",
    current_mode_on_status=True,
    removed_commands=_REQUEST_COMMANDS_REMOVED_V1_18,
    throttle_ignore_refused=True,  # [SITL main]
    # #27738: rc.mc_defaults no longer sets NAV_ACC_RAD 2, so multicopters take the
    # parameter's own 10 m (on release/1.18 and main): Return's altitude near home and where
    # its landing begins follow it (rtl.py). [SITL v1.17.0] 2 m: "RTL: start return at
    # ... (7 m above destination)" 6 m out, the landing begun ~2 m out.
    changed_defaults=(("NAV_ACC_RAD", 10.0),),
)

# PX4 main (August 2026, v1.19.0-dev): release/1.18 plus Descend named as its own mode. A
# source diff of the two (2026-11-28) found nothing else a companion sees on the onboard
# link: the receiver, the streams, the offboard checks and failsafes, the parameters the
# sim has are the same. (SIH itself differs: main's has no in-flight IMU noise and
# stalls whole at a flight termination.)
V_MAIN = replace(V1_18, name="main", flight_sw_version=flight_sw_version(1, 19, 0, kind=0),
                 descend_as_own_mode=True)

VERSIONS: dict[str, Px4Version] = {v.name: v for v in (V1_16, V1_17, V1_18, V_MAIN)}
VERSION_NAMES = tuple(VERSIONS)
DEFAULT_VERSION = V1_18.name  # the newest release


def version_by_name(name: str) -> Px4Version:
    try:
        return VERSIONS[name]
    except KeyError:
        raise ValueError(f"px4_version must be one of {VERSION_NAMES}, not {name!r}") from None
