"""PX4 flight modes as the sim reports them: custom_mode encoding, names, requirements.

Owns the table of PX4 main/sub modes (px4-offboard.md §4), the HEARTBEAT `custom_mode`
and `base_mode` encodings, CURRENT_MODE's standard mode, and what each mode needs to run
(manual control, a position estimate) and whether it allows arming. Pure data: it must
not know about time, setpoints or links.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# PX4 px4_custom_mode.h main modes and AUTO sub modes.
MAIN_MANUAL = 1
MAIN_ALTCTL = 2
MAIN_POSCTL = 3
MAIN_AUTO = 4
MAIN_ACRO = 5
MAIN_OFFBOARD = 6
MAIN_STABILIZED = 7
MAIN_TERMINATION = 10  # (8 RATTITUDE_LEGACY and 9 SIMPLE are unused)
SUB_TAKEOFF = 2
SUB_LOITER = 3
SUB_MISSION = 4
SUB_RTL = 5
SUB_LAND = 6
SUB_PRECLAND = 9
SUB_DESCEND = 20  # main (v1.19-dev, #27918)

# MAV_MODE_FLAG bits PX4 sets in HEARTBEAT.base_mode.
_CUSTOM_MODE_ENABLED = 1
_AUTO_ENABLED = 4
_GUIDED_ENABLED = 8
_STABILIZE_ENABLED = 16
_MANUAL_INPUT_ENABLED = 64
SAFETY_ARMED = 128


@dataclass(frozen=True)
class FlightMode:
    """One PX4 mode: `main` and `sub` as in custom_mode, with PX4's display name."""

    name: str
    main: int
    sub: int = 0
    needs_manual_control: bool = False  # PX4 mode requirement "manual_control"
    needs_position: bool = False  # a local position estimate
    # ... and a global one: a multicopter's Hold, Return and Mission (ModeUtil/
    # mode_requirements.cpp, mode_req_global_position); Land, Takeoff and Position do not
    needs_global: bool = False
    allows_arming: bool = True  # PX4 modeAllowsArming(): LAND/RTL do not
    standard_mode: int = 0  # MAV_STANDARD_MODE for CURRENT_MODE (0 = non-standard)

    @property
    def custom_mode(self) -> int:
        # px4-offboard.md §4: custom_mode = (main << 16) | (sub << 24)
        return (self.main << 16) | (self.sub << 24)

    @property
    def is_auto(self) -> bool:
        return self.main == MAIN_AUTO

    def base_mode(self, *, armed: bool) -> int:
        flags = _CUSTOM_MODE_ENABLED | (SAFETY_ARMED if armed else 0)
        if self.main in (MAIN_MANUAL, MAIN_ALTCTL, MAIN_POSCTL, MAIN_ACRO, MAIN_STABILIZED):
            flags |= _MANUAL_INPUT_ENABLED
        if self.main != MAIN_MANUAL:
            flags |= _STABILIZE_ENABLED
        # OFFBOARD sets neither GUIDED nor AUTO: [SITL v1.16.2 and main] HEARTBEAT.base_mode
        # 145 armed / 17 disarmed in OFFBOARD, 157 / 29 in AUTO.LOITER and AUTO.LAND.
        if self.main == MAIN_AUTO:
            flags |= _GUIDED_ENABLED | _AUTO_ENABLED
        return flags


MANUAL = FlightMode("MANUAL", MAIN_MANUAL, needs_manual_control=True)
ALTCTL = FlightMode("ALTCTL", MAIN_ALTCTL, needs_manual_control=True, standard_mode=4)
POSCTL = FlightMode(
    "POSCTL", MAIN_POSCTL, needs_manual_control=True, needs_position=True, standard_mode=1
)
ACRO = FlightMode("ACRO", MAIN_ACRO, needs_manual_control=True)
STABILIZED = FlightMode("STABILIZED", MAIN_STABILIZED, needs_manual_control=True)
OFFBOARD = FlightMode("OFFBOARD", MAIN_OFFBOARD)
TAKEOFF = FlightMode("AUTO.TAKEOFF", MAIN_AUTO, SUB_TAKEOFF, needs_position=True, standard_mode=8)
LOITER = FlightMode("AUTO.LOITER", MAIN_AUTO, SUB_LOITER, needs_position=True, needs_global=True)
MISSION = FlightMode("AUTO.MISSION", MAIN_AUTO, SUB_MISSION, needs_position=True,
                     needs_global=True, standard_mode=6)
