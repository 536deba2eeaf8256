"""The signing timestamp's saves off the control loop (TimestampSaver, SigningSession.tick).

An fsync on an SD card takes hundreds of ms; here it is made slow (or held) in the saver's
thread, and the loop's ticks must not wait for it. The file must never go back, whichever
save lands last: the thread's late one or the synchronous one at exit.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.mavlink.signing import (
    SAVE_STEP_TICKS,
    SigningSession,
    TimestampSaver,
    TimestampStore,
    timestamp_from_unix,
)

KEY = bytes(range(32))
WALL_S = 1_800_000_000.0
WAIT_S = 5.0  # a deadline, not an expectation
SLOW_FSYNC_S = 0.4


class Disk:
    """os.fsync replaced: records what each fsync of a file under `root` made durable,
    from which thread, how many at once; slow by `delay_s`, or held while `gate` is
    cleared."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path, delay_s: float = 0.0) -> None:
        self.root, self.delay_s = root, delay_s
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.written: list[int] = []
        self.threads: set[str] = set()
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._real: Callable[[int], None] = os.fsync
        monkeypatch.setattr(os, "fsync", self.fsync)

    def fsync(self, fd: int) -> None:
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(f"{self.root}/"):
            self._real(fd)  # not this test's
            return
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.threads.add(threading.current_thread().name)
        self.entered.set()
        try:
            self.gate.wait(WAIT_S)
            time.sleep(self.delay_s)
            self._real(fd)
            with self._lock:
                self.written.append(int(Path(f"/proc/self/fd/{fd}").read_text()))
        finally:
            with self._lock:
                self.in_flight -= 1


def _session(path: Path) -> tuple[SigningSession, MavlinkCodec]:
    codec = MavlinkCodec(1, 191)
    session = SigningSession(KEY, path)
    session.attach(codec, WALL_S, accept_unsigned=False, unsigned_ids=())
    return session, codec


