"""MAVSDK (the `mavsdk` package, the native binding) connects, arms and flies an offboard
hover against the sim, as users do before they ever touch PX4."""

from __future__ import annotations

import asyncio

from mavsdk import ComponentType, Configuration
from mavsdk.asyncio import Mavsdk
from mavsdk.asyncio.plugins.action import ActionAsync
from mavsdk.asyncio.plugins.offboard import OffboardAsync, PositionNedYaw
from mavsdk.asyncio.plugins.telemetry import TelemetryAsync

from offboardd.sim import SimServer
from tests.conftest import free_port
from tests.sim.client import sim_config


async def test_mavsdk_connects_arms_and_flies_an_offboard_hover() -> None:
    port = free_port()
    async with SimServer(sim_config(udp_remote=("127.0.0.1", port))) as sim:
        config = Configuration.create_with_component_type(ComponentType.COMPANION_COMPUTER)
        async with Mavsdk(config) as mavsdk:
            await mavsdk.add_any_connection(f"udpin://127.0.0.1:{port}")
            system = await mavsdk.first_autopilot(timeout_s=10.0)
            assert system is not None
            offboard, action = OffboardAsync(system), ActionAsync(system)
            telemetry = TelemetryAsync(system)
            await offboard.set_position_ned(PositionNedYaw(0.0, 0.0, -3.0, 0.0))
            await offboard.start()
            await action.arm()
            assert await sim.wait_until(lambda: abs(sim.vehicle.position_ned_m[2] + 3) < 0.2, 10)
            await asyncio.sleep(1.0)  # hover
            assert abs(sim.vehicle.position_ned_m[2] + 3) < 0.2
            assert sim.vehicle.mode_name == "OFFBOARD" and sim.vehicle.armed
            assert await telemetry.armed()
            await offboard.stop()  # MAVSDK's stop() asks for Hold
            assert await sim.wait_until(lambda: sim.vehicle.mode_name == "AUTO.LOITER", 3)
        verdicts = {s.verdict for s in sim.record.setpoints}
        assert verdicts == {"valid"}  # MAVSDK's masks are all valid for PX4