RTL = FlightMode(
    "AUTO.RTL", MAIN_AUTO, SUB_RTL, needs_position=True, needs_global=True, allows_arming=False,
    standard_mode=5,
)
# LAND needs a (relaxed) local position and altitude, as PX4's mode requirements say
# (ModeUtil/mode_requirements.cpp: AUTO_LAND, mode_req_local_position_relaxed), but a request
# for it is forced (Commander.request_mode): without an estimate PX4 descends blind
# (NAVIGATION_STATE_DESCEND, reported as AUTO.LAND up to v1.18, as AUTO.DESCEND on main),
# as its own failsafe does (Commander._fallback_mode).
LAND = FlightMode("AUTO.LAND", MAIN_AUTO, SUB_LAND, needs_position=True, allows_arming=False,
                  standard_mode=7)
PRECLAND = FlightMode("AUTO.PRECLAND", MAIN_AUTO, SUB_PRECLAND, allows_arming=False)
# Land without a position estimate is PX4's Descend (NAVIGATION_STATE_DESCEND): main
# reports it as its own AUTO sub mode, v1.18 and older as AUTO.LAND; CURRENT_MODE's
# standard mode is 0 (not LAND) on both (mode_util::getStandardModeFromNavState). Only
# ever shown (Vehicle.shown_mode): no request names it (DO_SET_MODE 4/20 is refused).
DESCEND = FlightMode("AUTO.DESCEND", MAIN_AUTO, SUB_DESCEND, allows_arming=False)
DESCEND_AS_LAND = FlightMode("AUTO.LAND", MAIN_AUTO, SUB_LAND, allows_arming=False)
# What MAV_CMD_DO_FLIGHTTERMINATION makes the intended (so the displayed) mode.
TERMINATION = FlightMode("TERMINATION", MAIN_TERMINATION, allows_arming=False)

ALL_MODES: tuple[FlightMode, ...] = (
    MANUAL, ALTCTL, POSCTL, ACRO, STABILIZED, OFFBOARD,
    TAKEOFF, LOITER, MISSION, RTL, LAND, PRECLAND, TERMINATION,
)  # fmt: skip
_BY_NAME = {m.name: m for m in ALL_MODES}
_BY_CUSTOM = {m.custom_mode: m for m in ALL_MODES}
# Aliases users type (QGroundControl's names).
_BY_NAME.update({"HOLD": LOITER, "POSITION": POSCTL, "ALTITUDE": ALTCTL, "RETURN": RTL})



class MotorCut(Enum):
    """A failsafe action that is no mode: PX4 stops the motors."""

    # Flight termination: armed still, no motor, HEARTBEAT system_status
    # FLIGHT_TERMINATION, never cleared until a reboot (failsafe framework: "Terminate never
    # clears"); mode changes and arming refused. v1.18 reports the mode it had (the
    # displayed mode is the intended one, HEARTBEAT.hpp nav_state_display), v1.16 and v1.17
    # TERMINATION (Px4Version.termination_as_mode). [SITL v1.18] after a COM_OBL_RC_ACT 6
    # offboard loss: OFFBOARD and armed for 20 s, the vehicle falling from 5 m,
    # landed_state IN_AIR throughout. ([SITL main] SIH's lockstep stalls the whole PX4 on
    # termination, "timed out waiting for actuator_outputs_sim": nothing to measure.)
    TERMINATE = "TERMINATE"
    DISARM = "DISARM"  # disarmed at once, in the air too


# COM_OBL_RC_ACT (px4-offboard.md §3) -> the fallback mode, or a motor cut (6, 7).
OFFBOARD_LOSS_ACTIONS: dict[int, FlightMode | MotorCut] = {
    0: POSCTL, 1: ALTCTL, 2: STABILIZED, 3: RTL, 4: LAND, 5: LOITER,
    6: MotorCut.TERMINATE, 7: MotorCut.DISARM,
}  # fmt: skip


def mode_by_name(name: str) -> FlightMode:
    """A mode by PX4 name ("OFFBOARD", "AUTO.LOITER") or alias ("HOLD"), case-insensitive."""
    try:
        return _BY_NAME[name.strip().upper()]
    except KeyError:
        known = ", ".join(sorted(_BY_NAME))
        raise ValueError(f"unknown PX4 mode {name!r}; known: {known}") from None


def mode_from_main_sub(main: int, sub: int) -> FlightMode | None:
    """The mode DO_SET_MODE asks for (param2 main, param3 sub), or None if PX4 has none.

    AUTO with sub 0 is AUTO.MISSION ([SITL main, v1.16.2] DO_SET_MODE 1, 4, 0 disarmed:
    ACCEPTED, HEARTBEAT custom_mode 67371008); for other main modes sub is ignored.
    """
    if main == MAIN_TERMINATION:  # PX4 maps no DO_SET_MODE onto it: DO_FLIGHTTERMINATION
        return None
    if main != MAIN_AUTO:
        sub = 0
    elif sub == 0:
        sub = SUB_MISSION
    return _BY_CUSTOM.get((main << 16) | (sub << 24))


def mode_from_custom(custom_mode: int) -> FlightMode | None:
    return _BY_CUSTOM.get(custom_mode)
