"""Fault injection by name: parse `--fault NAME[:ARG]@SECONDS` and apply it to a server.

The effects themselves live in the vehicle model (mode switch, stick takeover,
estimator, global position, terrain, flight termination) and the server (link
pause/drop, reboot); this module only names them so the command line and scheduled
faults in SimConfig share one vocabulary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from offboardd.sim import modes
from offboardd.sim.config import FaultSpec

if TYPE_CHECKING:
    from offboardd.sim.server import SimServer

FAULT_NAMES = {
    "mode": "GCS/pilot mode switch to ARG (e.g. mode:AUTO.LOITER); ends the offboard intent",
    "rc_takeover": "pilot moves the sticks: POSCTL if COM_RC_OVERRIDE (1.16, 1.17) or "
                   "MAN_OVERRIDE_SPD (1.18) allows it",
    "estimator_invalid": "position estimate lost (for ARG seconds, else until estimator_valid)",
    "estimator_valid": "position estimate back",
    "global_invalid": "no global position, the local one kept (an indoor vehicle on vision: "
                      "Hold and Return cannot run, Land can; for ARG seconds, else until "
                      "global_valid)",
    "global_valid": "global position back",
    "terrain_invalid": "terrain estimate lost: the range finder out of range (for ARG seconds, "
                       "else until terrain_valid); frame-11 setpoints are dropped meanwhile",
    "terrain_valid": "terrain estimate back",
    "gps_off": "GNSS cut (for ARG seconds, else until gps_on): no fix at once, the position "
               "estimate lost after EKF2_NOAID_TOUT (5 s), as PX4's",
    "gps_on": "GNSS back: the estimate follows 0.8 s later",
    "link_pause": "stop sending and receiving for ARG seconds (default 3)",
    "link_drop": "stop sending and receiving until link_restore",
    "link_restore": "end a link pause or drop",
    "packet_loss": "lose ARG (0..1) of the frames each way from now on (0 restores)",
    "reboot": "heartbeat gap, then boot: disarmed, boot time from 0, params kept",
    "flight_termination": "a PX4 failsafe terminates the flight (failure detector, a "
                          "geofence or battery Terminate): no motor until a reboot; armed, "
                          "the mode reported stays, HEARTBEAT says FLIGHT_TERMINATION",
}


def parse_fault(text: str) -> FaultSpec:
    """`estimator_invalid@12`, `mode:AUTO.LOITER@5`, `link_pause:2.5@20` -> FaultSpec."""
    body, sep, at = text.rpartition("@")
    if not sep:
        raise ValueError(f"fault {text!r} needs @SECONDS, e.g. estimator_invalid@12")
    try:
        at_s = float(at)
    except ValueError:
        raise ValueError(f"fault {text!r}: {at!r} is not a number of seconds") from None
    name, _, arg = body.partition(":")
    if name not in FAULT_NAMES:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(FAULT_NAMES))}")
    if name == "mode":
        modes.mode_by_name(arg)  # raises with the list of known modes
    elif name in ("estimator_invalid", "global_invalid", "terrain_invalid", "gps_off",
                  "link_pause", "packet_loss") and arg:
        try:
            float(arg)
        except ValueError:
            raise ValueError(f"fault {text!r}: {arg!r} is not a number of seconds") from None
    return FaultSpec(name, at_s, arg)


def _estimate_setters(sim: SimServer) -> dict[str, Callable[[bool], None]]:
    """`<estimate>_invalid[:seconds]` / `<estimate>_valid`, by estimate."""
    return {"estimator": sim.set_estimator_valid, "global": sim.set_global_valid,
            "terrain": sim.set_terrain_valid}


def apply(sim: SimServer, fault: FaultSpec) -> None:
    name, arg = fault.name, fault.arg
    estimate, _, validity = name.rpartition("_")
    setter = _estimate_setters(sim).get(estimate)
    if setter is not None and validity in ("valid", "invalid"):
        setter(validity == "valid")
        if validity == "invalid" and arg:  # back after ARG seconds
            asyncio.get_running_loop().call_later(float(arg), setter, True)
    elif name in ("gps_off", "gps_on"):
        sim.set_gnss(name == "gps_on")
        if name == "gps_off" and arg:
            asyncio.get_running_loop().call_later(float(arg), sim.set_gnss, True)
    elif name == "mode":
        sim.pilot_mode_switch(arg)
    elif name == "rc_takeover":
        sim.rc_takeover()
    elif name == "link_pause":
        sim.pause_link(float(arg) if arg else 3.0)
    elif name == "link_drop":
        sim.drop_link()
    elif name == "link_restore":
        sim.restore_link()
    elif name == "packet_loss":
        sim.set_packet_loss(float(arg) if arg else 0.1)
    elif name == "reboot":
        sim.reboot()
    elif name == "flight_termination":
        sim.flight_termination()

