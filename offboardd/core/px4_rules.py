"""What PX4 does differently by release, as one table: the rules offboardd applies once
AUTOPILOT_VERSION says which PX4 it is talking to (px4-offboard.md §7).

Pure data and pure functions over it: which parameters to read, what PX4 will do when
offboard setpoints stop, and what to tell the user to set. It decides nothing about
phases and sends nothing; FcChecks and the doctor consult it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# The oldest PX4 offboardd supports: v1.14 dropped SET_ACTUATOR_CONTROL_TARGET as proof
# of life and made DO_SET_MODE answer for the mode that can run (px4-offboard.md §1, §4).
MIN_SUPPORTED = (1, 14)

# COM_OBL_RC_ACT (commander_params.yaml): the mode PX4 falls back to on offboard loss.
COM_OBL_RC_ACT_NAMES = {0: "Position", 1: "Altitude", 2: "Stabilized", 3: "Return",
                        4: "Land", 5: "Hold", 6: "Terminate", 7: "Disarm"}  # fmt: skip
# NAV_RCL_ACT: the RC-loss action; 7 "Hold mode (no failsafe)" is new in v1.18 (#27792).
NAV_RCL_ACT_NAMES = {0: "Disabled", 1: "Hold", 2: "Return", 3: "Land", 5: "Terminate",
                     6: "Disarm", 7: "Hold (no failsafe)"}  # fmt: skip
# Loss actions that need a pilot on the sticks (RC): without one, v1.16 descends in
# Position (POSCTL) until it lands [SITL v1.16.2: 5 m -> 3.0 m in the 3 s after the
# fallback], and from v1.17 NAV_RCL_ACT's action is taken instead.
_MANUAL_ACTIONS = frozenset({0, 1, 2})
# NAV_RCL_ACT values that take no failsafe on an offboard loss without RC: PX4 stays in
# OFFBOARD, armed, flying the last setpoint it got [SITL v1.17.0 and main: a position held
# 2 m for 8 s, a new OFFBOARD request TEMPORARILY_REJECTED; a 1 m/s velocity flew on at
# 0.8-0.94 m/s for 10 s], so a companion that dies mid-velocity leaves the vehicle flying
# away (offboardd's own stops end the stream on a stop: engine_failsafe.stop_on_a_stop).
_NO_FAILSAFE_RCL = frozenset({0, 7})
_STAYS = "no failsafe: stays in OFFBOARD, armed, flying the last setpoint"
CUTS_MOTORS = frozenset({6, 7})  # COM_OBL_RC_ACT Terminate, Disarm
RCL_CUTS_MOTORS = frozenset({5, 6})  # NAV_RCL_ACT Terminate, Disarm


@dataclass(frozen=True)
class Px4Rules:
    """The behaviour of every PX4 release from `since` until the next row's."""

    since: tuple[int, int]
    # v1.17 (PX4-Autopilot#26391, failsafe.cpp): Position/Altitude/Stabilized on offboard
    # loss without RC becomes NAV_RCL_ACT's action. [SITL main] -> AUTO.RTL at ~1.1 s.
    manual_loss_action_without_rc_uses_nav_rcl_act: bool
    # v1.18 (#27041): COM_RC_OVERRIDE / COM_RC_STICK_OV removed, MAN_OVERRIDE_SPD decides
    # (stick travel per second; negative disables) and applies in offboard too.
    rc_override_param: str
    # v1.17: MAV_PROTO_VER defaults to 2; MAVLink 1 is opt-in.
    mavlink1_by_default: bool
    # signing: none before v1.17; v1.17 SETUP_SIGNING + MAV_SIGN_CFG; v1.18 (#26894) a key
    # on the SD card, SETUP_SIGNING refused while armed, MAV_SIGN_CFG removed.
    signing: str
    # v1.18 (#27251, #27252): REQUEST_AUTOPILOT_CAPABILITIES & co. are gone; offboardd only
    # ever uses MAV_CMD_REQUEST_MESSAGE, which every supported release has.
    legacy_request_commands: bool

    @property
    def label(self) -> str:
        return f"PX4 >= v{self.since[0]}.{self.since[1]}"

    def notes(self) -> tuple[str, ...]:
        """What a user of this release should know, one short phrase each (doctor)."""
        out = []
        if self.manual_loss_action_without_rc_uses_nav_rcl_act:
            out.append("offboard loss without RC follows NAV_RCL_ACT when COM_OBL_RC_ACT is 0-2")
        out.append(f"stick takeover: {self.rc_override_param}")
        out.append({"none": "no MAVLink signing",
                    "setup_signing": "signing: SETUP_SIGNING and MAV_SIGN_CFG",
                    "sd_card_key": "signing: a key on the SD card (SETUP_SIGNING refused "
                                   "while armed)"}[self.signing])
        if not self.mavlink1_by_default:
            out.append("MAVLink 1 opt-in")
        return tuple(out)

    def optional_params(self) -> tuple[str, ...]:
        """Parameters worth reading on this release (besides the required ones)."""
        extra = ("NAV_RCL_ACT",) if self.manual_loss_action_without_rc_uses_nav_rcl_act else ()
        return ("COM_RCL_EXCEPT", self.rc_override_param, *extra)


