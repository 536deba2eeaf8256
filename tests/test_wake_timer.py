"""The runtime's timer on a real event loop: a timerfd wakes once, at the instant (never
before it), re-arming replaces the instant, and the call_at fallback behaves the same."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import time

import pytest

from offboardd.wake_timer import CallAtWake, TimerFdWake, WakeTimer, wake_timer

pytestmark = pytest.mark.integration


async def _fires(timer_of: type[TimerFdWake] | type[CallAtWake]) -> None:
    loop = asyncio.get_running_loop()
    woke: list[float] = []
    fired = asyncio.Event()

    def wake() -> None:
        woke.append(loop.time())
        fired.set()

    timer: WakeTimer = (TimerFdWake(loop, wake) if timer_of is TimerFdWake
                        else CallAtWake(loop, wake, early_s=0.0))
    try:
        first = loop.time() + 0.5
        timer.arm(first)
        when_s = loop.time() + 0.02
        timer.arm(when_s)  # replaces the first instant
        await asyncio.wait_for(fired.wait(), 2.0)
        assert woke[0] >= when_s  # never early: the stream's ticks count on it
        assert woke[0] - when_s < 0.05  # (slack for a loaded CI host)
        fired.clear()
        timer.arm(loop.time() - 1.0)  # already due: at once
        await asyncio.wait_for(fired.wait(), 2.0)
        await asyncio.sleep(0.6)  # past `first`: it was replaced, nothing more comes
        assert len(woke) == 2
    finally:
        timer.close()
        timer.close()  # (twice is harmless: the runtime closes on every exit)


async def test_timerfd_wakes_once_at_the_instant() -> None:
    await _fires(TimerFdWake)


async def test_call_at_fallback_wakes_the_same_way() -> None:
    await _fires(CallAtWake)


async def test_linux_gets_the_exact_timer_and_a_closed_one_releases_its_descriptor() -> None:
    loop = asyncio.get_running_loop()
    timer = wake_timer(loop, lambda: None, early_s=0.0015)
    assert isinstance(timer, TimerFdWake) and timer.exact
    timer.arm(loop.time() + 10.0)
    fd = timer._fd
    timer.close()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed (and no longer read by the loop: remove_reader ran first)


async def test_a_steady_step_is_left_to_the_kernel_and_any_other_instant_replaces_it() -> None:
    """After one expiry the timer learns the step; while the next instant is one step on,
    no system call is made, and still never a wake-up early. An instant off that grid,
    asked at any time, replaces it: nothing goes off at the grid's next point."""
    loop = asyncio.get_running_loop()
    step_s = 0.01
    woke: list[float] = []
    asked: list[float] = []
    steps = 12
    done = asyncio.Event()

    def wake() -> None:
        woke.append(loop.time())
        if len(woke) < steps:
            asked.append(start + len(woke) * step_s)  # as the stream does: t0 + k * period
            timer.arm(asked[-1])
        done.set()

    timer = TimerFdWake(loop, wake)
    try:
        start = loop.time() + step_s
        asked.append(start)
        timer.arm(start)
        while len(woke) < steps:
            done.clear()
            await asyncio.wait_for(done.wait(), 2.0)
        assert all(w >= a for w, a in zip(woke, asked, strict=True))  # never early
        await asyncio.sleep(3 * step_s)
        assert len(woke) == steps  # not re-armed after the last: the grid stopped with it
        # the first instant, the step learned, the stop: 3 (more on a loaded host, where a
        # wake-up late by a whole step finds the next instant behind the grid: set anew)
        assert timer.settime_calls < steps

        before = timer.settime_calls
        asked.append(loop.time() + step_s)
        timer.arm(asked[-1])  # a new grid...
        await asyncio.sleep(step_s / 2)
        asked[-1] = loop.time() + 4 * step_s
        timer.arm(asked[-1])  # ...replaced before its first point, from outside a wake-up
        await asyncio.sleep(7 * step_s)
        assert len(woke) == steps + 1 and woke[-1] >= asked[-1]
        assert timer.settime_calls == before + 2
    finally:
        timer.close()


