"""PX4's Return for a multicopter going home (RTL_TYPE 0: RtlDirect, RTL::computeReturnAltitude).

On activation PX4 fixes a return altitude above home: RTL_RETURN_ALT, except near home,
where with RTL_CONE_ANG > 0 it is lower: 2 x the distance within NAV_ACC_RAD, the cone's
`distance / tan(RTL_CONE_ANG)` within RTL_MIN_DIST (at least 2 x NAV_ACC_RAD); never
below where the vehicle flies, never above RTL_RETURN_ALT unless it already flies higher.
Then its legs: climb on the spot to that altitude (when below it: reached NAV_MC_ALT_RAD
short of it), fly to home at it at MPC_XY_CRUISE, and land. The leg home ends NAV_ACC_RAD
from home, so PX4 lands *while still closing on home*, descending at the land speeds
(flight.py) on the way. With RTL_LAND_DELAY not 0 it first descends over home to
RTL_DESCEND_ALT (no lower than the return altitude allows) and waits there that long
(for ever when negative) before it lands.

[SITL main] measured (tests/px4/test_px4_rtl.py, tests/sim/rtl_flight.py): 6 m from home
at 3 m, defaults: climbed on the spot to 11.9 m (2 x 6 m, turned NAV_MC_ALT_RAD short),
left the spot at 8.0 s, on the ground at 21.2 s; 15 m out at 3 m with RTL_RETURN_ALT 15:
to 14.9 m, home at up to 3.9 m/s, 0.5 m lower 6.1 m out, down at 26.6 s; from 25 m (above
it): no climb, down at 26.1 s. NAV_ACC_RAD is the release's (px4_versions.py): 10 m on
release/1.18 and main, 2 m on v1.16-1.17, where near home the cone sets the altitude
([SITL v1.17.0] 6 m out: "7 m above destination") and the landing begins over home.

Pure: no clock but the `dt_s` it is given. Not modelled: rally points, mission landings,
the terrain check, the yaw PX4 turns to (MPC_YAW_MODE), VTOL legs.
"""

from __future__ import annotations

import math
from enum import Enum

from offboardd.sim.dynamics import BodyState
from offboardd.sim.params import ParamTable
from offboardd.sim.setpoints import KinematicTarget
from offboardd.sim.smoothing import JerkLimited, braking_speed_m_s

_ACC_UP_M_S2 = 4.0  # MPC_ACC_UP_MAX
_AT_HOME_M = 0.3  # nearer: hold the point instead of flying toward it
_NONE3 = (None, None, None)


class Leg(Enum):
    CLIMB = "climb"
    HOME = "home"  # to home at the return altitude
    DESCEND = "descend"  # over home to RTL_DESCEND_ALT (RTL_LAND_DELAY not 0)
    WAIT = "wait"  # there, RTL_LAND_DELAY
    LAND = "land"


def return_altitude_m(params: ParamTable, distance_m: float, above_home_m: float) -> float:
    """RTL::computeReturnAltitude for a multicopter, in metres above home."""
    highest = params.get_float("RTL_RETURN_ALT")
    cone_deg = params.get_int("RTL_CONE_ANG")
    if cone_deg <= 0:
        return max(above_home_m, highest)
    acceptance_m = params.get_float("NAV_ACC_RAD")
    alt = highest
    if distance_m <= acceptance_m:
        alt = 2.0 * distance_m
    else:
        if distance_m <= params.get_float("RTL_MIN_DIST"):
            half_angle = math.radians(min(max(cone_deg, 1), 89))
            alt = min(distance_m / math.tan(half_angle), alt)
        alt = max(alt, 2.0 * acceptance_m)
    # math::constrain(alt, where it flies, highest): the lower bound wins
    return above_home_m if alt < above_home_m else min(alt, highest)


