"""The flight recorder on a board without a real-time clock (review of wall-clock use):
the wall clock boots at fake-hwclock's last save or ahead, and NTP steps it, forward or
back, perhaps mid-flight. Neither may delete a flight by age nor reorder a flight's stamps.
Each test steps the clock by hand (time.time patched, or an injected clock): no sleeps."""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.recorder import clocksync, folders
from offboardd.recorder.recorder import Recorder
from offboardd.recorder.settings import RecorderSettings
from offboardd.recorder.store import list_flights, read_tlog
from offboardd.recorder.wallclock import RecordingClock
from offboardd.recorder.writer import Close, Start, Stop, Writer
from tests.recorder.test_recorder_markers import _FakeEngine, _frame

_DAY_S = 86400.0


def _flight(writer: Writer, name: str) -> Path:
    """One flight through the writer (its thread not started: driven here), closed."""
    writer._take(Start(name))
    folder = writer._flight.folder if writer._flight is not None else None
    assert folder is not None
    writer._take(Stop(0))
    return folder


def _age(folder: Path, days: float) -> None:
    stamp_s = time.time() - days * _DAY_S
    os.utime(folder, (stamp_s, stamp_s))


def test_a_flight_stamped_by_a_stale_clock_survives_ntp_setting_it(tmp_path: Path) -> None:
    """The Pi sat unpowered for 40 days: fake-hwclock boots it 40 days back, and at the
    field (no network) it records a flight stamped then. Home, NTP sets the clock, the next
    flight starts: the budget check read the flight just flown as 40 days old and deleted
    it (max_age_days 30; the 2025 plausibility bound does not see a stale clock)."""
    settings = RecorderSettings(dir=str(tmp_path), max_age_days=30, min_free_mb=0)
    writer = Writer(settings)
    writer.clock_synced = lambda: False  # at the field: no NTP
    field = _flight(writer, "2026-10-18T10-00-00Z")
    _age(field, 40)  # what the stale clock stamped
    writer.clock_synced = lambda: True  # home: NTP has set the clock
    _flight(writer, "2026-11-27T10-00-00Z")
    assert field.exists(), "a flight stamped by an unsynchronised clock was pruned by age"


