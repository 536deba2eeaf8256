"""Whether the host's wall clock is synchronised (NTP), and who said so.

Asked by the recorder's writer thread when a flight opens or closes and by its budget check
(age pruning trusts the clock only then: folders.py), and by `offboardd doctor`; never on
the control loop. The first source that can answer decides:

1. The kernel: adjtimex(2) with modes 0, a read any user may make. Synchronised when its
   maximum error is under 16 s (NTP_PHASE_LIMIT), the test systemd-timedated makes since
   v243. Not STA_UNSYNC (adjtimex's TIME_ERROR): chronyd leaves that flag set unless
   `rtcsync` is configured, so a clock chrony keeps to the millisecond read unsynchronised.
   Under the shipped unit the read is denied (EPERM): systemd's filters block adjtimex and
   clock_adjtime whole, whatever the modes (ProtectClock=yes installs @clock as a deny list,
   and SystemCallFilter=@system-service holds neither: docs/recorder.md).
2. systemd-timesyncd, while it runs (its RuntimeDirectory, /run/systemd/timesync, exists):
   the mark it touches once it has synchronised the clock. Two stats.
3. systemd-timedated over D-Bus: its NTPSynchronized property (what `timedatectl` shows as
   "System clock synchronized"), computed from adjtimex in timedated's own process (not
   under our filter) for any NTP client: chrony, ntpd. Reading it needs no privilege (its
   bus policy lets every user ask). `busctl get-property` asks for that one property;
   `timedatectl show -p` fetches them all (timedated then asks systemd for the NTP units
   and reads the RTC). A subprocess, so it is asked only where timesyncd does not run.

No source: not synchronised, so nothing goes by age (the safe side).
"""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KERNEL", "TIMEDATED", "TIMESYNCD", "ClockSync", "clock_sync", "clock_synced",
           "kernel_maxerror_us", "timedated_synced", "timesyncd_synced"]

KERNEL, TIMESYNCD, TIMEDATED = "kernel", "systemd-timesyncd", "systemd-timedated"
NTP_PHASE_LIMIT_US = 16_000_000  # the kernel's maxerror cap: at it, nothing vouches for the clock
TIMESYNCD_DIR = Path("/run/systemd/timesync")  # timesyncd's RuntimeDirectory: gone when it stops
TIMESYNCD_MARK_NAME = "synchronized"  # touched at its first synchronisation of each boot
TIMEDATED_ASK: tuple[str, ...] = ("busctl", "get-property", "org.freedesktop.timedate1",
                                   "/org/freedesktop/timedate1", "org.freedesktop.timedate1",
                                   "NTPSynchronized")
# timedated is started on demand (bus activation): a few hundred ms on a Pi when cold. The
# writer asks twice around a flight's close, within the 3 s the recorder waits for it.
TIMEDATED_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class ClockSync:
    synced: bool
    source: str  # who answered: KERNEL, TIMESYNCD, TIMEDATED; "" when none could


class _Timex(ctypes.Structure):
    """struct timex's head as the C library's adjtimex takes it: `long` fields, 4 or 8 bytes
    with the platform (armhf, aarch64, x86_64 alike), then room for the rest."""

    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long),
                ("status", ctypes.c_int), ("_rest", ctypes.c_byte * 224)]


def kernel_maxerror_us() -> int | None:
    """The kernel's maximum error of the wall clock (us); None when adjtimex is denied."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the process's own libc: no ldconfig run
        timex = _Timex()  # zeroed on every call: modes 0 is a read, any other bit a write
        state = int(libc.adjtimex(ctypes.byref(timex)))
    except (OSError, AttributeError):
        return None
    return None if state < 0 else int(timex.maxerror)


def timesyncd_synced() -> bool | None:
    """timesyncd's word while it runs; None when it does not (another client, or none)."""
    if not TIMESYNCD_DIR.is_dir():
        return None
    return (TIMESYNCD_DIR / TIMESYNCD_MARK_NAME).exists()


def timedated_synced() -> bool | None:
    """timedated's NTPSynchronized; None when it cannot be asked (no busctl, no bus)."""
    try:
        done = subprocess.run(TIMEDATED_ASK, capture_output=True, text=True, check=False,
                              timeout=TIMEDATED_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"b true": True, "b false": False}.get(done.stdout.strip())  # busctl's print


def clock_sync(kernel: Callable[[], int | None] = kernel_maxerror_us,
               timesyncd: Callable[[], bool | None] = timesyncd_synced,
               timedated: Callable[[], bool | None] = timedated_synced) -> ClockSync:
    """The first answer of the kernel, timesyncd, timedated (module docstring)."""
    maxerror_us = kernel()
    if maxerror_us is not None:
        return ClockSync(maxerror_us < NTP_PHASE_LIMIT_US, KERNEL)
    for source, ask in ((TIMESYNCD, timesyncd), (TIMEDATED, timedated)):
        synced = ask()
        if synced is not None:
            return ClockSync(synced, source)
    return ClockSync(False, "")


def clock_synced() -> bool:
    """What the recorder asks: True only when a source says the clock is synchronised."""
    return clock_sync().synced
