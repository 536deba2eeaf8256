"""What every engage (an engage command, or a goto / path with engage: true) must pass
before anything streams: a PX4 autopilot, and the FC checks (parameters read, offboard
forwarding on, a stream fast enough for COM_OF_LOSS_T). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from offboardd.core.reasons import Reason

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine


def engage_blocked(eng: OffboardEngine, command_id: str) -> bool:
    """True after a coded refusal of `command_id`; False: the engage may go on."""
    v = eng.vehicle
    eng.checks.reread_gate()  # what a missed broadcast left stale is fresh by the warm-up end
    blocker = eng.checks.engage_blocker(eng.settings.stream_period_s)
    if not v.is_px4:
        blocker = (Reason.FC_NOT_PX4,
                   f"the flight controller is autopilot type {v.autopilot}, not PX4 (12)")
    if blocker is None:
        return False
    eng.out.refuse(command_id, *blocker)
    return True
