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
    AUTO_TAKEOFF = (4, 2)
    AUTO_LOITER = (4, 3)  # "Hold"
    AUTO_MISSION = (4, 4)
    AUTO_RTL = (4, 5)
    AUTO_LAND = (4, 6)
    AUTO_PRECLAND = (4, 9)
    ACRO = (5, 0)
    OFFBOARD = (6, 0)
    STABILIZED = (7, 0)

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
        """PX4's own spelling: "OFFBOARD", "AUTO.LOITER"."""
        return self.name.replace("_", ".", 1) if self.name.startswith("AUTO_") else self.name


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
