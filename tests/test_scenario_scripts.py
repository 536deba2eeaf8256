"""The PX4 SITL guide's scripts, run as a user would, against the built-in sim laid out
like PX4 SITL: `sitl/run-daemon.sh` starts the daemon, `sitl/fly-scenario.sh` flies the
scenario runner's short mission through a real mosquitto. Ports are free loopback ports
(the config comes from OFFBOARDD_CONFIG), so this runs beside the rest of the suite."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from offboardd.client import OffboardClient
from offboardd.sim import SimConfig, SimServer
from tests.conftest import Broker, free_port
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration
SITL = Path(__file__).resolve().parents[1] / "sitl"


def _config(tmp_path: Path, fc_port: int, broker_port: int, vehicle_id: str) -> Path:
    path = tmp_path / "sitl-test.toml"
    path.write_text(
        f'[mavlink]\nurl = "udpin://127.0.0.1:{fc_port}"\nsigning_timestamp_file = ""\n'
        f'[mqtt]\nhost = "127.0.0.1"\nport = {broker_port}\nvehicle_id = "{vehicle_id}"\n'
        "motion_state_interval_s = 0.1\n"
        '[log]\nformat = "json"\n')
    return path


def _env(config: Path) -> dict[str, str]:
    return {**os.environ, "OFFBOARDD": f"{sys.executable} -m offboardd",
            "OFFBOARDD_CONFIG": str(config)}


def _processes_using(needle: str) -> list[int]:
    """PIDs whose command line mentions `needle` (our temporary config path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if needle in cmdline:
                found.append(int(entry.name))
    return found


@asynccontextmanager
async def run_daemon_script(config: Path, *args: str) -> AsyncIterator[
        asyncio.subprocess.Process]:
    script = await asyncio.create_subprocess_exec(
        "bash", str(SITL / "run-daemon.sh"), *args, env=_env(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        yield script
    finally:
        if script.returncode is None:
            script.send_signal(signal.SIGTERM)
            await asyncio.wait_for(script.wait(), 15)
        for pid in _processes_using(str(config)):  # never leak a daemon into the suite
            os.kill(pid, signal.SIGKILL)


async def test_guide_scripts_run_the_daemon_and_fly_the_scenario(
    mosquitto: Broker, tmp_path: Path
) -> None:
    fc_port = free_port()
    config = _config(tmp_path, fc_port, mosquitto.port, "sitl-ci")
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0),
                           udp_remote=("127.0.0.1", fc_port), gcs_bind=None, profile="light",
                           boot_ready_s=QUICK_BOOT_S)
    summary_path = tmp_path / "summary.json"
    async with SimServer(sim_config) as sim, run_daemon_script(config) as daemon:
        fly = await asyncio.create_subprocess_exec(
            "bash", str(SITL / "fly-scenario.sh"), "--broker", f"127.0.0.1:{mosquitto.port}",
            "--vehicle", "sitl-ci", "--mission", "short", "--json", str(summary_path),
            env=_env(config), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        output, _ = await asyncio.wait_for(fly.communicate(), 90)
        assert fly.returncode == 0, output.decode()
        assert b"mission 'short' completed" in output
        v = sim.vehicle
        assert v.landed and not v.armed, "landed and disarmed at the end"
        assert not [s for s in sim.record.setpoints if s.verdict != "valid"]
        doc = json.loads(summary_path.read_text())
        assert doc["ok"] and [leg["name"] for leg in doc["legs"]] == [
            "takeoff", "square path", "orbit", "velocity east", "release", "land"]
        assert all(leg["ok"] for leg in doc["legs"])
        assert doc["max_tracking_error_m"] < 1.0
        assert len(doc["flown"]) > 40 and len(doc["commanded"]) > 40
        # the flown path is the sim's: the top of the climb and where it landed
        assert max(-d for _, _, _, d in doc["flown"]) == pytest.approx(2.5, abs=0.3)
        _, north_m, east_m, _ = doc["flown"][-1]
        assert north_m == pytest.approx(v.position_ned_m[0], abs=0.2)
        assert east_m == pytest.approx(v.position_ned_m[1], abs=0.2)
        assert east_m > 1.0, "the velocity leg flew east"
        modes = [m.new_mode for m in sim.record.mode_changes]
        after_offboard = modes[modes.index("OFFBOARD"):]
        assert after_offboard[1:3] == ["AUTO.LOITER", "AUTO.LAND"], modes  # release, land

        daemon.send_signal(signal.SIGTERM)  # the script passes it on; the daemon exits clean
        assert await asyncio.wait_for(daemon.wait(), 15) == 0
        assert daemon.stdout is not None
        head = (await daemon.stdout.read()).decode()
        assert "ok (link udpin://127.0.0.1" in head
        assert _processes_using(str(config)) == []


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


async def test_run_daemon_with_broker_starts_and_stops_its_own_mosquitto(
    tmp_path: Path
) -> None:
    broker_port = free_port(socket.SOCK_STREAM)
    config = _config(tmp_path, free_port(), broker_port, "sitl-broker")
    async with run_daemon_script(config, "--with-broker") as script:
        for _ in range(100):
            if _accepts(broker_port):
                break
            await asyncio.sleep(0.1)
        async with OffboardClient("127.0.0.1", broker_port, "sitl-broker") as client:
            # the daemon is up and publishing through the script's broker (no FC here)
            state = await client.wait_for_state(lambda s: "phase" in s, 15)
            assert state["phase"] == "idle" and state["fc_link"] != "up"
        script.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(script.wait(), 15) == 0
    assert not _accepts(broker_port), "the script's mosquitto is stopped with it"
    assert _processes_using(str(config)) == []
