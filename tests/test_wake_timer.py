"""The runtime's timer on a real event loop: a timerfd wakes once, at the instant (never
before it), re-arming replaces the instant, and the call_at fallback behaves the same."""

from __future__ import annotations

import asyncio
import os

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
