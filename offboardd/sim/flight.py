"""What each PX4 mode flies, and the land detector.

Turns (reported mode, armed, RC present, the last offboard target) into a target for
`dynamics`: Hold brakes onto the point ahead where PX4 predicts the vehicle stops
(smoothing.StopAhead) and keeps it, Takeoff climbs to MIS_TAKEOFF_ALT
at MPC_TKO_SPEED then hands over to Hold at that altitude, Land descends at MPC_LAND_SPEED
(faster above MPC_LAND_ALT2, crawling below MPC_LAND_ALT3), RTL climbs to its return
altitude, flies to home (where PX4 last set it, home.py; not the local origin) and lands
there (rtl.py), and the manual modes with no RC descend at ~0.6 m/s ([SITL]
px4-offboard.md §3). Every altitude-controlled target goes through PX4's takeoff handling
(`takeoff.py`) first. It must not decide modes: it only reports "takeoff done".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from offboardd.sim import modes
from offboardd.sim.dynamics import BodyState, Limits
from offboardd.sim.modes import FlightMode
from offboardd.sim.params import ParamTable
from offboardd.sim.rtl import Leg, Return
from offboardd.sim.setpoints import AttitudeTarget, KinematicTarget
from offboardd.sim.smoothing import JerkLimited, StopAhead
from offboardd.sim.takeoff import Stage, TakeoffRamp, wants_takeoff

NO_RC_DESCENT_M_S = 0.6  # [SITL] Position fallback without RC sinks at ~0.6 m/s
_AIRBORNE_ALT_M = 0.3
_MAYBE_LANDED_THRUST = 0.1  # MulticopterLandDetector: "10% of throttle range ... hover"
_ACC_UP_M_S2 = 4.0  # MPC_ACC_UP_MAX
_ACC_DOWN_M_S2 = 3.0  # MPC_ACC_DOWN_MAX

Target = KinematicTarget | AttitudeTarget | None


@dataclass(frozen=True)
class Plan:
    target: Target
    limits: Limits
    takeoff_done: bool = False


class FlightTasks:
    def __init__(self) -> None:
        self._anchor_key: tuple[str, bool, bool] | None = None
        self._anchor: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
        self._ground_since_s: float | None = None
        self.ramp = TakeoffRamp()
        self._descent = JerkLimited()
        self._stop: StopAhead | None = None  # Hold's braking, while in Hold
        self._return: Return | None = None  # Return's legs, from its activation

    def plan(self, mode: FlightMode, *, armed: bool, rc_present: bool, estimator_valid: bool,
             offboard: Target, offboard_failsafe: bool, state: BodyState, params: ParamTable,
             takeoff_alt_m: float, dt_s: float = 0.0, since_arming_s: float = 0.0,
             landed: bool = False, home_ned_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
             ) -> Plan:  # fmt: skip
        plan = self._mode_plan(mode, armed=armed, rc_present=rc_present,
                               estimator_valid=estimator_valid, offboard=offboard,
                               offboard_failsafe=offboard_failsafe, state=state, params=params,
                               takeoff_alt_m=takeoff_alt_m, dt_s=dt_s, landed=landed,
                               home_ned_m=home_ned_m)  # fmt: skip
        target = plan.target
        if not isinstance(target, KinematicTarget):  # attitude, or disarmed
            self.ramp.skip(armed=armed)
            return plan
        rise_m = None if target.pos_m[2] is None else state.pos_m[2] - target.pos_m[2]
        climb_m_s = None if target.vel_m_s[2] is None else -target.vel_m_s[2]
        up_acc = None if target.acc_m_s2[2] is None else -target.acc_m_s2[2]
        want = wants_takeoff(rise_m, climb_m_s, up_acc, offboard=mode is modes.OFFBOARD)
        self.ramp.update(dt_s, armed=armed, since_arming_s=since_arming_s, landed=landed,
                         want_takeoff=want,
                         spoolup_s=params.get_float("COM_SPOOLUP_TIME"),
                         ramp_s=params.get_float("MPC_TKO_RAMP_T"))  # fmt: skip
        if self.ramp.idle:  # motors at idle: no thrust whatever is asked
            return Plan(None, plan.limits, plan.takeoff_done)
        lim = plan.limits
        up_m_s = self.ramp.up_limit_m_s(lim.up_m_s, params.get_float("MPC_Z_VEL_P_ACC"))
        i_acc = params.get_float("MPC_Z_VEL_I_ACC") if self.ramp.integrating(state) else 0.0
        # Only offboard setpoints meet PX4's horizontal loops as streamed (horizontal.py);
        # PX4's own modes feed them a smoothed trajectory the sim leaves out.
        flown_as_streamed = mode is modes.OFFBOARD and target is offboard
        limits = Limits(lim.xy_m_s, up_m_s, lim.down_m_s, i_acc,
                        own_trajectory=not flown_as_streamed, xy_planned=lim.xy_planned)
        if mode is modes.TAKEOFF:  # the trajectory's gentle climb (takeoff.py)
            ramp_s = params.get_float("MPC_TKO_RAMP_T")
            tko_m_s = params.get_float("MPC_TKO_SPEED")
            accel = tko_m_s / ramp_s if ramp_s > 0 else float("inf")
            # braking to stop at the altitude at that acceleration, as PX4's trajectory
            # does (math::trajectory::computeMaxSpeedFromDistance, jerk left out)
            left_m = max(0.0, takeoff_alt_m - state.altitude_m)
            demand = min(tko_m_s, math.sqrt(2 * min(accel, _ACC_UP_M_S2) * left_m))
            climb = self.ramp.auto_climb_m_s(demand, up_m_s, accel, dt_s)
            target = KinematicTarget((target.pos_m[0], target.pos_m[1], None),
                                     (None, None, -climb), (None, None, None), target.yaw_rad)
        return Plan(target, limits, plan.takeoff_done)

    def _mode_plan(self, mode: FlightMode, *, armed: bool, rc_present: bool,
                   estimator_valid: bool, offboard: Target, offboard_failsafe: bool,
                   state: BodyState, params: ParamTable, takeoff_alt_m: float,
                   dt_s: float, landed: bool, home_ned_m: tuple[float, float, float]
                   ) -> Plan:  # fmt: skip
        limits = Limits(
            params.get_float("MPC_XY_VEL_MAX"),
            params.get_float("MPC_Z_VEL_MAX_UP"),
            params.get_float("MPC_Z_VEL_MAX_DN"),
        )
        if not armed:
            self._anchor_key = None
            return Plan(None, limits)
        # (what the companion streams moves the anchor in OFFBOARD only: a setpoint turning
        # failsafe in Hold must not restart its braking)
        # (and Land is Descend without the commander's estimate: PX4's own mode, which it
        # leaves for Land from where it is)
        key = (mode.name, mode is modes.OFFBOARD and (offboard_failsafe or offboard is None),
               mode is modes.LAND and not estimator_valid)
        if key != self._anchor_key:  # entering a mode: remember where we are
            after_takeoff = self._anchor_key is not None and self._anchor_key[0] == "AUTO.TAKEOFF"
            self._anchor_key = key
            self._descent = JerkLimited()
            self._return = None
            self._stop = None
            p = state.pos_m
            if after_takeoff and mode is modes.LOITER:
                # PX4 loiters at the takeoff setpoint (setLoiterItemFromCurrentPositionSetpoint)
                self._anchor = (self._anchor[0], self._anchor[1], -takeoff_alt_m, self._anchor[3])
            else:
                self._anchor = (p[0], p[1], p[2], state.yaw_rad)
                if mode is modes.LOITER and not landed:  # ...WithBreaking
                    self._stop = StopAhead((p[0], p[1]), (state.vel_m_s[0], state.vel_m_s[1]),
                                           params.get_float("MPC_JERK_AUTO"),
                                           params.get_float("MPC_ACC_HOR"))  # fmt: skip
                    self._anchor = (*self._stop.stop_ne_m, p[2], state.yaw_rad)
        north, east, down, yaw = self._anchor
        hold = KinematicTarget((north, east, down), (None, None, None), (None, None, None), yaw)
        if self._stop is not None:  # Hold's trajectory, flown by PX4's loops (dynamics.py)
            (n, e), (vn, ve), (an, ae) = self._stop.step(dt_s)
            braking = KinematicTarget((n, e, down), (vn, ve, None), (an, ae, None), yaw)
            return Plan(braking, replace(limits, xy_planned=True))
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
        if mode is modes.TAKEOFF:  # its MPC_TKO_SPEED climb: plan() (the ramp's end is
            # still MPC_Z_VEL_MAX_UP, PX4's 1.2 * MPC_Z_V_AUTO_UP capped to it)
            climb = KinematicTarget((north, east, -takeoff_alt_m), (None, None, None),
                                    (None, None, None), yaw)  # fmt: skip
            # Navigator: a multicopter's takeoff is reached NAV_MC_ALT_RAD below its altitude
            # (half the altitude when that is lower; MissionBlock::is_mission_item_reached...)
            radius_m = params.get_float("NAV_MC_ALT_RAD")
            if 0 < takeoff_alt_m < radius_m:
                radius_m = takeoff_alt_m / 2
            done = state.altitude_m > takeoff_alt_m - radius_m
            return Plan(climb, limits, done)
        if mode is modes.RTL:  # rtl.py: climb, home, land (home where PX4 last set it)
            if self._return is None:
                self._return = Return(state, home_ned_m, params, landed=landed)
            leg = self._return.step(state, home_ned_m, params, dt_s, yaw)
            cruise = Limits(params.get_float("MPC_XY_CRUISE"), limits.up_m_s, limits.down_m_s)
            if self._return.leg is Leg.LAND:  # descending at the land speeds meanwhile
                land = self._land(north, east, yaw, state, params=params,
                                  estimator_valid=estimator_valid, dt_s=dt_s)
                leg = KinematicTarget((leg.pos_m[0], leg.pos_m[1], None),
                                      (leg.vel_m_s[0], leg.vel_m_s[1], land.vel_m_s[2]),
                                      leg.acc_m_s2, yaw)  # fmt: skip
            return Plan(leg, cruise)
        if mode in (modes.LAND, modes.PRECLAND):
            return Plan(self._land(north, east, yaw, state, params=params,
                                   estimator_valid=estimator_valid, dt_s=dt_s), limits)
        return Plan(hold, limits)  # LOITER, MISSION (no mission loaded): hold

    def _land(self, north: float, east: float, yaw: float, state: BodyState, *,
              params: ParamTable, estimator_valid: bool, dt_s: float) -> KinematicTarget:
        # FlightTaskAuto::_prepareLandSetpoints: MPC_LAND_SPEED below MPC_LAND_ALT2,
        # MPC_Z_VEL_MAX_DN above MPC_LAND_ALT1, linear between; MPC_LAND_CRWL below
        # MPC_LAND_ALT3 with a distance sensor, which the SIH quad has ([SITL]: 0.3 m/s
        # from ~0.8 m). PX4 caps MPC_LAND_SPEED at MPC_Z_VEL_MAX_DN.
        fast = params.get_float("MPC_Z_VEL_MAX_DN")
        slow = min(params.get_float("MPC_LAND_SPEED"), fast)
        low_m, high_m = params.get_float("MPC_LAND_ALT2"), params.get_float("MPC_LAND_ALT1")
        high_m = max(high_m, low_m)
        alt = state.altitude_m
        if alt <= low_m:
            speed = slow
        elif alt >= high_m:
            speed = fast
        else:
            speed = slow + (alt - low_m) / (high_m - low_m) * (fast - slow)
        if alt <= params.get_float("MPC_LAND_ALT3"):
            speed = params.get_float("MPC_LAND_CRWL")
        # Blind (PX4's Descend, FlightTaskDescend): no horizontal control at all, level
        # ("stay level to minimize horizontal drift"): the vehicle drifts, it never brakes.
        horizontal = (north, east, None) if estimator_valid else (None, None, None)
        if estimator_valid:  # the land task's jerk-limited trajectory ([SITL main]: 0.7 m/s
            # reached ~0.9 s after AUTO.LAND; MPC_JERK_AUTO, MPC_ACC_DOWN_MAX)
            speed = self._descent.toward(speed, state.vel_m_s[2], dt_s,
                                         params.get_float("MPC_JERK_AUTO"), _ACC_DOWN_M_S2)
        return KinematicTarget(horizontal, (None, None, speed), (None, None, None), yaw)

    def landed(self, state: BodyState, *, armed: bool, was_landed: bool, now_s: float,
               params: ParamTable, settle_s: float) -> bool:  # fmt: skip
        """PX4's land detector, simplified: airborne once the thrust passes "maybe landed"'s
        minimum (MPC_THR_MIN + 10 % of the way to MPC_THR_HOVER: [SITL] "Takeoff detected"
        1.85 s after arming, long before lift-off) or above 0.3 m; landed again after
        `settle_s` (the release's, px4_versions.py: [SITL main] the thrust takes ~1 s to
        wind down to the low-throttle bound, MPC_THR_MIN + 60 % of the way to hover) and
        LNDMC_TRIG_TIME (the detector's three hysteresis stages) on the ground, still."""
        if was_landed or not armed:
            self._ground_since_s = None
            thr_min = params.get_float("MPC_THR_MIN")
            bound = thr_min + (params.get_float("MPC_THR_HOVER") - thr_min) * _MAYBE_LANDED_THRUST
            return not (armed and state.thrust > bound) and state.altitude_m <= _AIRBORNE_ALT_M
        ramping = self.ramp.stage is Stage.RAMPUP  # thrust rising: "maybe landed" is false
        if state.altitude_m > 0.05 or abs(state.vel_m_s[2]) > 0.3 or ramping:
            self._ground_since_s = None
            return False
        if self._ground_since_s is None:
            self._ground_since_s = now_s
        after_s = settle_s + params.get_float("LNDMC_TRIG_TIME")
        return now_s - self._ground_since_s >= after_s
