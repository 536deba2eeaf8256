"""Absolute-deadline stream timing: no jitter accumulation, missed ticks counted, no burst."""

from __future__ import annotations

import itertools
import random

import pytest

from offboardd.core.actions import SendSetpoint
from offboardd.core.commands import SetSetpoint
from offboardd.core.setpoints import PositionNed
from offboardd.core.stream import StreamClock

from .bench import Bench


def test_deadlines_are_absolute_so_late_wakeups_do_not_drift() -> None:
    clock = StreamClock(0.05)
    clock.start(10.0)
    rng = random.Random(5)
    sends = []
    for k in range(1, 2001):
        now = 10.0 + k * 0.05 + rng.uniform(0.0, 0.02)  # every wake-up up to 20 ms late
        assert clock.tick_due(now)
        clock.record_send(now)
        sends.append(now)
    # after 2000 late wake-ups the schedule is still on t0 + k * period
    assert clock.next_deadline() == pytest.approx(10.0 + 2001 * 0.05)
    assert clock.missed_ticks == 0
    assert clock.worst_gap_s < 0.05 + 0.02 + 1e-9
    assert clock.achieved_rate_hz(sends[-1]) == pytest.approx(20.0, rel=0.02)


def test_missed_ticks_are_counted_and_not_burst() -> None:
    clock = StreamClock(0.05)
    clock.start(0.0)
    assert clock.tick_due(0.05)
    clock.record_send(0.05)
    # the shell stalls for 0.32 s: deadlines 0.10 .. 0.35 pass (6 of them)
    assert clock.tick_due(0.37)
    clock.record_send(0.37)
    assert not clock.tick_due(0.37)  # one send, not a burst of six
    assert clock.missed_ticks == 5
    assert clock.next_deadline() == pytest.approx(0.40)
    assert clock.worst_gap_s == pytest.approx(0.32)


def test_not_due_before_the_deadline() -> None:
    clock = StreamClock(0.1)
    clock.start(0.0)
    assert not clock.tick_due(0.0999)
    assert clock.tick_due(0.1)
    assert not clock.tick_due(0.1)


def test_engine_sends_a_new_setpoint_at_once_and_keeps_the_schedule() -> None:
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    clock = b.engine.stream
    next_before = clock.next_deadline()
    b.step((next_before - b.now) / 2)  # between two ticks
    t = b.now
    b.feed(SetSetpoint("sp", PositionNed(1, 0, -5)))
    assert b.setpoint_times(since=t) == [t]
    assert clock.next_deadline() == next_before  # schedule carries on
    b.step(1.0)
    times = b.setpoint_times(since=t + 1e-9)
    assert times[0] == pytest.approx(next_before)
    assert all(
        abs((x - clock._t0) / clock.period_s - round((x - clock._t0) / clock.period_s)) < 1e-6  # type: ignore[operator]
        for x in times
    )


def test_a_setpoint_within_a_period_of_the_last_extra_goes_when_the_period_is_up() -> None:
    """A commander at the stream's own rate, one message late: the next one must not wait
    for the next tick (up to a period) but only until a period has passed since the extra
    send before it, which keeps extra sends at most one a period."""
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    clock = b.engine.stream
    period_s = clock.period_s
    tick = clock.next_deadline()
    b.step(tick + 0.6 * period_s - b.now)  # a message late by 0.6 period: sent at once
    extra_s = b.now
    b.feed(SetSetpoint("late", PositionNed(1, 0, -5)))
    assert b.setpoint_times(since=extra_s) == [extra_s]
    b.step(0.5 * period_s)  # the tick at tick + period goes by; then the next, on time
    on_time_s = b.now
    assert on_time_s - extra_s < period_s
    b.feed(SetSetpoint("on time", PositionNed(2, 0, -5)))
    assert b.setpoint_times(since=on_time_s) == []  # not yet: one extra send a period
    b.step(period_s)
    sent = [(t, a.setpoint) for t, a in b.actions(SendSetpoint, since=on_time_s)]
    # out a period after the last extra send, not at the next tick (tick + 2 periods)
    assert sent[0][0] == pytest.approx(extra_s + period_s)
    assert sent[0][0] < tick + 2 * period_s - 1e-6
    assert sent[0][1] == PositionNed(2, 0, -5)
    assert clock.next_deadline() == pytest.approx(tick + 3 * period_s)  # schedule unmoved


def test_a_setpoint_flood_gets_at_most_one_extra_send_a_period() -> None:
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    clock = b.engine.stream
    period_s = clock.period_s
    t0 = b.now
    for i in range(2000):  # a setpoint every millisecond for two seconds
        b.feed(SetSetpoint(f"sp{i}", PositionNed(0.001 * i, 0, -5)))
        b.step(0.001)
    times = b.setpoint_times(since=t0)
    on_grid = [t for t in times if abs((t - clock._t0) / period_s  # type: ignore[operator]
                                       - round((t - clock._t0) / period_s)) < 1e-6]  # type: ignore[operator]
    extras = sorted(set(times) - set(on_grid))
    assert len(on_grid) >= 2.0 / period_s - 1
    assert all(b2 - a2 >= period_s - 1e-9 for a2, b2 in itertools.pairwise(extras))
    assert len(times) <= 2 * (2.0 / period_s) + 2
    # the newest goes out within a period of its arrival
    newest_s = b.now - 0.001
    b.step(period_s)
    first_t, first = b.actions(SendSetpoint, since=newest_s)[0]
    assert first.setpoint == PositionNed(0.001 * 1999, 0, -5)
    assert first_t - newest_s <= period_s + 1e-9


def test_engine_counts_missed_ticks_when_polled_late() -> None:
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    sent_before = len(b.setpoint_times())
    missed_before = b.engine.stream.missed_ticks
    b.now += 0.5  # the shell was stuck for half a second
    b.log.extend((b.now, a) for a in b.engine.poll(b.now))
    assert len(b.setpoint_times()) == sent_before + 1
    assert b.engine.stream.missed_ticks >= missed_before + 9
    snap = b.engine.snapshot(b.now)
    assert snap.missed_ticks == b.engine.stream.missed_ticks
    assert snap.stream_worst_gap_s >= 0.5


def test_gap_window_forgives_a_gap_open_at_reset_but_sees_new_ones() -> None:
    clock = StreamClock(0.05)
    clock.start(0.0)
    assert clock.window_gap_s(0.7) == pytest.approx(0.7)  # the open gap counts
    clock.reset_window(0.7)
    assert clock.tick_due(0.7)
    clock.record_send(0.7)  # ends the stall that began before the reset
    assert clock.window_gap_s(0.7) == 0.0
    assert clock.worst_gap_s == pytest.approx(0.7)  # the overall statistic keeps it
    assert clock.window_gap_s(0.9) == pytest.approx(0.2)


def test_a_tick_a_nanosecond_early_is_sent_once() -> None:
    """The due test and the schedule's advance forgive the same nanosecond: a wake-up just
    before a deadline sends it and moves on (it was sent again at the next wake-up)."""
    clock = StreamClock(0.05)
    clock.start(12345.0)
    deadline = clock.next_deadline()
    early = deadline - 5e-10
    assert clock.tick_due(early)
    assert clock.next_deadline() > deadline
    assert not clock.tick_due(early)
