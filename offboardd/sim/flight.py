"""What each PX4 mode flies, and the land detector.

Turns (reported mode, armed, RC present, the last offboard target) into a target for
`dynamics`: Hold keeps the point where it was entered, Takeoff climbs to MIS_TAKEOFF_ALT
at MPC_TKO_SPEED then hands over to Hold, Land descends at MPC_LAND_SPEED, RTL flies home
at the current altitude then lands, and the manual modes with no RC descend at ~0.6 m/s
([SITL] px4-offboard.md §3). It must not decide modes: it only reports "takeoff done".
"""

from __future__ import annotations

from dataclasses import dataclass

from offboardd.sim import modes
from offboardd.sim.dynamics import BodyState, Limits
from offboardd.sim.modes import FlightMode
from offboardd.sim.params import ParamTable
from offboardd.sim.setpoints import AttitudeTarget, KinematicTarget

NO_RC_DESCENT_M_S = 0.6  # [SITL] Position fallback without RC sinks at ~0.6 m/s
RTL_SPEED_M_S = 5.0  # MPC_XY_CRUISE
_LAND_FAST_ALT_M = 10.0  # MPC_LAND_ALT1: above it PX4 descends at MPC_Z_VEL_MAX_DN
_LANDED_AFTER_S = 1.0  # PX4's land detector needs about a second of "no motion"
_AIRBORNE_ALT_M = 0.3

Target = KinematicTarget | AttitudeTarget | None


@dataclass(frozen=True)
class Plan:
    target: Target
    limits: Limits
    takeoff_done: bool = False


class FlightTasks:
    def __init__(self) -> None:
        self._anchor_key: tuple[str, bool] | None = None
        self._anchor: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
        self._ground_since_s: float | None = None

    def plan(self, mode: FlightMode, *, armed: bool, rc_present: bool, estimator_valid: bool,
             offboard: Target, offboard_failsafe: bool, state: BodyState, params: ParamTable,
             takeoff_alt_m: float) -> Plan:  # fmt: skip
        limits = Limits(
            params.get_float("MPC_XY_VEL_MAX"),
            params.get_float("MPC_Z_VEL_MAX_UP"),
            params.get_float("MPC_Z_VEL_MAX_DN"),
        )
        if not armed:
            self._anchor_key = None
            return Plan(None, limits)
        key = (mode.name, offboard_failsafe or offboard is None)
        if key != self._anchor_key:  # entering a mode: remember where we are
            self._anchor_key = key
            p = state.pos_m
            self._anchor = (p[0], p[1], p[2], state.yaw_rad)
        north, east, down, yaw = self._anchor
        hold = KinematicTarget((north, east, down), (None, None, None), (None, None, None), yaw)
        if mode is modes.OFFBOARD:
            return Plan(hold if offboard is None or offboard_failsafe else offboard, limits)
        if mode.needs_manual_control:
            if rc_present:  # sticks centred: the mode holds
                return Plan(hold, limits)
            descend = KinematicTarget(
                (north, east, None) if estimator_valid else (None, None, None),
                (0.0, 0.0, NO_RC_DESCENT_M_S), (None, None, None), yaw,
            )  # fmt: skip
            return Plan(descend, limits)
        if mode is modes.TAKEOFF:
            up = params.get_float("MPC_TKO_SPEED")
            climb = KinematicTarget((north, east, -takeoff_alt_m), (None, None, None),
                                    (None, None, None), yaw)  # fmt: skip
            done = state.altitude_m >= takeoff_alt_m - 0.15
            return Plan(climb, Limits(limits.xy_m_s, up, limits.down_m_s), done)
        if mode is modes.RTL:
            dist = ((state.pos_m[0]) ** 2 + (state.pos_m[1]) ** 2) ** 0.5
            if dist > 0.5:
                home = KinematicTarget((0.0, 0.0, down), (None, None, None),
                                       (None, None, None), yaw)  # fmt: skip
                return Plan(home, Limits(RTL_SPEED_M_S, limits.up_m_s, limits.down_m_s))
            land = self._land(0.0, 0.0, yaw, state, params=params, estimator_valid=estimator_valid)
            return Plan(land, limits)
        if mode in (modes.LAND, modes.PRECLAND):
            return Plan(self._land(north, east, yaw, state, params=params,
                                    estimator_valid=estimator_valid), limits)
        return Plan(hold, limits)  # LOITER, MISSION (no mission loaded): hold

    @staticmethod
    def _land(north: float, east: float, yaw: float, state: BodyState, *, params: ParamTable,
              estimator_valid: bool) -> KinematicTarget:  # fmt: skip
        speed = params.get_float("MPC_LAND_SPEED")
        if state.altitude_m > _LAND_FAST_ALT_M:
            speed = params.get_float("MPC_Z_VEL_MAX_DN")
        # Blind (PX4's Descend, FlightTaskDescend): no horizontal control at all, level
        # ("stay level to minimize horizontal drift"): the vehicle drifts, it never brakes.
        horizontal = (north, east, None) if estimator_valid else (None, None, None)
        return KinematicTarget(horizontal, (None, None, speed), (None, None, None), yaw)

    def landed(self, state: BodyState, *, armed: bool, was_landed: bool, now_s: float) -> bool:
        """PX4's land detector, simplified: airborne above 0.3 m; landed again after about
        a second on the ground without vertical motion."""
        if was_landed or not armed:
            self._ground_since_s = None
            return state.altitude_m <= _AIRBORNE_ALT_M
        if state.altitude_m > 0.05 or abs(state.vel_m_s[2]) > 0.3:
            self._ground_since_s = None
            return False
        if self._ground_since_s is None:
            self._ground_since_s = now_s
        return now_s - self._ground_since_s >= _LANDED_AFTER_S
