"""SIGTERM while a hand-over is under way (found by review): the daemon used to return at
once, leaving the land or release it was asked for to PX4's offboard-loss action."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import offboardd.sim.commands as sim_commands
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.commands import Land
from offboardd.core.settings import EngineSettings
from offboardd.mavlink.links import parse_link_url
from offboardd.recorder.settings import RecorderSettings, RecordMode
from offboardd.runtime import Runtime
from offboardd.sim import SimConfig, SimServer
from tests.conftest import free_port
from tests.integration.harness import Flight

pytestmark = pytest.mark.integration

MAV_CMD_DO_SET_MODE = 176


async def test_sigterm_during_a_land_sees_the_land_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lose_next_mode_command = False
    handle = sim_commands.handle

    def lossy_radio(vehicle: Any, msg: Any, now_s: float, link_id: Any) -> Any:
        nonlocal lose_next_mode_command
        if (lose_next_mode_command and msg.get_type() == "COMMAND_LONG"
                and msg.command == MAV_CMD_DO_SET_MODE):  # fmt: skip
            lose_next_mode_command = False
            return []
        return handle(vehicle, msg, now_s, link_id)

    monkeypatch.setattr(sim_commands, "handle", lossy_radio)
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light")
    async with SimServer(sim_config) as sim:
        config = DaemonConfig(
            mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{port}")),
            engine=EngineSettings(),
            recorder=RecorderSettings(mode=RecordMode.OFF),
        )
        runtime = Runtime(config, mqtt=False)
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        await asyncio.wait_for(runtime.running.wait(), 5)
        fl = Flight(sim, runtime)
        try:
            await fl.takeoff(-3.0)
            lose_next_mode_command = True
            runtime.submit(Land("land"))
            await fl.wait_for(lambda: fl.phase == "releasing", 1.0, "handing over")
            await asyncio.sleep(0.2)
            assert sim.vehicle.mode_name == "OFFBOARD"  # the first ask was lost
            stop.set()  # what SIGTERM does
            await asyncio.wait_for(task, 15)
        finally:
            fl.drop_lease()
            stop.set()
        assert sim.vehicle.mode_name == "AUTO.LAND", "the land was seen through"
        left_offboard_for = {m.new_mode for m in sim.record.mode_changes
                             if m.old_mode == "OFFBOARD"}
        assert left_offboard_for == {"AUTO.LAND"}, "never PX4's offboard-loss action"
        assert runtime.internal_errors == 0
