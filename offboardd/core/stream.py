"""The setpoint stream's clock: absolute deadlines `t0 + k * period`, and its statistics.

Deadlines are computed from the start time, never from the last send, so wake-up jitter
never accumulates. When the shell wakes late past several deadlines, one setpoint goes
out and the skipped deadlines are counted as missed (a burst would teach PX4 nothing and
flood the link). An extra, immediate send (a new setpoint) leaves the schedule alone.

Pure: `now` is always passed in; the caller decides what to send.
"""

from __future__ import annotations

import math
from collections import deque

# Achieved rate is measured over the sends of the last this-many seconds.
_RATE_WINDOW_S = 2.0
# Float slack so a wake-up exactly on a deadline is never judged early.
_EPSILON_S = 1e-9


class StreamClock:
    def __init__(self, period_s: float) -> None:
        self.period_s = period_s
        self._t0: float | None = None
        self._next_k = 0
        self.missed_ticks = 0
        self.sends = 0
        self.worst_gap_s = 0.0
        self.window_worst_gap_s = 0.0  # worst gap since reset_window(): "steady lately?"
        self._window_start_s = -math.inf
        self.first_send_s: float | None = None
        self.last_send_s: float | None = None
        self._recent: deque[float] = deque()

    @property
    def running(self) -> bool:
        return self._t0 is not None

    def start(self, now: float) -> None:
        """Start a fresh schedule at `now` (the caller sends the first setpoint now)."""
        self._t0 = now
        self._next_k = 1
        self.missed_ticks = 0
        self.sends = 0
        self.worst_gap_s = 0.0
        self.window_worst_gap_s = 0.0
        self._window_start_s = now
        self.first_send_s = None
        self.last_send_s = None
        self._recent.clear()
        self.record_send(now)

    def stop(self) -> None:
        self._t0 = None

    def next_deadline(self) -> float:
        if self._t0 is None:
            return math.inf
        return self._t0 + self._next_k * self.period_s

    def tick_due(self, now: float) -> bool:
        """True if a scheduled send is due; advances the schedule past `now`, counting
        every deadline beyond the first one that passed as missed."""
        if self._t0 is None or now + _EPSILON_S < self.next_deadline():
            return False
        # The deadlines passed, with the same tolerance in seconds as the test above (and at
        # least the one found due): a wake-up a nanosecond early must not send it twice.
        passed_k = max(self._next_k,
                       math.floor((now + _EPSILON_S - self._t0) / self.period_s))
        self.missed_ticks += max(0, passed_k - self._next_k)
        self._next_k = passed_k + 1
        return True

    def record_send(self, now: float) -> None:
        """Account for a setpoint that went out at `now` (scheduled or immediate)."""
        if self.first_send_s is None:
            self.first_send_s = now
        if self.last_send_s is not None:
            gap = now - self.last_send_s
            self.worst_gap_s = max(self.worst_gap_s, gap)
            if self.last_send_s >= self._window_start_s:  # gaps that began in the window
                self.window_worst_gap_s = max(self.window_worst_gap_s, gap)
        self.last_send_s = now
        self.sends += 1
        self._recent.append(now)
        while self._recent and self._recent[0] < now - _RATE_WINDOW_S:
            self._recent.popleft()

    def reset_window(self, now: float) -> None:
        """Start judging steadiness afresh from `now` (a gap open now is forgiven)."""
        self.window_worst_gap_s = 0.0
        self._window_start_s = now

    def window_gap_s(self, now: float) -> float:
        """Worst gap that began since reset_window(), including one still open at `now`."""
        last = self.last_send_s
        open_gap = now - last if last is not None and last >= self._window_start_s else 0.0
        return max(self.window_worst_gap_s, open_gap)

    def achieved_rate_hz(self, now: float) -> float:
        """Sends per second over the last window (0 when not streaming)."""
        if self._t0 is None:
            return 0.0
        recent = [t for t in self._recent if t >= now - _RATE_WINDOW_S]
        if len(recent) < 2:
            return 0.0
        span = recent[-1] - recent[0]
        return (len(recent) - 1) / span if span > 0 else 0.0

    def since_last_send_s(self, now: float) -> float | None:
        return None if self.last_send_s is None else now - self.last_send_s