async def test_a_slow_fsync_never_blocks_the_loop(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Ticks every 20 ms on the loop, a save due every other tick, each fsync 0.4 s: no
    tick and no gap between them comes near the fsync's time; one save at a time, the
    newest one waiting replaces the older, and the file holds the newest in the end."""
    path = tmp_path / "signing-timestamp"
    session, codec = _session(path)
    disk = Disk(monkeypatch, tmp_path, SLOW_FSYNC_S)  # after attach's own save
    step_s = SAVE_STEP_TICKS / 100_000 / 2  # the wall clock moves half a save step a tick
    loop = asyncio.get_running_loop()
    longest_tick_s = worst_gap_s = 0.0
    previous_s = began_s = loop.time()
    for i in range(60):  # 1.2 s of ticks: three fsyncs' time
        start_s = loop.time()
        worst_gap_s = max(worst_gap_s, start_s - previous_s)  # from one tick's start to the next
        previous_s = start_s
        assert session.tick(codec, WALL_S + i * step_s) == []
        longest_tick_s = max(longest_tick_s, loop.time() - start_s)
        await asyncio.sleep(0.02)
    print(f"\nlongest tick {longest_tick_s * 1000:.1f} ms, worst gap {worst_gap_s * 1000:.0f} ms")
    elapsed_s = loop.time() - began_s
    assert longest_tick_s < 0.1 and worst_gap_s < 0.2
    assert threading.current_thread().name not in disk.threads  # fsync'd on the saver's
    assert disk.max_in_flight == 1
    # 30 saves came due, one at a time: those replaced while waiting were never written
    assert 2 <= len(disk.written) <= min(elapsed_s / SLOW_FSYNC_S + 2, 15)
    assert disk.written == sorted(set(disk.written))  # never back
    last = codec.signing_timestamp
    started_s = time.monotonic()
    assert session.tick(codec, WALL_S + 60 * step_s, final=True) == []
    # the save at exit is synchronous and complete: the file holds it when tick returns
    assert time.monotonic() - started_s >= SLOW_FSYNC_S * 0.9
    assert TimestampStore(path).load() == (codec.signing_timestamp, None)
    assert codec.signing_timestamp >= last and disk.written[-1] == codec.signing_timestamp


def test_the_saved_timestamp_never_goes_back_with_overlapping_saves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = Disk(monkeypatch, tmp_path)
    path = tmp_path / "signing-timestamp"
    saver = TimestampSaver(TimestampStore(path))
    a = timestamp_from_unix(WALL_S)
    disk.gate.clear()
    saver.submit(a)  # the thread writes a, held in its fsync
    assert disk.entered.wait(WAIT_S)
    saver.submit(a + 2)
    saver.submit(a + 1)  # an older one does not replace what waits
    saver.submit(a + 3)  # a newer one does
    final: list[str | None] = []
    exiting = threading.Thread(target=lambda: final.append(saver.save_now(a + 10)))
    exiting.start()  # the save at exit waits for the one in flight...
    time.sleep(0.05)
    assert exiting.is_alive() and not final
    saver.submit(a + 5)  # ...and a late submit, older than the save at exit, races it
    disk.gate.set()
    exiting.join(WAIT_S)
    assert final == [None]
    assert saver.wait_idle(WAIT_S)
    saver.submit(a + 7)  # later still, older than what the file holds: skipped
    assert saver.wait_idle(WAIT_S)
    assert TimestampStore(path).load() == (a + 10, None)
    assert disk.written[0] == a and disk.written[-1] == a + 10
    assert a + 2 not in disk.written and a + 3 not in disk.written  # dropped by the exit save
    assert disk.written == sorted(set(disk.written))  # a + 5 before a + 10, or not at all
    assert disk.max_in_flight == 1
    assert set(saver.outcomes()) == {None}
    saver.close()


def test_the_exit_save_waits_for_a_slow_save_in_flight_and_stays_newest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "signing-timestamp"
    session, codec = _session(path)
    disk = Disk(monkeypatch, tmp_path, SLOW_FSYNC_S)
    due_s = WALL_S + SAVE_STEP_TICKS / 100_000
    assert session.tick(codec, due_s) == []  # a save, in flight on the thread
    assert disk.entered.wait(WAIT_S)
    assert session.tick(codec, due_s + 1.0, final=True) == []
    assert TimestampStore(path).load() == (timestamp_from_unix(due_s + 1.0), None)
    assert disk.written == [timestamp_from_unix(due_s), timestamp_from_unix(due_s + 1.0)]
    assert session.saver is not None and session.saver.wait_idle(0.0)
    assert session.saver._thread is None  # stopped and joined


def test_a_failing_save_on_the_thread_is_reported_once_and_retried(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    session, codec = _session(folder / "signing-timestamp")  # attach saved: the folder exists
    saver = session.saver
    assert saver is not None
    (folder / "signing-timestamp").unlink()
    folder.rmdir()
    folder.write_text("")  # the folder became a file: every save fails
    step_s = SAVE_STEP_TICKS / 100_000
    assert session.tick(codec, WALL_S + step_s) == []  # due: handed over, no wait
    assert saver.wait_idle(WAIT_S)
    warnings = session.tick(codec, WALL_S + step_s + 0.05)  # the tick after says so...
    assert len(warnings) == 1 and "cannot save the signing timestamp" in warnings[0]
    assert saver.wait_idle(WAIT_S)  # ...and tries again at once, as before
    assert session.tick(codec, WALL_S + step_s + 0.1) == []  # said once, not every tick
    assert saver.wait_idle(WAIT_S)
    folder.unlink()  # the disk is back: the next retry saves
    assert session.tick(codec, WALL_S + step_s + 0.15) == []
    assert saver.wait_idle(WAIT_S)
    assert session.tick(codec, WALL_S + step_s + 0.2) == []
    saved, problem = TimestampStore(folder / "signing-timestamp").load()
    assert problem is None and saved is not None and saved >= timestamp_from_unix(WALL_S + step_s)
    folder.joinpath("signing-timestamp").unlink()
    folder.rmdir()
    folder.write_text("")  # failing again after a success: said again
    warnings = session.tick(codec, WALL_S + 60 * step_s, final=True)
    assert len(warnings) == 1 and "cannot save the signing timestamp" in warnings[0]
