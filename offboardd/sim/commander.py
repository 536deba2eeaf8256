"""PX4 commander rules: user intent, reported mode, arming, offboard availability and loss.

Models px4-offboard.md §3 and §4: the user's intended mode versus the mode PX4 runs
(`nav_state`); offboard availability checked every ~100 ms and at once when a sample
arrives; fallback to the COM_OBL_RC_ACT mode at about COM_OF_LOSS_T + 0.03 s (from v1.17
NAV_RCL_ACT's when that mode is a manual one and there is no RC, PX4-Autopilot#26391;
the release is a `Px4Version`); automatic
return to OFFBOARD 20-40 ms after valid setpoints resume while the intent is still
OFFBOARD; failsafe only while armed; auto-disarm after landing and the "mode after
disarming" restore. Pure: time comes in as `now_s`; it must not build MAVLink messages,
fly the vehicle or read parameters other than through the table it is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from offboardd.sim import modes
from offboardd.sim.modes import FlightMode, MotorCut
from offboardd.sim.params import ParamTable
from offboardd.sim.px4_versions import Px4Version

CHECK_PERIOD_S = 0.1  # commander's offboard check cadence (10 Hz)
LOSS_MARGIN_S = 0.03  # [SITL] threshold ~1.03 s at COM_OF_LOSS_T = 1.0
RESUME_DELAY_S = 0.03  # [SITL] back in OFFBOARD 20-40 ms after the first valid setpoint
# A position estimate that came back counts for the commander's modes and failsafes only
# after this long without a failed check (PX4's EstimatorChecks::checkPosVelValidity, a
# probation of 1 s); a lost one counts at once. [SITL main 2026-11-29] after a GNSS cut,
# PX4 left Descend for Return ~1.1 s after ESTIMATOR_STATUS said the estimate was back.
POSITION_PROBATION_S = 1.0
# A NAV_RCL_ACT value the release does not know, when v1.17+ asks for it on an offboard
# loss without RC: unmeasured; the sim lands, as v1.16's unflyable Position did in effect.
# (0 Disabled is measured: no failsafe, px4_versions.py.)
RC_LOSS_ACTION_UNKNOWN = modes.LAND


@dataclass(frozen=True)
class Notice:
    """Something the vehicle must tell the world and the record."""

    kind: str  # "mode" | "intent" | "text" | "armed"
    time_s: float
    old_mode: str = ""
    new_mode: str = ""
    cause: str = ""
    severity: int = 6
    text: str = ""


class Commander:
    def __init__(self, params: ParamTable, boot_mode: FlightMode, now_s: float,
                 px4: Px4Version) -> None:  # fmt: skip
        self._params = params
        self._px4 = px4
        self.boot_mode = boot_mode
        self.notices: list[Notice] = []
        self.reset(now_s)

    def reset(self, now_s: float) -> None:
        """Power-on state (also after a reboot)."""
        self.intent: FlightMode = self.boot_mode
        self.mode: FlightMode = self.boot_mode
        self.armed = False
        self.armed_at_s = -math.inf
        self.flew_since_arming = False
        self.landed = True
        self.landed_since_s = now_s
        self.failsafe = False
        self.terminated = False  # flight termination: no motor runs until a reboot
        self.rc_present = False
        self.estimator_valid = True  # EKF2's horizontal position (ESTIMATOR_STATUS)
        # what the commander makes of it: valid again only after POSITION_PROBATION_S
        self.position_valid = True
        self._estimate_failed_s = -math.inf
        # A global position (GNSS, or an origin set): none indoors on vision alone, where
        # the local estimate stays valid
        self.global_valid = True
        # EKF2's terrain estimate (SIH's range finder): ESTIMATOR_STATUS POS_VERT_AGL, and
        # what SET_POSITION_TARGET_GLOBAL_INT in frame 11 needs
        self.terrain_valid = True
        self.last_valid_setpoint_s = -math.inf
        self.setpoint_uses_position = False
        self.setpoint_uses_velocity = False
        self._offboard_ok = False
        self._next_check_s = now_s
        self._resume_at_s: float | None = None
        self._mode_after_disarming: FlightMode = self.boot_mode

    # ---- availability -------------------------------------------------------
    def offboard_signal_ok(self, now_s: float) -> bool:
        """PX4's offboard availability right now (flags, timeout, estimate)."""
        timeout_s = self._params.get_float("COM_OF_LOSS_T") + LOSS_MARGIN_S
        if now_s >= self.last_valid_setpoint_s + timeout_s:
            return False
        needs_estimate = self.setpoint_uses_position or self.setpoint_uses_velocity
        return self.position_valid or not needs_estimate

    def can_run(self, mode: FlightMode) -> bool:
        if mode is modes.OFFBOARD:
            return self._offboard_ok
        if mode is modes.MISSION:
            # No mission is ever loaded here. [SITL main] in AUTO.MISSION without one,
            # disarmed: arming TEMPORARILY_REJECTED ("Resolve system health failures
            # first"), HEARTBEAT system_status UNINIT.
            return False
        if mode.needs_manual_control and not self.rc_present:
            return False
        return self._has_position_for(mode)

    def _has_position_for(self, mode: FlightMode) -> bool:
        if mode.needs_position and not self.position_valid:
            return False
        return not (mode.needs_global and not self.global_valid)

    # ---- inputs -------------------------------------------------------------
    def on_valid_setpoint(self, now_s: float, *, uses_position: bool, uses_velocity: bool) -> None:
        self.last_valid_setpoint_s = now_s
        self.setpoint_uses_position = uses_position
        self.setpoint_uses_velocity = uses_velocity
        if not self._offboard_ok:  # evaluated at once when a sample arrives after a loss
            self._offboard_ok = self.offboard_signal_ok(now_s)
            if self._offboard_ok and self.failsafe and self.intent is modes.OFFBOARD:
                self._resume_at_s = now_s + RESUME_DELAY_S

    def request_mode(self, mode: FlightMode, now_s: float, cause: str) -> bool:
        """A user/GCS mode change: disarmed always accepted; armed only if it can run, but
        Land always: PX4 forces it (Commander::handle_command, DO_SET_MODE AUTO.LAND and
        NAV_LAND, "always allow to switch into it such that if used as emergency mode it is
        always available"; v1.16 to main), descending blind (Descend) without a position."""
        if self.terminated:  # "never allow to change out of termination state"
            return False
        if mode is modes.TERMINATION:
            return self.terminate(now_s, cause)
        if mode is modes.OFFBOARD:
            self._offboard_ok = self.offboard_signal_ok(now_s)
        if self.armed and not self.can_run(mode) and mode is not modes.LAND:
            return False
        self._set_intent(mode, now_s)
        self._update_mode(now_s, cause)
        return True

    def arm(self, now_s: float) -> bool:
        if self.armed:
            return True
        if self.terminated:  # "Preflight Fail: Flight termination active"
            return False
        if self.intent is modes.OFFBOARD:
            self._offboard_ok = self.offboard_signal_ok(now_s)
        if not (self.intent.allows_arming and self.can_run(self.intent)):
            return False
        self.armed, self.armed_at_s, self.flew_since_arming = True, now_s, False
        self.notices.append(Notice("armed", now_s, cause="armed"))
        self._update_mode(now_s, "armed")
        return True

    def terminate(self, now_s: float, cause: str) -> bool:
        """MAV_CMD_DO_FLIGHTTERMINATION (or a GCS's switch to TERMINATION): armed only;
        the intended mode, so the reported one, becomes TERMINATION."""
        if not self.armed:
            return False
        self._set_intent(modes.TERMINATION, now_s)
        self.change_mode(modes.TERMINATION, now_s, cause)
        self.terminated = True
        return True

    def failsafe_terminate(self, now_s: float) -> None:
        """A failsafe's Terminate (COM_OBL_RC_ACT 6, the failure detector, a geofence or
        battery action): armed still, no motor; the mode reported stays (v1.18+) or is
        TERMINATION, the intent kept (modes.MotorCut, Px4Version.termination_as_mode)."""
        if self.armed and not self.terminated:
            self.terminated = self.failsafe = True
            self.notices.append(Notice("text", now_s, severity=2, text="Failsafe activated"))
            if self._px4.termination_as_mode:
                self.change_mode(modes.TERMINATION, now_s, "failsafe")

    def disarm(self, now_s: float, cause: str, *, forced: bool = False) -> bool:
        if not self.armed:
            return True
        if not (self.landed or forced):
            return False
        self.armed, self.failsafe, self._resume_at_s = False, False, None
        self.notices.append(Notice("armed", now_s, cause=f"disarmed: {cause}"))
        if not self.intent.allows_arming:  # PX4 restores the last mode that allows arming
            self._set_intent(self._mode_after_disarming, now_s)
        self._update_mode(now_s, "disarmed")
        return True

    def set_landed(self, landed: bool, now_s: float) -> None:
        if landed != self.landed:
            self.landed, self.landed_since_s = landed, now_s
        if not landed and self.armed:
            self.flew_since_arming = True

    def _set_intent(self, mode: FlightMode, now_s: float) -> None:
        if not mode.allows_arming and self.intent.allows_arming:
            self._mode_after_disarming = self.intent
        if mode is not self.intent:  # CURRENT_MODE carries the intent: PX4 reports it
            self.notices.append(Notice("intent", now_s, self.intent.name, mode.name))
        self.intent = mode
        self._resume_at_s = None

    # ---- time ---------------------------------------------------------------
    def step(self, now_s: float) -> None:
        self._judge_position(now_s)
        if now_s >= self._next_check_s:
            self._next_check_s += CHECK_PERIOD_S * max(
                1, math.ceil((now_s - self._next_check_s) / CHECK_PERIOD_S + 1e-9)
            )
            self._offboard_ok = self.offboard_signal_ok(now_s)
        if self.armed and self.landed:
            since_s = now_s - max(self.landed_since_s, self.armed_at_s)
            if self.flew_since_arming:
                limit_s = self._params.get_float("COM_DISARM_LAND")  # auto-disarm after landing
            else:
                limit_s = self._params.get_float("COM_DISARM_PRFLT")  # armed, never took off
            if limit_s > 0 and since_s >= limit_s:
                self.disarm(now_s, "auto disarm after landing" if self.flew_since_arming
                            else "auto disarm, no takeoff")  # fmt: skip
                return
        self._update_mode(now_s, "failsafe")

    def _judge_position(self, now_s: float) -> None:
        if not self.estimator_valid:
            self._estimate_failed_s, self.position_valid = now_s, False
        elif not self.position_valid and now_s >= self._estimate_failed_s + POSITION_PROBATION_S:
            self.position_valid = True

    def _update_mode(self, now_s: float, cause: str) -> None:
        if self.terminated:  # "Terminate never clears" (PX4's failsafe framework)
            return
        new_mode, failsafe = self.intent, False
        if self.armed and not self.can_run(self.intent):
            fallback = self._fallback_mode(now_s)
            if fallback is MotorCut.DISARM:
                self.disarm(now_s, "offboard loss action", forced=True)
                return
            if fallback is MotorCut.TERMINATE:
                self.failsafe_terminate(now_s)
                return
            if fallback is not self.intent:  # (OFFBOARD: no action, px4_versions.py)
                failsafe, self._resume_at_s = True, None
                new_mode = fallback
        elif self.failsafe and self._resume_at_s is not None:
            if now_s < self._resume_at_s:  # leaving the failsafe takes 20-40 ms on PX4
                return
            cause = "offboard resumed"
        if failsafe and not self.failsafe:
            self.notices.append(Notice("text", now_s, severity=2, text="Failsafe activated"))
        if not failsafe:
            self._resume_at_s = None
        self.failsafe = failsafe
        self.change_mode(new_mode, now_s, cause)

    def _fallback_mode(self, now_s: float) -> FlightMode | MotorCut:
        fallback: FlightMode | MotorCut = modes.LAND
        if self.intent is modes.OFFBOARD:
            action = self._params.get_int("COM_OBL_RC_ACT")
            fallback = modes.OFFBOARD_LOSS_ACTIONS.get(action, modes.POSCTL)
            if (isinstance(fallback, FlightMode) and fallback.needs_manual_control
                    and not self.rc_present and self._px4.manual_loss_action_needs_rc):
                fallback = self._rc_loss_action()
        if isinstance(fallback, MotorCut):
            return fallback
        # Without a position estimate PX4 cannot Hold, Return or Land: it descends blind
        # (Descend, which it reports as AUTO.LAND). Without a global one Hold and Return
        # fall through to Land (the failsafe framework's order: Hold, RTL, Land, Descend).
        if not self._has_position_for(fallback):
            return modes.LAND
        return fallback

    def _rc_loss_action(self) -> FlightMode | MotorCut:
        """NAV_RCL_ACT as a mode or a motor cut (#26391, v1.17+)."""
        name = dict(self._px4.rc_loss_actions).get(self._params.get_int("NAV_RCL_ACT"))
        if name is None:
            return RC_LOSS_ACTION_UNKNOWN
        if name in MotorCut.__members__:
            return MotorCut[name]
        return modes.mode_by_name(name)

    def change_mode(self, mode: FlightMode, now_s: float, cause: str) -> None:
        if mode is not self.mode:
            old, self.mode = self.mode, mode
            self.notices.append(Notice("mode", now_s, old.name, mode.name, cause))

    def complete_auto_mode(self, mode: FlightMode, now_s: float, cause: str) -> None:
        """Navigator finished a mode (takeoff done -> Hold); PX4 updates the intent too."""
        self._set_intent(mode, now_s)
        self._update_mode(now_s, cause)
