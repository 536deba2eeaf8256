"""Serial links over real ptys: the link opens the slave path (through a stable symlink, as
udev's /dev/serial/by-id names are), the test plays the flight controller on the master."""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
import serial

from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.links import MAX_BACKLOG_BYTES, SerialLink, open_link
from tests.mavlink.conftest import Recorder, heartbeat, markers, running, wait_until


class Pty:
    """A pty whose slave is reachable at `link_path`; `replace()` swaps in a new pty."""

    def __init__(self, link_path: Path) -> None:
        self.link_path = link_path
        self.master = -1
        self.replace()

    def replace(self) -> None:
        self.close()
        master, slave = os.openpty()
        slave_path = os.ttyname(slave)
        os.close(slave)  # the pts stays while the master is open; the link opens it by path
        os.set_blocking(master, False)
        self.master = master
        tmp = self.link_path.with_suffix(".new")
        tmp.symlink_to(slave_path)
        tmp.replace(self.link_path)  # atomic re-point, as udev does

    def close(self) -> None:
        if self.master >= 0:
            os.close(self.master)
            self.master = -1

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def read_available(self) -> bytes:
        out = bytearray()
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.master, 65536):
                out += chunk
        return bytes(out)


@pytest.fixture
def pty(tmp_path: Path) -> Iterator[Pty]:
    made = Pty(tmp_path / "ttyFC")
    try:
        yield made
    finally:
        made.close()


async def read_markers(pty: Pty, codec: MavlinkCodec, count: int) -> list[int]:
    got: list[int] = []

    def more() -> bool:
        got.extend(markers(codec.decode(pty.read_available())))
        return len(got) >= count

    await wait_until(more, f"{count} frames on the pty master")
    return got


@pytest.mark.parametrize("scheme", ["serial", "serial_flowcontrol"])
async def test_serial_exchanges_frames(pty: Pty, scheme: str) -> None:
    rec = Recorder()
    link = open_link(f"{scheme}://{pty.link_path}:921600", rec.on_bytes, rec.on_state)
    fc = MavlinkCodec(1, 1)
    me = MavlinkCodec(1, 191)
    async with running(link):
        await wait_until(lambda: link.up, "the device to open")
        assert link.state.detail == f"opened {pty.link_path} at 921600 baud"
        pty.write(heartbeat(fc, 1) + heartbeat(fc, 2))
        await wait_until(lambda: rec.markers() == [1, 2], "frames from the pty")
        assert link.send(heartbeat(me, 3)) is True
        assert await read_markers(pty, MavlinkCodec(9, 9), 1) == [3]
    assert rec.ups == [True, False]


async def test_serial_follows_a_recreated_device(pty: Pty) -> None:
    rec = Recorder()
    link = open_link(f"serial://{pty.link_path}:57600", rec.on_bytes, rec.on_state)
    fc = MavlinkCodec(1, 1)
    me = MavlinkCodec(1, 191)
    async with running(link):
        await wait_until(lambda: link.up, "the device to open")
        pty.write(heartbeat(fc, 1))
        await wait_until(lambda: rec.markers() == [1], "a frame")

        pty.close()  # the flight controller's end goes away (a USB unplug, a pty closed)
        await wait_until(lambda: rec.ups == [True, False], "down when the device goes")
        assert rec.transitions[-1].detail.startswith("device gone")
        assert link.send(heartbeat(me, 2)) is False
        await asyncio.sleep(1.6)  # three failed polls while nothing is there
        assert not link.up
        # why it cannot reopen is reported once, not once per poll (the symlink now points
        # at the closed pty's path, gone with it)
        assert len(rec.failures) == 1 and "No such file" in rec.failures[0], rec.failures

        pty.replace()
        await wait_until(lambda: rec.ups == [True, False, True], "up on the new device")
        pty.write(heartbeat(fc, 3))
        await wait_until(lambda: rec.markers() == [1, 3], "a frame from the new device")
        assert link.send(heartbeat(me, 4)) is True
        assert await read_markers(pty, MavlinkCodec(9, 9), 1) == [4]


async def test_serial_waits_for_a_missing_device(tmp_path: Path) -> None:
    rec = Recorder()
    path = tmp_path / "ttyLater"
    link = open_link(f"serial://{path}:115200", rec.on_bytes, rec.on_state)
    async with running(link):
        await wait_until(lambda: "No such file" in link.state.detail, "the open failure")
        assert link.state.detail == f"cannot open {path}: No such file or directory"
        assert rec.failures == [link.state.detail] and rec.ups == []
        later = Pty(path)
        try:
            await wait_until(lambda: link.up, "the device to appear")
        finally:
            later.close()


