"""When each telemetry kind is next published, at its configured rate. Pure: `now` is passed.

The runtime asks `due(now)` on each of its cycles, so kinds of the same rate go out in the
same cycle, together: the bridge then hands the broker one batch instead of a trickle of
single messages (each wakes the event loop and the broker; bench/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping


class TelemetrySchedule:
    def __init__(self, rates_hz: Mapping[str, float], now: float) -> None:
        self._period_s = {kind: 1.0 / rate for kind, rate in rates_hz.items() if rate > 0}
        # Due times are start + n * period, never a running sum: kinds of one rate stay on
        # exactly the same instants, and no rounding drifts them apart.
        self._start_s = dict.fromkeys(self._period_s, now)
        self._count = dict.fromkeys(self._period_s, 0)
        self._due_s = dict.fromkeys(self._period_s, now)
        self._next_s = now if self._due_s else math.inf  # the earliest of them

    def due(self, now: float) -> list[str]:
        """The kinds to publish now; each is then due one period later on its schedule, or
        one period from now if it fell more than a period behind (no bursts)."""
        if now < self._next_s:  # most cycles: nothing (asked on every stream tick)
            return []
        kinds = [kind for kind, due_s in self._due_s.items() if now >= due_s]
        for kind in kinds:
            period_s = self._period_s[kind]
            self._count[kind] += 1
            next_s = self._start_s[kind] + self._count[kind] * period_s
            if next_s <= now:
                self._start_s[kind], self._count[kind] = now, 1
                next_s = now + period_s
            self._due_s[kind] = next_s
        self._next_s = min(self._due_s.values())
        return kinds

    def next_due_s(self) -> float | None:
        """The earliest due time; None when every kind is off."""
        return self._next_s if self._due_s else None
