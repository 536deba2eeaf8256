"""A minimal hand-written pymavlink offboard loop, as users write them (mavutil, 20 Hz).

`python -m bench.peers.pymavlink_peer PORT`: listens on udpin:127.0.0.1:PORT; each turn
reads everything pending, sends one SET_POSITION_TARGET_LOCAL_NED, then sleeps the period
(the usual `time.sleep(0.05)`, so its own work stretches the period, as in most scripts).
After 1 s of streaming it asks for OFFBOARD and arms; prints `engaged` once the heartbeat
shows both; stops on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import time

os.environ.setdefault("MAVLINK20", "1")

from pymavlink import mavutil

_PERIOD_S = 0.05
_OFFBOARD = 6 << 16  # PX4 main mode 6 (px4_custom_mode.h)
_POSITION_ONLY = 0b100111111000  # ignore velocity, acceleration, yaw rate
_WARMUP_S = 1.0  # PX4 wants setpoints before OFFBOARD (px4-offboard.md §1)


def main() -> int:
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    master = mavutil.mavlink_connection(f"udpin:127.0.0.1:{sys.argv[1]}", source_system=1,
                                        source_component=191, dialect="common")  # fmt: skip
    master.wait_heartbeat(timeout=15)
    mode, armed, announced = -1, False, False
    start = time.monotonic()
    asked_s = start  # first ask after the warm-up, then again each second until engaged
    while not stop[0]:
        while (msg := master.recv_match(blocking=False)) is not None:
            if msg.get_type() == "HEARTBEAT" and msg.autopilot == 12:
                mode, armed = msg.custom_mode, bool(msg.base_mode & 128)
        master.mav.set_position_target_local_ned_send(
            0, master.target_system, master.target_component,
            mavutil.mavlink.MAV_FRAME_LOCAL_NED, _POSITION_ONLY,
            0, 0, -3.0, 0, 0, 0, 0, 0, 0, 0, 0,
        )  # fmt: skip
        now = time.monotonic()
        if not announced and now - asked_s > _WARMUP_S:
            master.mav.command_long_send(master.target_system, master.target_component,
                                         mavutil.mavlink.MAV_CMD_DO_SET_MODE, 0, 1, 6,
                                         0, 0, 0, 0, 0)  # fmt: skip
            master.arducopter_arm()
            asked_s = now
        if not announced and armed and mode & 0x00FF0000 == _OFFBOARD:
            print("engaged", flush=True)
            announced = True
        time.sleep(_PERIOD_S)
    master.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
