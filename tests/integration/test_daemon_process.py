"""The daemon as users run it: `offboardd run --config FILE` in its own process, a real
mosquitto, the built-in sim, and a mission script on `offboardd.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import aiomqtt
import pytest

from offboardd.client import OffboardClient
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.sim import SimConfig, SimServer
from tests.conftest import Broker, free_port
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration


@dataclass
class Deployment:
    sim: SimServer
    daemon: asyncio.subprocess.Process
    broker: Broker
    vehicle_id: str

    def client(self) -> OffboardClient:
        return OffboardClient(self.broker.host, self.broker.port, self.vehicle_id)

    async def wait_for(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate():
            assert loop.time() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def deployment(
    broker: Broker, tmp_path: Path, engine: str = "", extra: str = ""
) -> AsyncIterator[Deployment]:
    port = free_port()
    config = tmp_path / "offboardd.toml"
    config.write_text(
        f'[mavlink]\nurl = "udpin://127.0.0.1:{port}"\n'
        f"[engine]\n{engine}\n"
        f'[mqtt]\nhost = "127.0.0.1"\nport = {broker.port}\nvehicle_id = "t1"\n'
        '[log]\nformat = "json"\n' + extra
    )
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim:
        # logs to a file: a pipe nobody reads would fill and freeze the daemon
        with (tmp_path / "daemon.log").open("wb") as log_file:
            daemon = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "offboardd", "run", "--config", str(config),
                stdout=asyncio.subprocess.DEVNULL, stderr=log_file,
            )
        dep = Deployment(sim, daemon, broker, "t1")
        try:
            yield dep
        finally:
            if daemon.returncode is None:
                daemon.kill()
                await daemon.wait()
        bad = [s for s in sim.record.setpoints if s.verdict != "valid"]
        assert not bad, bad[:3]


async def _fc_ready(c: OffboardClient) -> None:
    await c.wait_for_state(
        lambda s: s.get("com_of_loss_t_s") is not None
        and bool(s.get("estimates", {}).get("local_position")),
        timeout_s=15,
    )


async def test_mission_script_flies_takeoff_leg_and_release(
    mosquitto: Broker, tmp_path: Path
) -> None:
    async with deployment(mosquitto, tmp_path) as dep, dep.client() as c:
        await _fc_ready(c)
        reply = await c.engage(PositionNed(0.0, 0.0, -3.0), arm=True)
        assert reply.ok, reply
        v = dep.sim.vehicle
        await dep.wait_for(lambda: abs(v.position_ned_m[2] + 3.0) < 0.3, 12, "climb")
        await c.setpoint(VelocityNed(1.0, 0.0, 0.0))
        await dep.wait_for(lambda: v.velocity_ned_m_s[0] > 0.7, 5, "velocity leg")
        assert (await c.release()).ok
        assert v.mode_name == "AUTO.LOITER"
        state = await c.wait_for_state(lambda s: s["phase"] == "idle", timeout_s=3)
        assert state["fc_mode"] == "AUTO.LOITER"


async def test_sigterm_while_flying_releases_the_vehicle_then_exits(
    mosquitto: Broker, tmp_path: Path
) -> None:
    async with deployment(mosquitto, tmp_path) as dep, dep.client() as c:
        await _fc_ready(c)
        assert (await c.engage(PositionNed(0.0, 0.0, -2.5), arm=True)).ok
        dep.daemon.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(dep.daemon.wait(), 10)
        assert code == 0
        assert dep.sim.vehicle.mode_name == "AUTO.LOITER", "released to Hold before exiting"
        assert dep.sim.vehicle.armed, "released, not dropped"


async def test_sigkill_leaves_offline_for_subscribers(mosquitto: Broker, tmp_path: Path) -> None:
    async with (
        deployment(mosquitto, tmp_path) as dep,
        aiomqtt.Client("127.0.0.1", mosquitto.port) as sub,
    ):
        await sub.subscribe("offboardd/t1/availability", 1)
        seen: list[str] = []

        async def read() -> None:
            async for message in sub.messages:
                seen.append(bytes(message.payload).decode())
                if seen[-1] == "offline":
                    return

        reader = asyncio.create_task(read())
        await dep.wait_for(lambda: "online" in seen, 10, "online")
        dep.daemon.kill()
        await asyncio.wait_for(reader, 30)  # the broker publishes the last will
        assert seen[-1] == "offline"


async def test_dead_commander_lease_lapses_to_hold_then_land(
    mosquitto: Broker, tmp_path: Path
) -> None:
    engine = 'hold_s = 1.0\ncommand_loss_action = "land"\n'
    async with deployment(mosquitto, tmp_path, engine) as dep:
        async with dep.client() as c:
            await _fc_ready(c)
            assert (await c.engage(PositionNed(0.0, 0.0, -3.0), arm=True)).ok
            v = dep.sim.vehicle
            await dep.wait_for(lambda: abs(v.position_ned_m[2] + 3.0) < 0.4, 12, "climb")
        # the mission script is gone: no heartbeat, no release
        await dep.wait_for(lambda: dep.sim.vehicle.mode_name == "AUTO.LAND", 6, "AUTO.LAND")