async def test_serial_backlog_is_bounded_and_drops_the_oldest_whole_sends(pty: Pty) -> None:
    rec = Recorder()
    link = open_link(f"serial://{pty.link_path}:921600", rec.on_bytes, rec.on_state)
    me = MavlinkCodec(1, 191)
    async with running(link):
        await wait_until(lambda: link.up, "the device to open")
        assert isinstance(link, SerialLink)
        # Nobody reads the master: the pty fills, then the backlog; ~300 KB in total.
        sent = 0
        for marker in range(5000):
            text = f"frame {marker}".ljust(50, ".").encode()
            frame = me.encode(dialect.MAVLink_statustext_message(6, text, marker, 0))
            assert link.send(frame) is True  # never blocks, never refuses while up
            sent += 1
        assert link.stats.sends_dropped > 0
        assert link._backlog_bytes - link._head_sent <= MAX_BACKLOG_BYTES

        # Drain the master: whole frames only (no cut frame), the newest ones kept.
        reader = MavlinkCodec(9, 9)
        got: list[int] = []

        def drained() -> bool:
            got.extend(m.id for m in reader.decode(pty.read_available()))
            return bool(got) and got[-1] == 4999

        await wait_until(drained, "the last frame")
        assert len(got) == sent - link.stats.sends_dropped
        assert got == sorted(got)
        assert reader.stats.garbage_bytes == 0
        assert reader.stats.frames_bad == 0


async def test_a_second_link_on_the_same_device_is_refused_as_busy(pty: Pty) -> None:
    first = open_link(f"serial://{pty.link_path}:921600", lambda d: None, lambda s: None)
    second = open_link(f"serial://{pty.link_path}:921600", lambda d: None, lambda s: None)
    async with running(first):
        await wait_until(lambda: first.up, "the first link")
        async with running(second):
            await wait_until(lambda: "busy" in second.state.detail, "the lock refusal")
            assert not second.up
            assert first.up


async def test_drop_unsent_throws_away_what_a_stuck_line_holds(pty: Pty) -> None:
    """When the stream stops, what has not left is stale (links/unsent.py): the backlog
    and the tty's output queue are dropped, so a line that comes back does not deliver a
    burst of old setpoints (found by review: PX4 re-entered OFFBOARD on such a burst).
    A pty keeps ~4 KB past a flush (a real UART's queue, which TIOCOUTQ reads, goes)."""
    rec = Recorder()
    link = open_link(f"serial://{pty.link_path}:921600", rec.on_bytes, rec.on_state)
    me = MavlinkCodec(1, 191)
    async with running(link):
        await wait_until(lambda: link.up, "the device to open")
        for marker in range(1000):  # ~60 KB: the pty's buffer, then the backlog
            link.send(heartbeat(me, marker))
        assert link.unsent_bytes() > 0  # the backlog (a pty's own queue reads 0)
        dropped_before = link.stats.sends_dropped
        link.drop_unsent()
        assert link.unsent_bytes() == 0 and link.stats.sends_dropped > dropped_before
        await asyncio.sleep(0.05)
        assert len(pty.read_available()) < 8 * 1024  # not the ~20 KB the pty held
        link.send(heartbeat(me, 5000))  # the link goes on
        reader = MavlinkCodec(9, 9)
        got: list[int] = []

        def fresh() -> bool:
            got.extend(markers(reader.decode(pty.read_available())))
            return 5000 in got

        await wait_until(fresh, "a frame sent after the drop")


async def test_a_tty_hung_up_mid_open_is_retried_like_any_open_failure(
        pty: Pty, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyserial leaves tcsetattr's termios.error unwrapped: a USB FC replugged between its
    tcgetattr and tcsetattr raised past the link's retry and ended the daemon (review,
    2026-11-29). It is an open failure now, retried."""
    real_serial = serial.Serial
    hung_up = [True]

    def once_hung_up(*args: object, **kwargs: object) -> serial.Serial:
        if hung_up[0]:
            hung_up[0] = False
            raise termios.error(5, "Input/output error")
        return real_serial(*args, **kwargs)

    monkeypatch.setattr(serial, "Serial", once_hung_up)
    rec = Recorder()
    link = open_link(f"serial://{pty.link_path}:115200", rec.on_bytes, rec.on_state)
    async with running(link):
        await wait_until(lambda: link.up, "the open retried")
        assert rec.failures == [f"cannot open {pty.link_path}: Input/output error"]
