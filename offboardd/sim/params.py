"""The sim's PX4 parameter table: names, types, PX4 defaults, PARAM_VALUE building.

Integer parameters travel byte-wise (px4-offboard.md §5) through
`offboardd.mavlink.params`. The set of names follows the PX4 release played
(`param_specs`: v1.16.2's table with what a later release removed or added). This module
owns the values; it must not decide what a parameter does (the commander reads them)
nor touch links.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from offboardd.mavlink.codec import Message, dialect
from offboardd.mavlink.params import ParamValue, encode_param_value
from offboardd.sim.px4_versions import Px4Version

_INT = dialect.MAV_PARAM_TYPE_INT32
_FLOAT = dialect.MAV_PARAM_TYPE_REAL32


@dataclass(frozen=True)
class ParamSpec:
    name: str
    param_type: int
    default: ParamValue


# PX4 v1.16 defaults (src/modules/commander/commander_params.c, mavlink_params.c,
# mc_pos_control params, navigator params); later releases: px4_versions.py.
PARAM_SPECS: tuple[ParamSpec, ...] = (
    ParamSpec("COM_DISARM_LAND", _FLOAT, 2.0),
    ParamSpec("COM_DISARM_PRFLT", _FLOAT, 10.0),
    ParamSpec("COM_HOME_EN", _INT, 1),
    ParamSpec("COM_OBL_RC_ACT", _INT, 0),
    ParamSpec("COM_OF_LOSS_T", _FLOAT, 1.0),
    ParamSpec("COM_RCL_EXCEPT", _INT, 0),
    ParamSpec("COM_RC_OVERRIDE", _INT, 1),
    ParamSpec("COM_RC_STICK_OV", _FLOAT, 30.0),
    ParamSpec("COM_SPOOLUP_TIME", _FLOAT, 1.0),
    # EKF2's dead reckoning without aiding (µs): how long a GNSS cut leaves the estimate
    ParamSpec("EKF2_NOAID_TOUT", _INT, 5_000_000),
    ParamSpec("LNDMC_TRIG_TIME", _FLOAT, 1.0),
    ParamSpec("MAV_FWDEXTSP", _INT, 1),
    ParamSpec("MAV_SYS_ID", _INT, 1),
    ParamSpec("MAV_TYPE", _INT, 2),
    ParamSpec("MIS_TAKEOFF_ALT", _FLOAT, 2.5),
    ParamSpec("MPC_ACC_HOR", _FLOAT, 3.0),
    ParamSpec("MPC_JERK_AUTO", _FLOAT, 4.0),
    ParamSpec("MPC_LAND_ALT1", _FLOAT, 10.0),
    ParamSpec("MPC_LAND_ALT2", _FLOAT, 5.0),
    ParamSpec("MPC_LAND_ALT3", _FLOAT, 1.0),
    ParamSpec("MPC_LAND_CRWL", _FLOAT, 0.3),
    ParamSpec("MPC_LAND_SPEED", _FLOAT, 0.7),
    ParamSpec("MPC_THR_HOVER", _FLOAT, 0.5),
    ParamSpec("MPC_THR_MIN", _FLOAT, 0.12),
    ParamSpec("MPC_TILTMAX_AIR", _FLOAT, 45.0),
    ParamSpec("MPC_TKO_RAMP_T", _FLOAT, 3.0),
    ParamSpec("MPC_TKO_SPEED", _FLOAT, 1.5),
    ParamSpec("MPC_XY_CRUISE", _FLOAT, 5.0),
    ParamSpec("MPC_XY_VEL_MAX", _FLOAT, 12.0),
    ParamSpec("MPC_Z_VEL_I_ACC", _FLOAT, 2.0),
    ParamSpec("MPC_Z_VEL_MAX_DN", _FLOAT, 1.5),
    ParamSpec("MPC_Z_VEL_MAX_UP", _FLOAT, 3.0),
    ParamSpec("MPC_Z_VEL_P_ACC", _FLOAT, 4.0),
    ParamSpec("NAV_ACC_RAD", _FLOAT, 2.0),  # rc.mc_defaults' until v1.18 (px4_versions.py)
    ParamSpec("NAV_DLL_ACT", _INT, 0),
    ParamSpec("NAV_MC_ALT_RAD", _FLOAT, 0.8),
    # PX4's battery simulator (SITL): drained from full over SIM_BAT_DRAIN s while armed,
    # held at SIM_BAT_MIN_PCT, full again once disarmed
    ParamSpec("SIM_BAT_DRAIN", _FLOAT, 60.0),
    ParamSpec("SIM_BAT_MIN_PCT", _FLOAT, 50.0),
    ParamSpec("NAV_RCL_ACT", _INT, 2),
    ParamSpec("RTL_CONE_ANG", _INT, 45),
    ParamSpec("RTL_DESCEND_ALT", _FLOAT, 30.0),
    ParamSpec("RTL_LAND_DELAY", _FLOAT, 0.0),
    ParamSpec("RTL_MIN_DIST", _FLOAT, 10.0),
    ParamSpec("RTL_RETURN_ALT", _FLOAT, 60.0),
    ParamSpec("SYS_AUTOSTART", _INT, 10040),
)


def param_specs(version: Px4Version) -> tuple[ParamSpec, ...]:
    """The parameters `version` has, in PX4's alphabetical index order."""
    changed = dict(version.changed_defaults)
    kept = [ParamSpec(s.name, s.param_type, changed.get(s.name, s.default))
            for s in PARAM_SPECS if s.name not in version.removed_params]  # fmt: skip
    added = [ParamSpec(name, ptype, default) for name, ptype, default in version.added_params]
    return tuple(sorted(kept + added, key=lambda s: s.name))


class ParamTable:
    """Current values, in PX4's alphabetical index order; kept across a reboot."""

    def __init__(self, overrides: Mapping[str, ParamValue] | None, version: Px4Version
                 ) -> None:  # fmt: skip
        specs = param_specs(version)
        self._specs = {s.name: s for s in specs}
        self._names = [s.name for s in specs]
        self._values: dict[str, ParamValue] = {s.name: s.default for s in specs}
        for name, value in (overrides or {}).items():
            if not self.set(name, value):
                raise ValueError(f"unknown parameter {name!r} on PX4 v{version.name}")

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def get(self, name: str) -> ParamValue:
        return self._values[name]

    def get_float(self, name: str) -> float:
        return float(self._values[name])

    def get_int(self, name: str) -> int:
        return int(self._values[name])

    def set(self, name: str, value: ParamValue) -> bool:
        """Store `value` converted to the parameter's type; False if unknown."""
        spec = self._specs.get(name)
        if spec is None:
            return False
        self._values[name] = int(value) if spec.param_type == _INT else float(value)
        return True

    def name_at(self, index: int) -> str | None:
        return self._names[index] if 0 <= index < len(self._names) else None

    def param_type(self, name: str) -> int:
        return self._specs[name].param_type

    def names(self) -> list[str]:
        return list(self._names)

    def param_value_msg(self, name: str) -> Message:
        """PARAM_VALUE for `name`, integers encoded byte-wise as PX4 does."""
        spec = self._specs[name]
        return dialect.MAVLink_param_value_message(
            name.encode("ascii"),
            encode_param_value(self._values[name], spec.param_type),
            spec.param_type,
            len(self._names),
            self._names.index(name),
        )