@pytest.mark.parametrize("rate_hz", [20, 50, 100, 30])
async def test_a_streams_float_instants_stay_on_the_grid(rate_hz: float) -> None:
    """20,000 ticks of a stream's instants (t0 + k * period, floats rounded up to the ns),
    each armed as from the callback: the kernel's next expiry is never before the instant
    asked, at most 2 µs after it, and the grid is laid anew only when it drifted that far.
    A step learned from two rounded instants is off by up to ~1.3 ns (1/30 s is no whole
    number of ns), so the 1 µs lag lasts 750 steps at least. (How often depends on where
    t0 falls, i.e. on the clock: 2 to 4 times at 100 Hz were seen; the step learned from
    the lagged grid, before 25cd564, laid it 46 times at 30 Hz.) The instants are an hour
    ahead, so nothing goes off meanwhile."""
    loop = asyncio.get_running_loop()
    timer = TimerFdWake(loop, lambda: None)
    try:
        t0_s = loop.time() + 3600.0 + 0.123456789
        for k in range(20_000):
            timer._in_expiry, timer._rearmed = True, False  # as _expired sets them
            when_s = t0_s + k / rate_hz
            timer.arm(when_s)
            timer._in_expiry = False
            lag_ns = timer._value_ns - math.ceil(when_s * 1e9)
            assert 0 <= lag_ns <= 2_000, (k, lag_ns)
        assert timer.settime_calls <= 2 + 20_000 // 750
    finally:
        timer.close()


async def test_a_late_loop_skips_the_missed_steps_and_keeps_the_grid() -> None:
    """Blocked for several steps: the expiries count as one wake-up; the next instant asked
    (one step after the first missed one) is already past, so it goes off at once."""
    loop = asyncio.get_running_loop()
    step_s = 0.01
    woke: list[float] = []
    fired = asyncio.Event()
    start = loop.time() + step_s
    missed = start + 2 * step_s

    def wake() -> None:
        woke.append(loop.time())
        if len(woke) <= 2:
            timer.arm(start + len(woke) * step_s)  # one step on, then one the loop slept through
        fired.set()

    timer = TimerFdWake(loop, wake)
    try:
        timer.arm(start)
        await asyncio.wait_for(fired.wait(), 2.0)
        fired.clear()
        time.sleep(6 * step_s)  # noqa: ASYNC251 (the loop blocked: several expiries)
        while len(woke) < 3:
            await asyncio.wait_for(fired.wait(), 2.0)
            fired.clear()
        assert woke[-1] >= missed
        await asyncio.sleep(3 * step_s)
        # one wake-up for the expiries slept through, one for the missed instant, set
        # alone (no grid after it): nothing else
        assert len(woke) == 3
    finally:
        timer.close()


_UNDER_MDWE = """
import asyncio, ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(65, 1, 0, 0, 0) == 0, ctypes.get_errno()  # PR_SET_MDWE, REFUSE_EXEC_GAIN
try:
    mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
except OSError:
    pass
else:
    raise SystemExit("W+X memory was not refused")
from offboardd.wake_timer import TimerFdWake, wake_timer

async def main():
    loop = asyncio.get_running_loop()
    fired = asyncio.Event()
    timer = wake_timer(loop, fired.set, early_s=0.0015)
    assert isinstance(timer, TimerFdWake)
    timer.arm(loop.time() + 0.01)
    await asyncio.wait_for(fired.wait(), 2.0)
    timer.close()
    print("fired")

asyncio.run(main())
"""


def test_the_timerfd_works_where_writable_code_is_refused() -> None:
    """The systemd unit sets MemoryDenyWriteExecute=yes; the timer calls libc through ctypes,
    which must not need writable executable memory (no callbacks). The kernel's own
    equivalent, PR_SET_MDWE (Linux 6.3), is set in a child before the timer is made."""
    done = subprocess.run([sys.executable, "-c", _UNDER_MDWE], capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "fired", done.stderr
