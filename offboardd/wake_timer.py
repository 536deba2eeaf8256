"""The runtime's one timer: a wake-up at an exact instant of the event loop's clock.

asyncio's timers wake through epoll_wait's timeout, which counts whole milliseconds rounded
up: a stream tick asked for at t runs anywhere in [t, t + 1 ms). For a steady stream the
runtime asked 1.5 ms early and slept the rest, two wake-ups a tick (`CallAtWake`). On
Linux, `TimerFdWake` arms a timerfd at the instant itself (absolute, on CLOCK_MONOTONIC,
the clock of `loop.time()`): one more descriptor in the loop's epoll set, and one wake-up
per tick, at the instant (within the kernel's timer slack, 50 µs by default). Measured at
20 Hz under the px4 load, 6 interleaved pairs of 20 s: 1.50 -> 1.40 % of a core, p99
interval deviation 0.3-0.8 -> 0.19-0.47 ms; at 100 Hz 5.8 -> 4.1 % (bench/stream-plan.md).

Python 3.11 has no `os.timerfd_create` (3.13 has), hence libc through ctypes. Where that
is missing (not Linux), `wake_timer` returns a `CallAtWake`.

A steady stream asks for the same step every time: when the callback arms the next instant
one step after the last, the timer is left periodic (the kernel's `it_interval`), and while
each next instant, armed from the callback, falls on that grid, arming is bookkeeping, not
a system call (`timerfd_settime` cost ~26 µs a tick here, cold after the wake-up:
bench/stream-plan.md). Any other instant is set as before; a callback that arms nothing
stops the grid.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import os
from collections.abc import Callable
from typing import Protocol

_CLOCK_MONOTONIC = 1  # <time.h>; time.monotonic() and so loop.time() read this clock
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC
_TFD_TIMER_ABSTIME = 1
_NS_PER_S = 1_000_000_000
# The kernel's grid is laid this much after the instant it is learned from, and an instant
# asked for stands on it while the grid is no more than twice that late: a stream's float
# instants (t0 + k * period) round to the nanosecond either way, and an interval learned
# from two of them is a nanosecond off; the grid stays usable for a thousand steps or so
# before it is laid anew. Never early; 1 µs late is nothing beside the kernel's 50 µs slack.
_GRID_LAG_NS = 1_000
_ON_THE_GRID_NS = 2 * _GRID_LAG_NS


class WakeTimer(Protocol):
    exact: bool  # wakes at the instant, never before it (else up to early_s before)

    def arm(self, when_s: float) -> None:
        """Call back once at `when_s` (loop time); replaces what was armed."""

    def close(self) -> None:
        """Disarm for good and release what the timer holds."""


def wake_timer(loop: asyncio.AbstractEventLoop, callback: Callable[[], None], *,
               early_s: float) -> WakeTimer:
    """A `TimerFdWake` where the OS has timerfd, else a `CallAtWake` `early_s` early."""
    try:
        return TimerFdWake(loop, callback)
    except OSError:
        return CallAtWake(loop, callback, early_s)


class CallAtWake:
    """asyncio's own timer, asked `early_s` early: the caller sleeps the rest (at most
    `early_s`) where precision matters."""

    exact = False

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None],
                 early_s: float) -> None:
        self._loop = loop
        self._callback = callback
        self._early_s = early_s
        self._handle: asyncio.TimerHandle | None = None

    def arm(self, when_s: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop.call_at(when_s - self._early_s, self._callback)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> ctypes.CDLL:
    # The interpreter's own symbols, libc's among them (find_library would run ldconfig).
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "timerfd_create"):
        raise OSError("no timerfd in this C library")
    return libc


class TimerFdWake:
    """A timerfd, read by the loop: the callback runs in the pass after it expires."""

    exact = True

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._libc = libc = _libc()
        fd = libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        self._fd = fd
        self._loop = loop
        self._callback = callback
        self._spec = _Itimerspec()
        self._spec_ref = ctypes.byref(self._spec)
        self._value_ns = 0  # the instant the kernel goes off at next (or went off at last)
        self._interval_ns = 0  # then every this often; 0: once
        self._asked_ns = 0  # the instant last asked for (the grid is laid _GRID_LAG_NS after)
        self._in_expiry = False  # inside the callback
        self._rearmed = False  # armed since the last expiry was read
        self.settime_calls = 0  # (counted for tests)
        try:
            loop.add_reader(fd, self._expired)
        except BaseException:
            os.close(fd)
            raise

    def arm(self, when_s: float) -> None:
        if self._fd < 0:  # (closed: the daemon is stopping, nothing is to come)
            return
        # Rounded up: expiring a nanosecond before `when_s` would be a wake-up too early.
        when_ns = max(1, math.ceil(when_s * _NS_PER_S))
        step_ns, self._asked_ns = when_ns - self._asked_ns, when_ns
        from_expiry = self._in_expiry and not self._rearmed  # the next instant, asked at once
        self._rearmed = True
        if from_expiry:
            on_grid_ns = self._value_ns + self._interval_ns  # where the kernel goes off next
            if self._interval_ns and 0 <= on_grid_ns - when_ns <= _ON_THE_GRID_NS:
                self._value_ns = on_grid_ns  # it goes off then by itself
                return
            if step_ns > 0:  # the step from the last instant asked: perhaps the next one's
                self._set(when_ns + _GRID_LAG_NS, step_ns)
                return
        # (Setting also clears an expiry not yet read: only the new instant counts.)
        self._set(when_ns, 0)

    def close(self) -> None:
        if self._fd < 0:
            return
        self._set(0, 0)
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = -1

    def _set(self, when_ns: int, interval_ns: int) -> None:
        spec = self._spec
        spec.it_value.tv_sec, spec.it_value.tv_nsec = divmod(when_ns, _NS_PER_S)
        spec.it_interval.tv_sec, spec.it_interval.tv_nsec = divmod(interval_ns, _NS_PER_S)
        if self._libc.timerfd_settime(self._fd, _TFD_TIMER_ABSTIME, self._spec_ref, None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")
        self.settime_calls += 1
        self._value_ns, self._interval_ns = when_ns, interval_ns

    def _expired(self) -> None:
        try:
            expiries = os.read(self._fd, 8)  # how many since the last read; reading clears it
        except BlockingIOError:
            return  # re-armed after it expired, before this pass: the new instant counts
        # More than one: the loop was late by whole steps, and the kernel is on the next.
        self._value_ns += (int.from_bytes(expiries, "little") - 1) * self._interval_ns
        self._in_expiry, self._rearmed = True, False
        try:
            self._callback()
        finally:
            self._in_expiry = False
            if not self._rearmed and self._interval_ns and self._fd >= 0:
                self._set(0, 0)  # not armed again: each instant is asked for once
