"""Best-effort diagnosis when PX4 refuses a mode or arming without a reason we can read.

PX4 explains refusals in MAVLink EVENTs (and STATUSTEXT only to GCS links, §4), so a
companion usually gets a bare COMMAND_ACK. This turns what we know (stream freshness,
estimate validity, armed/landed state, the ACK result) into one readable sentence. Pure.
"""

from __future__ import annotations

from offboardd.core.events import AckResult
from offboardd.core.modes import mode_name
from offboardd.core.setpoints import Setpoint
from offboardd.core.stream import StreamClock
from offboardd.core.vehicle import VehicleState


def ack_name(result: int | None) -> str:
    if result is None:
        return "no refusal ACK"
    try:
        return AckResult(result).name
    except ValueError:
        return f"result {result}"


def diagnose(
    vehicle: VehicleState,
    stream: StreamClock,
    setpoint: Setpoint | None,
    *,
    last_ack: int | None,
    now: float,
    stale_after_s: float,
) -> str:
    parts = [f"PX4 answered {ack_name(last_ack)}"]
    since = stream.since_last_send_s(now)
    if not stream.running or since is None:
        parts.append("we were not streaming setpoints")
    elif since > stale_after_s:
        parts.append(f"the stream was stale (last setpoint {since:.2f} s ago)")
    else:
        parts.append(f"the stream was fresh ({stream.achieved_rate_hz(now):.1f} Hz)")
    if setpoint is not None:
        need = setpoint.estimate
        if vehicle.estimate_valid(need, now):
            parts.append(f"the {need.value} estimate {setpoint.kind.value} needs was valid")
        else:
            parts.append(f"the {need.value} estimate {setpoint.kind.value} needs was NOT valid")
    parts.append("vehicle armed" if vehicle.armed else "vehicle disarmed")
    parts.append(f"landed state {vehicle.landed_state.name.lower()}")
    parts.append(f"FC mode {mode_name(vehicle.custom_mode)}")
    return "; ".join(parts)