def test_a_clock_ahead_prunes_no_flight_by_age(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock a year ahead (a wrong RTC, a bad manual `date`), not synchronised: every
    flight read a year old and the next flight's start deleted them all."""
    settings = RecorderSettings(dir=str(tmp_path), max_age_days=30, min_free_mb=0)
    writer = Writer(settings)
    writer.clock_synced = lambda: True
    yesterday = _flight(writer, "2026-11-26T10-00-00Z")
    _age(yesterday, 1)
    ahead_s = time.time() + 365 * _DAY_S
    monkeypatch.setattr(time, "time", lambda: ahead_s)
    writer.clock_synced = lambda: False
    _flight(writer, "2027-11-27T10-00-00Z")
    assert yesterday.exists(), "a clock ahead made yesterday's flight a year old"


def test_a_synchronised_clock_still_prunes_by_age(tmp_path: Path) -> None:
    settings = RecorderSettings(dir=str(tmp_path), max_age_days=30, min_free_mb=0)
    writer = Writer(settings)
    writer.clock_synced = lambda: True
    old = _flight(writer, "2026-10-01T10-00-00Z")
    assert (old / folders.CLOCK_SYNCED_NAME).exists()
    _age(old, 40)
    _flight(writer, "2026-11-27T10-00-00Z")
    assert not old.exists()


def test_an_ntp_step_mid_flight_neither_reorders_nor_stretches_the_flight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NTP steps the clock 3 days forward mid-flight (the Pi booted at fake-hwclock's last
    save), then 2 hours back: the journal's and the tlog's stamps jumped with it, so the
    flight lasted 3 days in `log list`, and its stamps went back (tools reading the tlog
    in order saw time reverse)."""
    wall = {"offset_s": 0.0}
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + wall["offset_s"])
    rec = Recorder(RecorderSettings(dir=str(tmp_path), post_s=0.2, flush_interval_s=0.1),
                   MavlinkCodec(1, 191), "run")
    codec = MavlinkCodec(1, 1)
    eng = _FakeEngine()
    rec.start()
    mono_s = 0.0
    for step, offset_s in ((0, 0.0), (10, 3 * _DAY_S), (20, 3 * _DAY_S - 7200.0)):
        wall["offset_s"] = offset_s  # (the step happens between the cycles 9 and 10...)
        for cycle in range(10):
            eng.vehicle.armed = step < 20 or cycle < 5
            rec.frame_out(_frame(codec))
            rec.journal("sample", step=step)
            rec.cycle(eng, mono_s)  # type: ignore[arg-type]
            mono_s += 0.05
    for _ in range(10):  # post_s, then the flight closes
        rec.cycle(eng, mono_s)  # type: ignore[arg-type]
        mono_s += 0.05
    rec.close()
    (flight,) = list_flights(tmp_path)
    assert flight.summary.complete
    assert flight.summary.duration_s < 60.0, flight.summary.duration_s
    lines = (flight.folder / "journal.jsonl").read_text().splitlines()
    stamps = [json.loads(line)["t"] for line in lines]
    assert stamps == sorted(stamps)
    tlog = [t for t, _ in read_tlog(flight.folder)]
    assert tlog and tlog == sorted(tlog)


def test_the_pre_roll_moves_with_the_flights_clock() -> None:
    """A step between the pre-roll and the flight's start (anchor): the pre-roll's stamps
    move by the step, so they stay just before the flight's first."""
    wall, mono = [1000.0], [5.0]
    clock = RecordingClock(lambda: wall[0], lambda: mono[0])
    mono[0] += 2.0
    assert clock.unix_s() == 1002.0
    wall[0] = 1000.0 + 2.0 + 86400.0  # stepped a day forward while nothing was anchored
    assert clock.unix_s() == 1002.0  # the stamps do not jump...
    assert clock.anchor() == 86400.0  # ...until a flight starts, which says by how much
    assert clock.unix_s() == 1002.0 + 86400.0


def test_a_closed_writer_ends_with_the_recorders_stamp(tmp_path: Path) -> None:
    writer = Writer(RecorderSettings(dir=str(tmp_path)))
    writer._take(Start("2026-11-27T10-00-00Z"))
    folder = writer._flight.folder if writer._flight is not None else None
    assert folder is not None
    writer.queue.put(Close(0, 1234.5))
    writer.start()
    assert writer.join(5.0)
    last = json.loads((folder / "journal.jsonl").read_text().splitlines()[-1])
    assert last["event"] == "end" and last["t"] == 1234.5


_LONG = ctypes.sizeof(ctypes.c_long)  # struct timex: modes, then `long` fields
_STA_UNSYNC, _TIME_ERROR = 0x40, 5


class _FakeLibc:
    """adjtimex as a host answers it: `maxerror_us` and STA_UNSYNC written into the
    caller's struct timex (a TIME_ERROR return), or EPERM (`maxerror_us` None) as under the
    shipped unit, whose seccomp filters refuse even a read-only adjtimex."""

    maxerror_us: int | None = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def adjtimex(self, timex: Any) -> int:  # a byref() of the caller's struct
        if self.maxerror_us is None:
            return -1
        address = ctypes.addressof(timex._obj)
        ctypes.c_long.from_address(address + 3 * _LONG).value = self.maxerror_us
        ctypes.c_int.from_address(address + 5 * _LONG).value = _STA_UNSYNC
        return _TIME_ERROR


def _host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, kernel_maxerror_us: int | None,
          timesyncd: str = "not running", timedated: str | None = None) -> None:
    """The host the writer asks (its default `clock_synced`): the kernel, timesyncd's
    runtime directory and mark ("not running", "running", "synchronized"), and what
    timedated's NTPSynchronized ("yes", "no"; None: it cannot be asked)."""
    monkeypatch.setattr(_FakeLibc, "maxerror_us", kernel_maxerror_us)
    monkeypatch.setattr("ctypes.CDLL", _FakeLibc)
    run_dir = tmp_path / "timesync"
    if timesyncd != "not running":
        run_dir.mkdir(exist_ok=True)
    if timesyncd == "synchronized":
        (run_dir / "synchronized").touch()
    monkeypatch.setattr(clocksync, "TIMESYNCD_DIR", run_dir)
    printed = {"yes": "b true", "no": "b false"}.get(timedated or "")  # as busctl prints it
    command = (sys.executable, "-c", f"print({printed!r})") if printed else (
        str(tmp_path / "no-busctl"),)
    monkeypatch.setattr(clocksync, "TIMEDATED_ASK", command)


