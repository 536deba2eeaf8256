"""Whether the wall clock is synchronised, and who says so (clocksync.py): which source is
asked when, and what each answer means. Pure: sources injected, or pointed at a temporary
directory and at stand-in commands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from offboardd.recorder import clocksync
from offboardd.recorder.clocksync import ClockSync, clock_sync


def _never() -> Callable[[], bool | None]:
    def ask() -> bool | None:
        raise AssertionError("asked, though an earlier source had answered")
    return ask


def test_the_kernel_answers_first_by_its_maximum_error() -> None:
    assert clock_sync(lambda: 20_000, _never(), _never()) == ClockSync(True, "kernel")
    assert clock_sync(lambda: 15_999_999, _never(), _never()).synced
    assert clock_sync(lambda: 16_000_000, _never(), _never()) == ClockSync(False, "kernel")


def test_where_the_kernel_may_not_be_asked_timesyncd_answers_while_it_runs() -> None:
    """Under the unit (adjtimex denied) on a timesyncd host, timedated is never spawned:
    not at a field with no network either, where timesyncd has not synchronised."""
    assert clock_sync(lambda: None, lambda: True, _never()) == ClockSync(True,
                                                                        "systemd-timesyncd")
    assert clock_sync(lambda: None, lambda: False, _never()) == ClockSync(False,
                                                                         "systemd-timesyncd")


def test_without_timesyncd_timedated_answers_then_nobody() -> None:
    assert clock_sync(lambda: None, lambda: None, lambda: True) == ClockSync(
        True, "systemd-timedated")
    assert clock_sync(lambda: None, lambda: None, lambda: False) == ClockSync(
        False, "systemd-timedated")
    assert clock_sync(lambda: None, lambda: None, lambda: None) == ClockSync(False, "")


def test_timesyncd_runs_while_its_runtime_directory_exists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "timesync"
    monkeypatch.setattr(clocksync, "TIMESYNCD_DIR", run_dir)
    assert clocksync.timesyncd_synced() is None  # not running: another client, or none
    run_dir.mkdir()
    assert clocksync.timesyncd_synced() is False  # running, not synchronised yet
    (run_dir / "synchronized").touch()
    assert clocksync.timesyncd_synced() is True


@pytest.mark.parametrize(("script", "answer"), [
    ("print('b true')", True),
    ("print('b false')", False),
    # timedated could not be reached (no system bus; busctl says why on stderr)
    ("import sys; sys.exit('Failed to connect to bus: No such file or directory')", None),
    ("print('maybe')", None),
    ("import time; time.sleep(5)", None),  # a timedated that does not answer in time
])
def test_timedated_is_read_from_busctl(script: str, answer: bool | None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocksync, "TIMEDATED_ASK", (sys.executable, "-c", script))
    monkeypatch.setattr(clocksync, "TIMEDATED_TIMEOUT_S", 0.5)
    assert clocksync.timedated_synced() is answer


def test_no_busctl_is_no_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocksync, "TIMEDATED_ASK", (str(tmp_path / "busctl"),))
    assert clocksync.timedated_synced() is None


def test_the_command_asks_timedated_for_ntpsynchronized_only() -> None:
    """One property (Properties.Get): `timedatectl show -p` fetches them all, and timedated
    computes every one (it asks systemd for the NTP units and reads the RTC)."""
    assert clocksync.TIMEDATED_ASK == (
        "busctl", "get-property", "org.freedesktop.timedate1", "/org/freedesktop/timedate1",
        "org.freedesktop.timedate1", "NTPSynchronized")


def test_this_machines_kernel_is_read_without_a_write() -> None:
    """A live read: an int (us) where adjtimex may be asked, None where it may not."""
    maxerror_us = clocksync.kernel_maxerror_us()
    assert maxerror_us is None or 0 <= maxerror_us <= 16_000_000
