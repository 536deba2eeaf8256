"""The scenario runner against the real thing: `offboardd run` as a process, a real
mosquitto and the built-in sim, over MQTT only (as it would fly real PX4). Its failure
paths are here; a whole mission through `offboardd scenario` is flown by the SITL
guide's scripts in test_scenario_scripts.py.

The deployment fixture comes from the daemon-process tests: on the way out it asserts that
the daemon never sent a setpoint PX4 would drop or fail safe on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from offboardd.scenario import ScenarioRunner
from offboardd.scenario.mission import GotoLeg, LandLeg, Mission, TakeoffLeg, VelocityLeg
from offboardd.scenario.report import Progress
from tests.conftest import Broker
from tests.integration.test_daemon_process import deployment

pytestmark = pytest.mark.integration


async def test_a_leg_that_times_out_fails_the_mission_and_lands(
    mosquitto: Broker, tmp_path: Path
) -> None:
    mission = Mission("too far", (
        TakeoffLeg("takeoff", 2.0, tolerance_m=0.5),
        GotoLeg("far away", (60.0, 0.0, -2.0), timeout_s=1.0),
        LandLeg(),
    ))
    async with deployment(mosquitto, tmp_path) as dep, dep.client() as c:
        summary = await ScenarioRunner(c, mission).run()
        assert not summary.ok and "not within" in (summary.failure or "")
        assert [(leg.name, leg.ok) for leg in summary.legs] == [
            ("takeoff", True), ("far away", False)]
        assert dep.sim.vehicle.mode_name == "AUTO.LAND", "a failed mission asks for a landing"


async def test_a_pilot_taking_over_ends_the_mission_without_a_landing_request(
    mosquitto: Broker, tmp_path: Path
) -> None:
    mission = Mission("drift", (
        TakeoffLeg("takeoff", 2.0, tolerance_m=0.5),
        VelocityLeg("drift", (0.3, 0.0, 0.0), duration_s=15.0),
        LandLeg(),
    ))
    async with deployment(mosquitto, tmp_path) as dep, dep.client() as c:
        switched: list[float] = []

        def on_progress(p: Progress) -> None:
            if p.leg_name == "drift" and p.fraction > 0.05 and not switched:
                switched.append(p.elapsed_s)
                dep.sim.pilot_mode_switch("AUTO.LOITER")  # a GCS/pilot takes the vehicle

        summary = await asyncio.wait_for(ScenarioRunner(c, mission, on_progress=on_progress)
                                         .run(), 30)
        assert switched and not summary.ok, summary.lines()
        assert "preempted" in (summary.failure or ""), summary.failure
        assert summary.legs[-1].name == "drift" and summary.legs[-1].duration_s < 10
        await asyncio.sleep(0.5)
        assert dep.sim.vehicle.mode_name == "AUTO.LOITER", "the pilot's choice stands"
        assert dep.sim.vehicle.armed
