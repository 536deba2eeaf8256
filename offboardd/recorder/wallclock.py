"""The recorder's wall clock: stamps that a step cannot reorder.

A companion computer without a real-time clock boots with its wall clock at 1970 or at
fake-hwclock's last save (its last shutdown: days or weeks back after a month in a
drawer), and NTP steps it later, forward or back, perhaps mid-flight; a wrong clock may
also be ahead (whether it is synchronised is clocksync.py's question). So:
- `RecordingClock`: Unix-time stamps read from the wall clock once per anchor (a flight's
  start) and advanced by the monotonic clock between anchors, so a step mid-flight cannot
  send a flight's stamps back, nor make its duration days long.

This module must not decide what is pruned, nor write files.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = ["RecordingClock", "shifted"]


class RecordingClock:
    """Unix-time stamps: the wall clock read at `anchor()`, then the monotonic time since.

    Between anchors a step of the wall clock changes nothing; `anchor()` takes it in and
    returns by how much the stamps moved (the step), so what was stamped before it (the
    pre-roll) can be moved onto the new stamps."""

    def __init__(self, wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self._wall = wall
        self._monotonic = monotonic
        self._wall0_s = wall()
        self._mono0_s = monotonic()

    def anchor(self) -> float:
        """Read the wall clock again; return the step of the stamps (s, + forward)."""
        before_s = self.unix_s()
        self._wall0_s, self._mono0_s = self._wall(), self._monotonic()
        return self._wall0_s - before_s

    def unix_s(self) -> float:
        return self._wall0_s + (self._monotonic() - self._mono0_s)

    def unix_us(self) -> int:
        return int(self.unix_s() * 1e6)


def shifted(tlog: Iterable[tuple[int, Sequence[bytes | bytearray]]],
            journal: Iterable[dict[str, Any]], shift_s: float,
            ) -> tuple[list[tuple[int, Sequence[bytes | bytearray]]], list[dict[str, Any]]]:
    """A pre-roll's tlog chunks and journal lines moved by `shift_s` onto its flight's
    stamps (what `RecordingClock.anchor` returned when the flight started)."""
    shift_us = round(shift_s * 1e6)
    return ([(t_us + shift_us, frames) for t_us, frames in tlog],
            [{**line, "t": round(line["t"] + shift_s, 4)} if shift_s else line
             for line in journal])
