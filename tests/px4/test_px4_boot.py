"""Real PX4: its boot on the onboard link, watched from the first HEARTBEAT, judged by the
checks the sim's test uses (tests/sim/boot_flight.py: a differential test); and the
daemon engaging a PX4 that has just booted under it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.px4.conftest import px4_instance
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.sim.boot_flight import check_boot, watch_boot
from tests.sim.client import Peer


async def test_px4_boot_is_seen_as_the_sim_plays_it(
    px4_bin: tuple[Path, Path], measured: dict[str, object]
) -> None:
    build, bin_dir = px4_bin
    sitl = Px4Sitl(build, bin_dir, px4_instance())
    peer = await Peer.connect(sitl.px4_port, local_port=sitl.companion_port)
    peer.target_system = sitl.system_id
    sitl.start()  # listening first: the first HEARTBEAT is PX4's first
    try:
        seen = await watch_boot(peer)
    finally:
        peer.close()
        sitl.cleanup()
    measured.update(seen.figures())
    check_boot(seen)


async def test_the_daemon_engages_a_px4_the_moment_it_says_ready_after_boot(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    # Companion and FC powered on together: the daemon is up, PX4 boots under it, and a
    # mission script engages as soon as the daemon's state says ready.
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.fc_ready()
        px4.stop()
        await s.client.wait_for_state(lambda st: st["fc_link"] == "lost", 10)
        loop = asyncio.get_running_loop()
        started = loop.time()
        px4.start()
        await s.fc_ready(timeout_s=30)
        ready_s = loop.time() - started
        reply = await s.client.engage(PositionNed(0.0, 0.0, -3.0), arm=True)
        engaged_s = loop.time() - started
        assert reply.ok, reply
        await s.at_altitude(3.0)
        refusals = [e for e in s.daemon.events() if e.get("event") == "command_refused"]
    measured.update(ready_after_start_s=round(ready_s, 2), engaged_after_start_s=round(
        engaged_s, 2), refusals=len(refusals))
    # PX4's estimate converges ~3.4 s after its start ([SITL main]): not ready before
    assert ready_s >= 2.5, measured