RULES: tuple[Px4Rules, ...] = (
    Px4Rules((1, 14), False, "COM_RC_OVERRIDE", True, "none", True),
    Px4Rules((1, 17), True, "COM_RC_OVERRIDE", False, "setup_signing", True),
    Px4Rules((1, 18), True, "MAN_OVERRIDE_SPD", False, "sd_card_key", False),
)


def rules_for(major: int, minor: int) -> Px4Rules:
    """The rules of release major.minor (a -dev build of main gets the newest row)."""
    chosen = RULES[0]
    for rules in RULES:
        if (major, minor) >= rules.since:
            chosen = rules
    return chosen


def loss_action(rules: Px4Rules | None, params: Mapping[str, int | float]) -> str | None:
    """What PX4 does when offboard setpoints stop, in words; None until COM_OBL_RC_ACT is
    read. Without the version, both readings are given."""
    if "COM_OBL_RC_ACT" not in params:
        return None
    action = int(params["COM_OBL_RC_ACT"])
    name = COM_OBL_RC_ACT_NAMES.get(action, f"unknown({action})")
    if action not in _MANUAL_ACTIONS:
        return name
    if rules is None:
        return f"{name} (from PX4 v1.17 without RC: NAV_RCL_ACT's action)"
    if not rules.manual_loss_action_without_rc_uses_nav_rcl_act:
        return f"{name} (without RC: descends until it lands)" if action == 0 else name
    if "NAV_RCL_ACT" not in params:
        return f"{name} (without RC: NAV_RCL_ACT's action)"
    rcl = int(params["NAV_RCL_ACT"])
    if rcl in _NO_FAILSAFE_RCL:
        return f"{name} (without RC: {_STAYS}, NAV_RCL_ACT={rcl})"
    rcl_name = NAV_RCL_ACT_NAMES.get(rcl, f"unknown({rcl})")
    return f"{name} (without RC: {rcl_name}, NAV_RCL_ACT={rcl})"


def motor_cut(rules: Px4Rules | None, params: Mapping[str, int | float]) -> str | None:
    """The parameters by which PX4 cuts the motors in the air on an offboard loss, in words,
    or None: COM_OBL_RC_ACT Terminate / Disarm; or, from v1.17 without RC, COM_OBL_RC_ACT
    0-2 handing over to NAV_RCL_ACT Terminate (5) / Disarm (6). (Whether RC is there is not
    known here: a vehicle flown by a companion usually has none.)"""
    if "COM_OBL_RC_ACT" not in params:
        return None
    action = int(params["COM_OBL_RC_ACT"])
    if action in CUTS_MOTORS:
        return f"COM_OBL_RC_ACT={action} ({COM_OBL_RC_ACT_NAMES[action]})"
    rcl = params.get("NAV_RCL_ACT")
    if (action in _MANUAL_ACTIONS and rules is not None and rcl is not None
            and rules.manual_loss_action_without_rc_uses_nav_rcl_act
            and int(rcl) in RCL_CUTS_MOTORS):  # fmt: skip
        return (f"COM_OBL_RC_ACT={action} ({COM_OBL_RC_ACT_NAMES[action]}) with, without RC, "
                f"NAV_RCL_ACT={int(rcl)} ({NAV_RCL_ACT_NAMES[int(rcl)]})")
    return None


