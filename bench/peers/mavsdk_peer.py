"""MAVSDK (the `mavsdk` package: its C++ core in-process through ctypes) holding an
offboard hover, the way its examples do: wait for the vehicle's health (a position and
home; and armable, or PX4 refuses the arm while it boots), set a setpoint, start
Offboard, arm.

`python -m bench.peers.mavsdk_peer PORT`: listens on udpin://127.0.0.1:PORT, prints
`engaged` once armed in OFFBOARD, then keeps streaming (MAVSDK's fixed 20 Hz) until
SIGTERM. The benchmark measures this whole process.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from mavsdk import ComponentType, Configuration
from mavsdk.asyncio import Mavsdk
from mavsdk.asyncio.plugins.action import ActionAsync
from mavsdk.asyncio.plugins.offboard import OffboardAsync, PositionNedYaw
from mavsdk.asyncio.plugins.telemetry import TelemetryAsync

_HOVER_DOWN_M = -3.0


async def hover(port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    config = Configuration.create_with_component_type(ComponentType.COMPANION_COMPUTER)
    async with Mavsdk(config) as mavsdk:
        await mavsdk.add_any_connection(f"udpin://127.0.0.1:{port}")
        system = await mavsdk.first_autopilot(timeout_s=15.0)
        if system is None:
            raise SystemExit("mavsdk_peer: no autopilot")
        offboard, action = OffboardAsync(system), ActionAsync(system)
        telemetry = TelemetryAsync(system)
        async for health in telemetry.subscribe_health():
            if (health.is_global_position_ok and health.is_home_position_ok
                    and health.is_armable):
                break
        await offboard.set_position_ned(PositionNedYaw(0.0, 0.0, _HOVER_DOWN_M, 0.0))
        await offboard.start()
        await action.arm()
        async for armed in telemetry.subscribe_armed():
            if armed:
                break
        print("engaged", flush=True)
        await stop.wait()


def main() -> int:
    asyncio.run(hover(int(sys.argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
