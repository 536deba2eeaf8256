"""PX4's multicopter takeoff handling: spool-up, the climb-rate ramp and its wound-up integral.

What mc_pos_control's takeoff handling (src/modules/mc_pos_control/Takeoff) does to any
altitude-controlled mode (OFFBOARD, AUTO.TAKEOFF, Hold, ...) between arming and flight:
  - spool-up: the motors idle for COM_SPOOLUP_TIME after arming, whatever is asked;
  - ready: idle until the setpoint asks to climb (more than 0.2 m above, or a climb rate
    faster than 0.3 m/s, FlightTask::_checkTakeoff);
  - ramp-up: the upward velocity limit rises linearly over MPC_TKO_RAMP_T from
    -g / MPC_Z_VEL_P_ACC (a *descent* that commands zero thrust) to the mode's climb limit
    (MPC_TKO_RAMP_T 0 skips it). All the while the ground holds the vehicle, the velocity
    controller's integral (MPC_Z_VEL_I_ACC) winds up downwards, so it lifts off well after
    the limit turns upwards and then lags its setpoint until the integral has unwound;
  - flight: until the land detector says landed again (ready, no new spool-up).
AUTO.TAKEOFF's trajectory also limits its climb acceleration to MPC_TKO_SPEED /
MPC_TKO_RAMP_T (FlightTaskAuto::_updateTrajConstraints) from the ramped limit on.

[SITL main, v1.17.0, v1.16.2; defaults] OFFBOARD arm toward 2.5 m: "Takeoff detected"
1.85 s, first climb 2.9-3.0 s; AUTO.TAKEOFF: first climb 3.9-4.0 s. Pure; it owns no
physics (the integral lives in `dynamics`, asked for through `Limits`).
"""

from __future__ import annotations

import enum

from offboardd.sim.dynamics import GRAVITY_M_S2, BodyState

TAKEOFF_MIN_RISE_M = 0.2  # FlightTask::_checkTakeoff: setpoint at least 0.2 m above
TAKEOFF_MIN_CLIMB_M_S = 0.3  # ... or a climb rate faster than 0.3 m/s
# Below this the wound-up integral is taken as unwound and dropped: it would otherwise
# linger for the whole flight (~2 cm of altitude error at the velocity gain of 4).
_INTEGRAL_GONE_M_S2 = 0.1


class Stage(enum.Enum):
    DISARMED = 0
    SPOOLUP = 1
    READY = 2
    RAMPUP = 3
    FLIGHT = 4


class TakeoffRamp:
    """One vehicle's takeoff state; `update` once per physics step."""

    def __init__(self) -> None:
        self.stage = Stage.DISARMED
        self._progress = 0.0
        self._auto_climb_m_s: float | None = None  # AUTO.TAKEOFF's rate-limited climb

    def update(self, dt_s: float, *, armed: bool, since_arming_s: float, landed: bool,
               want_takeoff: bool, spoolup_s: float, ramp_s: float) -> None:  # fmt: skip
        """Advance PX4's takeoff state machine (TakeoffHandling::updateTakeoffState)."""
        if not armed:
            self.stage, self._auto_climb_m_s = Stage.DISARMED, None
            return
        if self.stage is Stage.DISARMED:
            self.stage = Stage.SPOOLUP
        if self.stage is Stage.SPOOLUP and since_arming_s >= spoolup_s:
            self.stage = Stage.READY
        if self.stage is Stage.READY and want_takeoff:
            self.stage, self._progress, self._auto_climb_m_s = Stage.RAMPUP, 0.0, None
        if self.stage is Stage.RAMPUP and self._progress >= 1.0:
            self.stage = Stage.FLIGHT
        if self.stage is Stage.FLIGHT and landed:
            self.stage = Stage.READY
        if self.stage is Stage.RAMPUP:  # after the state, as PX4 does (updateRamp): a
            # ramp of 0 s still gives the land detector one step of climb thrust
            self._progress = self._progress + dt_s / ramp_s if ramp_s > dt_s else 1.0

    def skip(self, *, armed: bool) -> None:
        """Not altitude-controlled (attitude, manual): PX4 treats the vehicle as flying."""
        self.stage = Stage.FLIGHT if armed else Stage.DISARMED

    @property
    def idle(self) -> bool:
        """Motors at idle: spooling up, or armed with no climb asked for yet."""
        return self.stage in (Stage.SPOOLUP, Stage.READY)

    def up_limit_m_s(self, climb_m_s: float, vel_p_acc: float) -> float:
        """The upward velocity limit (negative: a forced descent) for a mode's `climb_m_s`."""
        start_m_s = -GRAVITY_M_S2 / max(vel_p_acc, 0.01)  # zero thrust at rest
        if self.stage is Stage.RAMPUP:
            return start_m_s + self._progress * (climb_m_s - start_m_s)
        return start_m_s if self.idle else climb_m_s

    def auto_climb_m_s(self, demand_m_s: float, limit_m_s: float, accel_m_s2: float,
                       dt_s: float) -> float:  # fmt: skip
        """AUTO.TAKEOFF's climb-rate setpoint: `demand_m_s` reached at `accel_m_s2` at most,
        from rest, never ahead of the ramped `limit_m_s` ([SITL main] the setpoint leaves the
        ramp as it turns upwards and climbs at 0.5 m/s² from there)."""
        prev = 0.0 if self._auto_climb_m_s is None else self._auto_climb_m_s
        climb = min(demand_m_s, max(limit_m_s, 0.0), prev + accel_m_s2 * dt_s)
        self._auto_climb_m_s = climb
        return climb

    def integrating(self, state: BodyState) -> bool:
        """Keep PX4's velocity integral while it shapes the climb: from the ramp's start until
        it has unwound after lift-off (the sim has no disturbance for it to learn later)."""
        if self.stage is Stage.RAMPUP:
            return True
        return self.stage is Stage.FLIGHT and state.z_integral_m_s2 > _INTEGRAL_GONE_M_S2


def wants_takeoff(rise_m: float | None, climb_m_s: float | None, up_acc_m_s2: float | None,
                  *, offboard: bool) -> bool:  # fmt: skip
    """Does the target ask to leave the ground? OFFBOARD (mc_pos_control): any position
    above, climb rate or upward acceleration; the flight tasks (FlightTask::_checkTakeoff):
    a position 0.2 m above or a climb faster than 0.3 m/s."""
    if offboard:
        return any(x is not None and x > 0.0 for x in (rise_m, climb_m_s, up_acc_m_s2))
    return ((rise_m is not None and rise_m > TAKEOFF_MIN_RISE_M)
            or (climb_m_s is not None and climb_m_s > TAKEOFF_MIN_CLIMB_M_S))  # fmt: skip