def motor_cut_unread(rules: Px4Rules | None, params: Mapping[str, int | float]) -> str | None:
    """What `motor_cut` cannot judge without yet, or None: behind COM_OBL_RC_ACT 0-2 the
    release (AUTOPILOT_VERSION), and from v1.17 NAV_RCL_ACT, read once the version is."""
    if "COM_OBL_RC_ACT" not in params or int(params["COM_OBL_RC_ACT"]) not in _MANUAL_ACTIONS:
        return None
    if rules is None:
        return "AUTOPILOT_VERSION"
    if rules.manual_loss_action_without_rc_uses_nav_rcl_act and "NAV_RCL_ACT" not in params:
        return "NAV_RCL_ACT"
    return None


def loss_warnings(rules: Px4Rules | None, params: Mapping[str, int | float]) -> list[str]:
    """The offboard-loss surprises: what PX4 will really do, and what to set instead."""
    if "COM_OBL_RC_ACT" not in params:
        return []
    action = int(params["COM_OBL_RC_ACT"])
    name = COM_OBL_RC_ACT_NAMES.get(action, f"unknown({action})")
    if action in CUTS_MOTORS:
        return [f"COM_OBL_RC_ACT={action} ({name}): on offboard loss PX4 cuts the motors "
                "in the air (engage refused unless allow_motor_cut_loss_action)"]
    if action not in _MANUAL_ACTIONS:
        return []
    fix = "set COM_OBL_RC_ACT=5 (Hold) or 4 (Land) to choose the action yourself"
    if rules is not None and rules.manual_loss_action_without_rc_uses_nav_rcl_act:
        rcl = params.get("NAV_RCL_ACT")
        then = ("NAV_RCL_ACT's action" if rcl is None else
                f"NAV_RCL_ACT={int(rcl)} ({NAV_RCL_ACT_NAMES.get(int(rcl), 'unknown')})")
        out = [f"COM_OBL_RC_ACT={action} ({name}): without RC, {rules.label} takes {then} "
               f"on offboard loss instead; {fix}"]
        if rcl is not None and int(rcl) in RCL_CUTS_MOTORS:
            out.append(f"NAV_RCL_ACT={int(rcl)}: without RC an offboard loss cuts the motors "
                       "(engage refused unless allow_motor_cut_loss_action)")
        if rcl is not None and int(rcl) in _NO_FAILSAFE_RCL:
            out.append(f"NAV_RCL_ACT={int(rcl)}: without RC PX4 takes {_STAYS} on offboard "
                       "loss: if offboardd or its computer dies the vehicle flies on (a "
                       "velocity: away; a position: hovers) until its battery fails; set "
                       "COM_OBL_RC_ACT=5 (Hold) or 4 (Land)")
        return out
    if action == 0:
        return [f"COM_OBL_RC_ACT=0 (Position): without RC PX4 cannot hold position on "
                f"offboard loss and descends until it lands; {fix}"]
    return [f"COM_OBL_RC_ACT={action} ({name}): needs a pilot on RC to fly; {fix}"]


def override_warning(rules: Px4Rules, params: Mapping[str, int | float]) -> str | None:
    """How (or whether) a pilot's sticks take over from OFFBOARD, when it surprises."""
    value = params.get(rules.rc_override_param)
    if value is None:
        return None
    if rules.rc_override_param == "COM_RC_OVERRIDE":
        if not int(value) & 2:
            return (f"COM_RC_OVERRIDE={int(value)}: moving the RC sticks does not take over "
                    "from OFFBOARD (bit 1 clear); a pilot must switch modes")
        return None
    if float(value) < 0:
        return (f"MAN_OVERRIDE_SPD={float(value):g}: moving the RC sticks never takes over "
                "from OFFBOARD; a pilot must switch modes")
    return None


# FIRMWARE_VERSION_TYPE (common.xml), the low byte of AUTOPILOT_VERSION.flight_sw_version
_VERSION_TYPES = {0: "dev", 64: "alpha", 128: "beta", 192: "rc", 255: ""}


def px4_version(flight_sw_version: int) -> tuple[int, int, int, str]:
    """PX4's AUTOPILOT_VERSION.flight_sw_version: major, minor, patch bytes, then a type."""
    v = flight_sw_version
    kind = _VERSION_TYPES.get(v & 0xFF, f"type{v & 0xFF}")
    return (v >> 24) & 0xFF, (v >> 16) & 0xFF, (v >> 8) & 0xFF, kind


def format_version(flight_sw_version: int) -> str:
    major, minor, patch, kind = px4_version(flight_sw_version)
    return f"v{major}.{minor}.{patch}" + (f"-{kind}" if kind else "")
