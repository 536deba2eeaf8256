"""MAVLink 2 signing end to end: the daemon runtime <-> real UDP <-> the sim requiring signatures.

Same key: a normal offboard takeoff, nothing refused either way, the timestamp persisted.
Another key: the daemon accepts nothing from the link and refuses to engage, saying why.
No key on the daemon: the sim (like PX4 v1.17 with a key) refuses everything it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.commands import Engage
from offboardd.core.setpoints import PositionNed
from offboardd.mavlink.links import parse_link_url
from offboardd.mavlink.signing import TICKS_PER_S, TimestampStore
from offboardd.sim import SimConfig, SimServer
from tests.conftest import free_port
from tests.integration.harness import Flight, flying
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration

SIM_KEY = bytes(range(32))


@contextlib.asynccontextmanager
async def signed_flight(tmp_path: Path, daemon_key: bytes | None) -> AsyncIterator[Flight]:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", signing_key=SIM_KEY,
                           require_signing=True, boot_ready_s=QUICK_BOOT_S)  # fmt: skip
    mavlink = MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{port}"))
    if daemon_key is not None:
        key_file = tmp_path / "signing.key"
        key_file.write_text(daemon_key.hex() + "\n")
        key_file.chmod(0o600)
        mavlink = MavlinkSettings(url=mavlink.url, signing_key_file=str(key_file),
                                  signing_timestamp_file=str(tmp_path / "signing-timestamp"))
    async with SimServer(sim_config) as sim, flying(sim, DaemonConfig(mavlink=mavlink)) as fl:
        yield fl


async def test_same_key_flies_a_takeoff(tmp_path: Path) -> None:
    async with signed_flight(tmp_path, SIM_KEY) as fl:
        await fl.takeoff(-2.0)
        sim_stats, daemon_stats = fl.sim.link("udp").codec.stats, fl.runtime.codec.stats
        assert fl.sim.vehicle.armed and fl.sim.vehicle.mode_name == "OFFBOARD"
        # a quick climb can take fewer than 50 frames each way: fly on until both have seen
        # more, then none may have been refused
        await fl.wait_for(lambda: daemon_stats.frames_ok > 50 and sim_stats.frames_ok > 50,
                          5.0, "50 signed frames each way")
        for stats in (sim_stats, daemon_stats):
            assert (stats.bad_signature, stats.unsigned_refused, stats.replayed) == (0, 0, 0)
        last_sent = fl.runtime.codec.signing_timestamp
    saved, problem = TimestampStore(tmp_path / "signing-timestamp").load()
    assert problem is None and saved is not None and saved >= last_sent  # saved at exit


async def test_another_key_hears_nothing_and_refuses_to_engage(tmp_path: Path) -> None:
    async with signed_flight(tmp_path, bytes(range(1, 33))) as fl:
        stats = fl.runtime.codec.stats
        await fl.wait_for(lambda: stats.bad_signature >= 20, 5.0, "signed frames from the sim")
        reply = await fl.command(Engage("e1", PositionNed(0.0, 0.0, -2.0), arm=True))
        assert not reply.ok and reply.reason is not None and reply.reason.value == "fc_unknown"
        assert "with a wrong signature" in reply.message, reply.message
        assert stats.frames_ok == 0 and fl.phase == "idle"
        assert not fl.sim.vehicle.armed


async def test_an_unsigned_daemon_is_refused_by_the_sim(tmp_path: Path) -> None:
    async with signed_flight(tmp_path, None) as fl:
        # Without a key the daemon ignores signatures (as PX4 <= v1.16 does) and hears PX4...
        await fl.wait_for(lambda: fl.runtime.codec.stats.frames_ok >= 20, 5.0, "the sim heard")
        sim_stats = fl.sim.link("udp").codec.stats
        # ...but everything it sends (parameter requests, heartbeats) is refused unsigned.
        await fl.wait_for(lambda: sim_stats.unsigned_refused >= 3, 5.0, "refused frames")
        reply = await fl.command(Engage("e1", PositionNed(0.0, 0.0, -2.0), arm=True))
        assert not reply.ok, reply
        assert sim_stats.frames_ok == 0 and not fl.sim.vehicle.armed


async def test_a_px4_rebooted_with_its_stored_signing_timestamp_is_heard_again(
        tmp_path: Path) -> None:
    """PX4 v1.17 reads its signing timestamp from the SD card at boot (the provisioning
    one; mavlink_sign_control.cpp) and takes a newer one only from a signed frame it
    accepts. After its reboot every frame of it is older than what the daemon last
    accepted: refused as replayed. The daemon fell silent once the FC was lost, so PX4
    never got a newer timestamp from it, and the FC stayed lost until the daemon was
    restarted (review). The companion heartbeat goes on while it is lost."""
    async with signed_flight(tmp_path, SIM_KEY) as fl:
        await fl.wait_fc_ready()
        stats = fl.runtime.codec.stats
        codecs = [link.codec for link in fl.sim.links]
        fl.sim.reboot()
        await fl.wait_for(lambda: [link.codec for link in fl.sim.links] != codecs, 10.0,
                          "the sim rebooted")
        for link in fl.sim.links:  # back with the timestamp stored an hour ago
            link.codec.signing_timestamp -= 3600 * TICKS_PER_S
        await fl.wait_for(lambda: stats.replayed > 0, 5.0, "its frames refused as replays")
        await fl.wait_fc_ready(timeout_s=15.0)  # heard again, parameters read again
        replayed = stats.replayed
        await fl.wait_for(lambda: stats.frames_ok > 0, 1.0, "frames")
        await asyncio.sleep(1.0)
        assert stats.replayed == replayed  # none refused any more


async def test_a_px4_signing_from_its_provisioning_timestamp_is_heard_over_a_uart(
        tmp_path: Path) -> None:
    """PX4 v1.17 signs from the timestamp stored at provisioning (plus one a frame), far
    behind the daemon's wall-clock one: a new stream more than a minute behind, refused as
    replayed. It takes a newer timestamp only from a signed frame it accepts, and the
    daemon sent none to an FC it had not heard: over a UART it never heard a PX4
    provisioned an hour before (review). A signed heartbeat now goes out while that goes
    on, and the FC is heard within seconds."""
    key_file = tmp_path / "signing.key"
    key_file.write_text(SIM_KEY.hex() + "\n")
    key_file.chmod(0o600)
    sim_config = SimConfig(udp_bind=None, gcs_bind=None, pty=True, profile="light",
                           signing_key=SIM_KEY, require_signing=True, boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim:
        for link in sim.links:  # provisioned an hour ago
            link.codec.signing_timestamp -= 3600 * TICKS_PER_S
        mavlink = MavlinkSettings(url=parse_link_url(f"serial://{sim.pty_path}:921600"),
                                  signing_key_file=str(key_file), signing_timestamp_file="")
        async with flying(sim, DaemonConfig(mavlink=mavlink)) as fl:
            await fl.wait_for(lambda: fl.runtime.codec.stats.replayed > 0, 5.0, "replays")
            await fl.wait_fc_ready(timeout_s=15.0)
