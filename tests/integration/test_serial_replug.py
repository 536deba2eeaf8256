"""The FC's USB cable pulled and put back mid-flight, over a real pty (review of the
serial device going away): the pty's master closed and its symlink removed (udev removes
/dev/serial/by-id/... with the device), then a new pty behind the same symlink (the FC
re-enumerated, maybe as another ttyACM). The daemon must notice at once, stop streaming,
reopen by itself without spinning or leaking descriptors, read the FC's parameters again,
and never engage again on its own."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import pytest
import structlog

from offboardd.core.commands import Engage
from offboardd.core.setpoints import PositionNed
from offboardd.sim import SimServer
from offboardd.sim.transports import PtyEndpoint
from tests.integration.harness import Flight, flight

pytestmark = pytest.mark.integration


def _unplug(sim: SimServer) -> None:
    pty = sim.pty
    assert pty is not None
    pty.close()  # master closed (the daemon reads EIO), symlink removed


def _replug(sim: SimServer) -> None:
    link = sim.link("pty")
    symlink = sim.config.pty_symlink
    new = PtyEndpoint(sim._receiver(link), symlink, sim.config.pty_baud)
    sim._pty = new
    link.sender = new


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _replug_cycle(fl: Flight) -> None:
    _unplug(fl.sim)
    await fl.wait_for(lambda: not fl.runtime.link.up, 3.0, "the link down on the unplug")
    _replug(fl.sim)
    engine = fl.runtime.engine
    assert engine is not None
    await fl.wait_for(lambda: fl.runtime.link.up and engine.fc_up, 5.0,
                      "the FC back on the new device")


async def test_a_usb_replug_mid_flight_stops_the_stream_and_never_re_engages(
        tmp_path: Path) -> None:
    symlink = str(tmp_path / "usb-PX4_FMU")
    with structlog.testing.capture_logs() as logs:
        async with flight(link="serial", sim={"pty_symlink": symlink}) as fl:
            await fl.takeoff(-2.0)
            engine = fl.runtime.engine
            assert engine is not None and fl.phase == "active"
            requests = len(fl.sim.record.offboard_requests)

            _unplug(fl.sim)
            await fl.wait_for(lambda: not engine.fc_up, 1.0, "the FC lost on the unplug")
            assert fl.phase != "active"
            engine.checks.params["COM_OF_LOSS_T"] = -1.0  # (a mark: read again, or not)
            cpu_before_s = os.times().user + os.times().system

            await asyncio.sleep(1.5)  # absent: the path polled, not spun on
            cpu_s = os.times().user + os.times().system - cpu_before_s
            assert cpu_s < 0.75, f"{cpu_s:.2f} s of CPU in 1.5 s with the device absent"
            assert fl.runtime.link.stats.downs == 1

            setpoints = len(fl.sim.record.setpoints)
            _replug(fl.sim)
            await fl.wait_for(lambda: engine.fc_up, 5.0, "the FC back on the new device")
            await fl.wait_for(lambda: engine.checks.params.get("COM_OF_LOSS_T", -1.0) >= 0,
                              5.0, "its parameters read again")
            await asyncio.sleep(1.5)  # a live commander keeps its lease meanwhile
            assert len(fl.sim.record.offboard_requests) == requests, "re-engaged by itself"
            assert len(fl.sim.record.setpoints) == setpoints, "streamed again by itself"
            assert fl.phase != "active"

            fds = _fds()
            for _ in range(5):
                await _replug_cycle(fl)
            assert _fds() <= fds, "descriptors leaked over replugs"
    link_lines = [line for line in logs if line["event"] == "fc_link"]
    assert [line["up"] for line in link_lines] == [True] + [False, True] * 6 + [False]


async def test_why_the_device_cannot_be_reopened_is_logged_once(tmp_path: Path) -> None:
    """Unplugged, then back, but another program holds its lock (a second daemon, a tool
    opened with pyserial's exclusive lock): the daemon logged "device gone" and then
    nothing for as long as every reopen failed, so the journal never said why the FC did
    not come back (nor, at start, why it never came: a wrong path, no dialout group)."""
    symlink = str(tmp_path / "usb-PX4_FMU")
    with structlog.testing.capture_logs() as logs:
        async with flight(link="serial", sim={"pty_symlink": symlink}) as fl:
            await fl.wait_fc_ready()
            _unplug(fl.sim)
            await fl.wait_for(lambda: not fl.runtime.link.up, 3.0, "the link down")
            await asyncio.sleep(1.2)  # a few reopens: the device is absent
            _replug(fl.sim)
            holder = os.open(symlink, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
            try:
                fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
                await fl.wait_for(lambda: "busy" in fl.runtime.link.state.detail, 3.0,
                                  "the reopen refused as busy")
                # and a commander asking to fly is told why the FC is unknown
                reply = await fl.command(Engage(fl.next_id(), PositionNed(0.0, 0.0, -2.0)))
                assert not reply.ok and "FC link down" in reply.message, reply
                assert "device busy" in reply.message, reply
                await asyncio.sleep(1.2)  # a few more refusals
            finally:
                os.close(holder)
            await fl.wait_for(lambda: fl.runtime.link.up, 3.0, "the link back once freed")
    waiting = [line["detail"] for line in logs if line["event"] == "fc_link_waiting"]
    assert waiting == [f"cannot open {symlink}: No such file or directory",
                       f"cannot open {symlink}: device busy: another program holds it "
                       "open (exclusive lock)"], waiting