def _old_and_new_flight(tmp_path: Path) -> tuple[Path, Writer]:
    """A flight stamped 40 days ago by a synchronised clock, and a writer to fly the next
    one with the host's own word on the clock (max_age_days 30)."""
    settings = RecorderSettings(dir=str(tmp_path / "flights"), max_age_days=30,
                                min_free_mb=0)
    writer = Writer(settings)
    synced = writer.clock_synced
    writer.clock_synced = lambda: True
    old = _flight(writer, "2026-10-18T10-00-00Z")
    _age(old, 40)
    writer.clock_synced = synced
    return old, writer


def test_a_clock_chrony_keeps_is_synchronised_though_the_kernel_says_time_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chronyd without `rtcsync` leaves STA_UNSYNC set (adjtimex returns TIME_ERROR) while
    it keeps the clock to a few ms and says so in maxerror: read by the flag, such a host
    never pruned by age. systemd-timedated reads maxerror (< 16 s) since v243; so do we."""
    old, writer = _old_and_new_flight(tmp_path)
    _host(monkeypatch, tmp_path, kernel_maxerror_us=20_000)  # 20 ms
    new = _flight(writer, "2026-11-27T10-00-00Z")
    assert (new / folders.CLOCK_SYNCED_NAME).exists()
    assert not old.exists()


def test_a_kernel_at_its_maximum_error_is_not_synchronised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At boot (and 8.9 h after the last NTP update) maxerror is at its 16 s cap."""
    old, writer = _old_and_new_flight(tmp_path)
    _host(monkeypatch, tmp_path, kernel_maxerror_us=16_000_000, timedated="yes")
    new = _flight(writer, "2026-11-27T10-00-00Z")
    assert not (new / folders.CLOCK_SYNCED_NAME).exists()
    assert old.exists()


# Where adjtimex is denied (under the unit): systemd-timesyncd (Raspberry Pi OS's and
# Ubuntu's NTP client) answers while it runs, by the mark it touches once it has
# synchronised; with chrony or ntpd (no timesyncd) the daemon, asking only the kernel and
# that mark, never pruned by age: systemd-timedated reads the kernel in its own process
# and answers anyone over D-Bus.
@pytest.mark.parametrize(("source", "unsynced", "synced"), [
    ("timesyncd", "running", "synchronized"),
    ("timedated", "no", "yes"),
])
def test_under_the_unit_the_clock_is_synced_by_timesyncds_mark_or_timedated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, unsynced: str,
        synced: str) -> None:
    old, writer = _old_and_new_flight(tmp_path)
    _host(monkeypatch, tmp_path, kernel_maxerror_us=None, **{source: unsynced})
    first = _flight(writer, "2026-11-27T10-00-00Z")
    assert not (first / folders.CLOCK_SYNCED_NAME).exists() and old.exists()
    _host(monkeypatch, tmp_path, kernel_maxerror_us=None, **{source: synced})
    second = _flight(writer, "2026-11-27T11-00-00Z")
    assert (second / folders.CLOCK_SYNCED_NAME).exists() and not old.exists()


def test_with_no_source_to_ask_the_clock_is_not_synchronised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old, writer = _old_and_new_flight(tmp_path)
    _host(monkeypatch, tmp_path, kernel_maxerror_us=None)  # no timesyncd, no timedated
    new = _flight(writer, "2026-11-27T10-00-00Z")
    assert not (new / folders.CLOCK_SYNCED_NAME).exists() and old.exists()
