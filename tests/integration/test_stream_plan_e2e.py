"""The stream plan end to end (issue 18): the daemon (config as a file would give it)
against the built-in sim with PX4's onboard load; the sim applies SET_MESSAGE_INTERVAL per
link, as PX4 does, so the daemon's link carries only what it asked for while the GCS link
keeps PX4's defaults; a reboot is planned again; plan "px4" leaves everything alone."""

from __future__ import annotations

import asyncio
import sys

import pytest

from offboardd.config import config_from_dict
from offboardd.sim import SimConfig, SimServer
from offboardd.sim.streams import PROFILES
from tests.conftest import free_port
from tests.integration.harness import serving
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration


def _config(port: int, plan: str) -> dict[str, object]:
    return {"mavlink": {"url": f"udpin://127.0.0.1:{port}", "signing_timestamp_file": "",
                        "streams": {"plan": plan}},
            "log": {"level": "warning"}}


async def _until(predicate: object, timeout_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_the_daemons_link_carries_only_what_it_asked_for() -> None:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=("127.0.0.1", 0), profile="px4", boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim, serving(
            config_from_dict(_config(port, "minimal"), {}), mqtt=False) as runtime:
        engine = runtime.engine
        assert engine is not None
        rows = engine.streams.rows
        await _until(lambda: len(engine.streams.applied) + len(engine.streams.refused)
                     == len(rows), 15)
        udp = sim.link("udp").streams.rates_hz
        total_before = sum(PROFILES["px4"].values())
        total_after = sum(udp.values())
        assert total_after < total_before / 4, (total_before, total_after)
        for row in rows:
            if row.rate_hz == 0:
                assert row.name not in udp
            elif row.name in PROFILES["px4"]:
                assert udp[row.name] == pytest.approx(row.rate_hz, rel=0.01)
        assert sim.link("gcs").streams.rates_hz == PROFILES["gcs"]  # the GCS's link: untouched
        assert engine.streams.refused == {}
        # a reboot: PX4's defaults again, and the daemon asks again
        sim.reboot()
        await _until(lambda: sum(sim.link("udp").streams.rates_hz.values()) > total_before / 2, 10)
        await _until(lambda: sum(sim.link("udp").streams.rates_hz.values()) < total_before / 4, 20)


async def test_plan_px4_leaves_pxs_streams_alone() -> None:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="px4", boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim, serving(
            config_from_dict(_config(port, "px4"), {}), mqtt=False) as runtime:
        assert runtime.engine is not None and runtime.engine.streams.rows == ()
        await asyncio.sleep(2.0)
        rates = dict(sim.link("udp").streams.rates_hz)
        rates.pop("CURRENT_MODE", None)  # the connect checks' own request
        assert rates == PROFILES["px4"]


async def test_restore_on_exit_gives_the_link_back_its_default_rates() -> None:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="px4", boot_ready_s=QUICK_BOOT_S)
    config = _config(port, "minimal")
    config["mavlink"]["streams"]["restore_on_exit"] = True  # type: ignore[index]
    async with SimServer(sim_config) as sim:
        async with serving(config_from_dict(config, {}), mqtt=False) as runtime:
            engine = runtime.engine
            assert engine is not None
            await _until(lambda: len(engine.streams.applied) == len(engine.streams.rows), 15)
            assert sum(sim.link("udp").streams.rates_hz.values()) < 100
        # stopped: every rate the plan set is PX4's default again (interval 0)
        await _until(lambda: sum(sim.link("udp").streams.rates_hz.values())
                     >= sum(PROFILES["px4"].values()) - 1, 5)


async def test_a_vehicle_that_is_not_system_1_is_answered_as_ours() -> None:
    """PX4 (and the sim) addresses each COMMAND_ACK to the command's sender, and the daemon
    takes only ACKs addressed to itself: its frames must carry the vehicle's system id from
    the first command on, or on system 2 every row would end "no answer"."""
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="px4", system_id=2, boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim, serving(
            config_from_dict(_config(port, "minimal"), {}), mqtt=False) as runtime:
        engine = runtime.engine
        assert engine is not None
        await _until(lambda: len(engine.streams.applied) == len(engine.streams.rows), 15)
        assert engine.streams.refused == {}
        assert runtime.codec.mav.srcSystem == 2
        assert sum(sim.link("udp").streams.rates_hz.values()) < sum(PROFILES["px4"].values()) / 4


async def test_run_without_a_config_file_applies_the_default_plan() -> None:
    """Found by review: `offboardd run` without --config (as the README's tour runs it) built
    DaemonConfig() as is, with no plan: PX4's whole default load stayed on the link. Run as
    users run it, a process with only --link: the daemon's link carries the minimal plan."""
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="px4", boot_ready_s=QUICK_BOOT_S)
    total_before = sum(PROFILES["px4"].values())
    async with SimServer(sim_config) as sim:
        daemon = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "offboardd", "run", "--link", f"udpin://127.0.0.1:{port}",
            "--no-mqtt", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        try:
            await _until(lambda: 0 < sum(sim.link("udp").streams.rates_hz.values())
                         < total_before / 4, 20)
        finally:
            daemon.terminate()
            await asyncio.wait_for(daemon.wait(), 10)
