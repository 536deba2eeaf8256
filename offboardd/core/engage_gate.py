"""What every engage (an engage command, or a goto / path with engage: true) must pass
before anything streams: a PX4 autopilot whose motors are not cut, and the FC checks
(parameters read, offboard forwarding on, a stream fast enough for COM_OF_LOSS_T). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from offboardd.core.reasons import Reason

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine


def engage_blocked(eng: OffboardEngine, command_id: str) -> bool:
    """True after a coded refusal of `command_id`; False: the engage may go on."""
    v = eng.vehicle
    blocker = eng.checks.engage_blocker(
        eng.settings.stream_period_s,
        motor_cut_allowed=eng.settings.allow_motor_cut_loss_action)
    if not v.is_px4:
        blocker = (Reason.FC_NOT_PX4,
                   f"the flight controller is autopilot type {v.autopilot}, not PX4 (12)")
    if v.motors_cut:
        blocker = (Reason.FC_MOTORS_CUT,
                   "PX4 reports flight termination (HEARTBEAT system_status; a termination, "
                   "kill switch or lockdown): no motor runs; after a termination, until "
                   "PX4 reboots")
    if blocker is None:
        return False
    if blocker[0] in (Reason.FWDEXTSP_DISABLED, Reason.STREAM_TOO_SLOW,
                      Reason.LOSS_ACTION_CUTS_MOTORS):
        # PX4 may have changed it without telling (its broadcast is best effort): asked
        # again, so a stale value refuses one engage, not every one. Not on every engage:
        # on a busy link the reads would delay the OFFBOARD request behind them.
        eng.checks.reread_gate()
    eng.out.refuse(command_id, *blocker)
    return True
