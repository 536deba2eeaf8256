"""SIGTERM while a hand-over is under way (found by review): the daemon used to return at
once, leaving the land or release it was asked for to PX4's offboard-loss action."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import offboardd.sim.commands as sim_commands
from offboardd.core.commands import Land
from tests.integration.harness import flight

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
    stop = asyncio.Event()
    async with flight(stop=stop) as fl:
        await fl.takeoff(-3.0)
        lose_next_mode_command = True
        fl.runtime.submit(Land("land"))
        await fl.wait_for(lambda: fl.phase == "releasing", 1.0, "handing over")
        await asyncio.sleep(0.2)
        assert fl.sim.vehicle.mode_name == "OFFBOARD"  # the first ask was lost
        stop.set()  # what SIGTERM does; the daemon must see the land through first
        await fl.wait_for(lambda: fl.sim.vehicle.mode_name == "AUTO.LAND", 5.0, "AUTO.LAND")
        sim = fl.sim
    left_offboard_for = {m.new_mode for m in sim.record.mode_changes if m.old_mode == "OFFBOARD"}
    assert left_offboard_for == {"AUTO.LAND"}, "never PX4's offboard-loss action"
