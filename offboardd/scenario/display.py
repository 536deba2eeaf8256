"""Show scenario Progress on a terminal: a progress bar per leg, updated in place on a TTY,
plain lines (a few per leg) when the output is a file or a pipe (CI logs, journald).

Only formatting and writing to the given stream; it never talks to the daemon.
"""

from __future__ import annotations

import shutil
from typing import TextIO

from offboardd.scenario.report import Progress

_BAR_CELLS = 20
_PLAIN_PERIOD_S = 1.0  # one plain line a second per leg is enough for a log


def bar(fraction: float, cells: int = _BAR_CELLS) -> str:
    filled = round(min(1.0, max(0.0, fraction)) * cells)
    return "[" + "#" * filled + "-" * (cells - filled) + "]"


def format_progress(p: Progress) -> str:
    """One line: leg, bar, percentage, daemon phase / PX4 mode, position, time."""
    if p.position_ned_m is None:
        where = "position unknown"
    else:
        north_m, east_m, down_m = p.position_ned_m
        where = f"N{north_m:6.1f} E{east_m:6.1f} alt{-down_m:5.1f} m"
    status = f"{p.phase}/{p.fc_mode}" + ("" if p.armed else " disarmed")
    return (f"{p.leg_index + 1}/{p.leg_count} {p.leg_name:<14} {bar(p.fraction)} "
            f"{round(p.fraction * 100):3d}%  {status:<24} {where}  {p.elapsed_s:5.1f} s")


class ProgressDisplay:
    """Callable as the runner's `on_progress`."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self._leg: int | None = None
        self._last_plain_s = -1e9
        self._open_line = False  # a TTY line being redrawn, not yet ended

    def __call__(self, p: Progress) -> None:
        if self.tty:
            self._tty(p)
        else:
            self._plain(p)

    def close(self) -> None:
        """End a line left open (after a failure or Ctrl-C mid-leg)."""
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False

    def _tty(self, p: Progress) -> None:
        width = shutil.get_terminal_size((100, 24)).columns - 1
        # \r back to the start of the line, \x1b[K erase the rest (ECMA-48 EL)
        self.stream.write("\r" + format_progress(p)[:width] + "\x1b[K")
        self._open_line = True
        if p.leg_done:
            self.stream.write("\n")
            self._open_line = False
        self.stream.flush()

    def _plain(self, p: Progress) -> None:
        new_leg = p.leg_index != self._leg
        due = p.elapsed_s - self._last_plain_s >= _PLAIN_PERIOD_S
        if new_leg or due or p.leg_done:
            end = "" if not p.leg_done else "  done" if p.fraction >= 1.0 else "  FAILED"
            self.stream.write(format_progress(p) + end + "\n")
            self.stream.flush()
            self._leg = p.leg_index
            self._last_plain_s = p.elapsed_s
