"""A plain pymavlink offboard script, written the way users write them.

Flies the px4-offboard.md flow against whatever answers on udpin:127.0.0.1:PORT:
stream setpoints, OFFBOARD, arm, climb, stop streaming (PX4 falls back), resume
(PX4 re-enters OFFBOARD by itself). Prints one line per step; exits 0 on success.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

os.environ.setdefault("MAVLINK20", "1")

from pymavlink import mavutil

OFFBOARD = 6 << 16
port = int(sys.argv[1])
master = mavutil.mavlink_connection(
    f"udpin:127.0.0.1:{port}", source_system=1, source_component=191, dialect="common"
)
master.wait_heartbeat(timeout=10)
print("heartbeat from system", master.target_system, flush=True)

state: dict[str, float] = {"mode": -1, "z": 0.0, "armed": False}


def pump() -> None:
    while True:
        msg = master.recv_match(blocking=False)
        if msg is None:
            return
        if msg.get_type() == "HEARTBEAT" and msg.autopilot == 12:
            state["mode"] = msg.custom_mode
            state["armed"] = bool(msg.base_mode & 128)
        elif msg.get_type() == "LOCAL_POSITION_NED":
            state["z"] = msg.z


def fly(seconds: float, z: float | None, until: Callable[[], bool] | None = None) -> bool:
    """Stream (or not, z=None) for up to `seconds`; stop early when until() is true."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if z is not None:
            master.mav.set_position_target_local_ned_send(
                0, master.target_system, master.target_component,
                mavutil.mavlink.MAV_FRAME_LOCAL_NED, 0b100111111000,
                0, 0, z, 0, 0, 0, 0, 0, 0, 0, 0,
            )
        pump()
        if until is not None and until():
            return True
        time.sleep(0.05)
    return until is None


fly(1.0, -2.0)
master.mav.command_long_send(master.target_system, master.target_component,
                             mavutil.mavlink.MAV_CMD_DO_SET_MODE, 0, 1, 6, 0, 0, 0, 0, 0)
assert fly(3.0, -2.0, lambda: state["mode"] == OFFBOARD), "no OFFBOARD"
print("offboard", flush=True)
master.arducopter_arm()
assert fly(3.0, -2.0, lambda: bool(state["armed"])), "not armed"
print("armed", flush=True)
assert fly(8.0, -2.0, lambda: state["z"] < -1.8), f"no climb: z={state['z']}"
print("climbed to", round(-state["z"], 2), "m", flush=True)
t0 = time.monotonic()
# PX4's loss action: Position on v1.16, Return without RC from v1.17 (px4-offboard.md §7)
assert fly(3.0, None, lambda: state["mode"] not in (OFFBOARD, -1)), "no fallback"
print("fallback to custom_mode", int(state["mode"]), "after", round(time.monotonic() - t0, 2),
      "s", flush=True)
t1 = time.monotonic()
assert fly(3.0, -2.0, lambda: state["mode"] == OFFBOARD), "no automatic re-entry"
print("back in OFFBOARD by itself after", round(time.monotonic() - t1, 2), "s", flush=True)
master.close()
print("OK", flush=True)
