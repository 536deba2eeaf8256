"""A task of the daemon's that fails (a bug, an error it does not handle) ends the daemon
(non-zero: systemd restarts it), but the vehicle is released first, as on a stop. In a
TaskGroup, an MQTT task's UnicodeError (a host name getaddrinfo refused) cancelled the
rest at once: the stream stopped with no hand-back, and PX4 took its offboard-loss
failsafe instead of the release mode (review, 2026-11-29)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

import offboardd.runtime as runtime_module
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.mavlink.links import parse_link_url
from offboardd.sim import SimConfig, SimServer
from tests.conftest import free_port
from tests.integration.harness import Flight, serving
from tests.sim.client import QUICK_BOOT

pytestmark = pytest.mark.integration


class _FailingBridge:
    """Connected at once; its task fails when told to. Publishing goes nowhere."""

    fail: asyncio.Event

    def __init__(self, settings: object, on_command: object, **_: object) -> None:
        self.connected = asyncio.Event()
        self.connected.set()
        _FailingBridge.fail = asyncio.Event()

    async def run(self) -> None:
        await _FailingBridge.fail.wait()
        raise RuntimeError("a bug in the MQTT task")

    def writes_held(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def wants_mavlink(self, name: str) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


async def test_a_failing_mqtt_task_releases_the_vehicle_then_ends_the_daemon(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "MqttBridge", _FailingBridge)
    companion_port = free_port()
    sim_config = SimConfig(  # (laid out as the harness's flight(): mqtt=True here)
        udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", companion_port), gcs_bind=None,
        **{"profile": "light", **QUICK_BOOT},  # type: ignore[arg-type]
    )
    stop = asyncio.Event()
    async with SimServer(sim_config) as sim:
        config = DaemonConfig(mavlink=MavlinkSettings(
            url=parse_link_url(f"udpin://127.0.0.1:{companion_port}")))
        with pytest.raises(RuntimeError, match="a bug in the MQTT task"):
            async with serving(config, mqtt=True, stop=stop) as runtime:
                fl = Flight(sim, runtime)
                await fl.takeoff(-2.0)
                assert sim.vehicle.mode_name == "OFFBOARD"
                _FailingBridge.fail.set()
                await fl.wait_for(lambda: sim.vehicle.mode_name != "OFFBOARD", 5.0,
                                  "the release")
                stop.set()  # (serving: the daemon ended by itself, as this test wants)
                fl.drop_lease()
        assert sim.vehicle.mode_name == "AUTO.LOITER" and sim.vehicle.armed
        # asked for (the release), not PX4's offboard-loss failsafe
        assert [m.cause for m in sim.record.changes_to("AUTO.LOITER")] == ["command"]
