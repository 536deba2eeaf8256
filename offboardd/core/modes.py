"""PX4 flight modes: (main, sub) <-> HEARTBEAT/CURRENT_MODE `custom_mode`, and their names.

PX4 packs its mode as `custom_mode = (main << 16) | (sub << 24)` (px4_custom_mode.h,
px4-offboard.md §4). Pure lookups; no pymavlink.
"""

from __future__ import annotations

from enum import Enum


class Px4Mode(Enum):
    """The PX4 modes offboardd names; value = (main mode, sub mode)."""

    MANUAL = (1, 0)
    ALTCTL = (2, 0)
    POSCTL = (3, 0)
    POSCTL_ORBIT = (3, 1)
    POSCTL_SLOW = (3, 2)
    AUTO_READY = (4, 1)
    AUTO_TAKEOFF = (4, 2)
    AUTO_LOITER = (4, 3)  # "Hold"
    AUTO_MISSION = (4, 4)
    AUTO_RTL = (4, 5)
    AUTO_LAND = (4, 6)
    AUTO_FOLLOW_TARGET = (4, 8)
    AUTO_PRECLAND = (4, 9)
    AUTO_VTOL_TAKEOFF = (4, 10)
    # A landing without a position estimate (nav state DESCEND): PX4 main (v1.19-dev,
    # #27918) reports it as its own sub mode; v1.18 and older as AUTO.LAND.
    AUTO_DESCEND = (4, 20)
    ACRO = (5, 0)
    OFFBOARD = (6, 0)
    STABILIZED = (7, 0)
    # Flight termination asked for (MAV_CMD_DO_FLIGHTTERMINATION), and on v1.16 / v1.17 any
    # termination: no motor runs (VehicleState.motors_cut). v1.18 and main report a
    # failsafe's termination in the mode it had: only HEARTBEAT system_status tells then.
    TERMINATION = (10, 0)

    @property
    def main_mode(self) -> int:
        return self.value[0]

    @property
    def sub_mode(self) -> int:
        return self.value[1]

    @property
    def custom_mode(self) -> int:
        return (self.main_mode << 16) | (self.sub_mode << 24)

    @property
    def label(self) -> str:
        """PX4's own spelling: "OFFBOARD", "AUTO.LOITER", "POSCTL.ORBIT"."""
        return self.name.replace("_", ".", 1) if self.sub_mode else self.name

    def honours(self, asked: Px4Mode) -> bool:
        """This reported mode is what `asked` was: the same, or Descend for Land (PX4 flies
        a Land it has no position for as Descend, and main names it so)."""
        return self is asked or (self is Px4Mode.AUTO_DESCEND and asked is Px4Mode.AUTO_LAND)


_BY_CUSTOM_MODE = {m.custom_mode: m for m in Px4Mode}


def mode_from_custom(custom_mode: int) -> Px4Mode | None:
    """The mode a HEARTBEAT/CURRENT_MODE `custom_mode` means, or None if unknown.

    The low 16 bits are unused by PX4; they are masked so a stray value there does not
    hide the mode.
    """
    return _BY_CUSTOM_MODE.get(custom_mode & 0xFFFF0000)


def mode_name(custom_mode: int | None) -> str:
    """A readable name for any custom_mode, including ones offboardd does not know."""
    if custom_mode is None:
        return "unknown"
    mode = mode_from_custom(custom_mode)
    if mode is not None:
        return mode.label
    main, sub = (custom_mode >> 16) & 0xFF, (custom_mode >> 24) & 0xFF
    return f"main{main}.sub{sub}"