class Return:
    """One activation of Return: its altitude fixed at the start, then its legs. `step`
    gives the leg's target; on the land leg its vertical part is left to the caller
    (flight.py's land speeds)."""

    def __init__(self, state: BodyState, home_ned_m: tuple[float, float, float],
                 params: ParamTable, *, landed: bool) -> None:  # fmt: skip
        self._spot = (state.pos_m[0], state.pos_m[1])
        distance = math.hypot(state.pos_m[0] - home_ned_m[0], state.pos_m[1] - home_ned_m[1])
        above_home = home_ned_m[2] - state.pos_m[2]
        self.altitude_m = return_altitude_m(params, distance, above_home)  # above home
        self._delay_s = params.get_float("RTL_LAND_DELAY")
        self._waited_s = 0.0
        self._climb = JerkLimited()
        self._speed = JerkLimited()
        # RtlDirect::getActivationState: landed -> nothing (here: the land leg, on the ground)
        self.leg = Leg.LAND if landed else Leg.CLIMB if above_home < self.altitude_m else Leg.HOME

    def step(self, state: BodyState, home_ned_m: tuple[float, float, float],
             params: ParamTable, dt_s: float, yaw_rad: float) -> KinematicTarget:  # fmt: skip
        self._advance(state, home_ned_m, params, dt_s)
        home_n, home_e, home_d = home_ned_m
        jerk = params.get_float("MPC_JERK_AUTO")
        if self.leg is Leg.CLIMB:  # on the spot, on PX4's braking curve ([SITL main]: 2.0
            # m/s 4.5 m below, 1.0 m/s 2.1 m below, as the curve with MPC_ACC_UP_MAX says)
            left_m = state.pos_m[2] - (home_d - self.altitude_m)
            limit = min(params.get_float("MPC_Z_VEL_MAX_UP"),
                        braking_speed_m_s(left_m, jerk, _ACC_UP_M_S2))  # fmt: skip
            up_m_s = self._climb.toward(limit, -state.vel_m_s[2], dt_s, jerk, _ACC_UP_M_S2)
            return KinematicTarget((*self._spot, None), (None, None, -up_m_s), _NONE3, yaw_rad)
        if self.leg in (Leg.DESCEND, Leg.WAIT):
            loiter_down = home_d - self._loiter_m(params)
            return KinematicTarget((home_n, home_e, loiter_down), _NONE3, _NONE3, yaw_rad)
        down = home_d - self.altitude_m if self.leg is Leg.HOME else None
        gap_n, gap_e = home_n - state.pos_m[0], home_e - state.pos_m[1]
        away = math.hypot(gap_n, gap_e)
        if away < _AT_HOME_M:
            return KinematicTarget((home_n, home_e, down), _NONE3, _NONE3, yaw_rad)
        # PX4's trajectory toward a point it stops at: jerk-limited up to MPC_XY_CRUISE,
        # braking on its curve ([SITL main]: 3.9 m/s at most on a 15 m leg, 2.5 m/s 5.5 m out)
        along = (state.vel_m_s[0] * gap_n + state.vel_m_s[1] * gap_e) / away
        acc_hor = params.get_float("MPC_ACC_HOR")
        limit = min(params.get_float("MPC_XY_CRUISE"),
                    braking_speed_m_s(away, jerk, acc_hor))  # fmt: skip
        speed = self._speed.toward(limit, along, dt_s, jerk, acc_hor)
        return KinematicTarget((None, None, down), (speed * gap_n / away, speed * gap_e / away,
                                                    None), _NONE3, yaw_rad)  # fmt: skip

    def _advance(self, state: BodyState, home_ned_m: tuple[float, float, float],
                 params: ParamTable, dt_s: float) -> None:  # fmt: skip
        home_n, home_e, home_d = home_ned_m
        above_home = home_d - state.pos_m[2]
        alt_rad = params.get_float("NAV_MC_ALT_RAD")
        if self.leg is Leg.CLIMB and above_home >= self.altitude_m - alt_rad:
            self.leg = Leg.HOME
        if self.leg is Leg.HOME:
            away = math.hypot(state.pos_m[0] - home_n, state.pos_m[1] - home_e)
            if away <= params.get_float("NAV_ACC_RAD"):
                self.leg = Leg.DESCEND if abs(self._delay_s) > 1e-6 else Leg.LAND
        if self.leg is Leg.DESCEND and abs(above_home - self._loiter_m(params)) <= alt_rad:
            self.leg = Leg.WAIT
        if self.leg is Leg.WAIT:
            self._waited_s += dt_s
            if self._delay_s > 0 and self._waited_s >= self._delay_s:
                self.leg = Leg.LAND

    def _loiter_m(self, params: ParamTable) -> float:
        """Where RTL_LAND_DELAY waits, above home: RTL_DESCEND_ALT, no higher than it came."""
        return min(params.get_float("RTL_DESCEND_ALT"), self.altitude_m)
