"""Pure statistics over the proxy's capture: stream timing, command latency, reactions.

Times are CLOCK_REALTIME nanoseconds (kernel receive stamps and the commander's clock on
the same machine). Deviation is |interval - period|; a missed tick is an interval that
spans more than one period (round(interval / period) - 1 ticks lost). No I/O here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class StreamTiming:
    frames: int
    rate_hz: float
    dev_p50_ms: float
    dev_p99_ms: float
    dev_max_ms: float
    missed_ticks: int


def stream_timing(stamps_ns: Sequence[int], period_s: float) -> StreamTiming:
    """Timing of one setpoint stream (stamps sorted, one per setpoint frame)."""
    if len(stamps_ns) < 2:
        return StreamTiming(len(stamps_ns), math.nan, math.nan, math.nan, math.nan, 0)
    period_ns = period_s * NS_PER_S
    intervals = [b - a for a, b in itertools.pairwise(stamps_ns)]
    devs_ms = [abs(i - period_ns) / NS_PER_MS for i in intervals]
    missed = sum(max(0, round(i / period_ns) - 1) for i in intervals)
    span_s = (stamps_ns[-1] - stamps_ns[0]) / NS_PER_S
    return StreamTiming(
        frames=len(stamps_ns), rate_hz=len(intervals) / span_s,
        dev_p50_ms=percentile(devs_ms, 50), dev_p99_ms=percentile(devs_ms, 99),
        dev_max_ms=max(devs_ms), missed_ticks=missed,
    )  # fmt: skip


@dataclass(frozen=True)
class Spread:
    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float


def spread(values_ms: Sequence[float]) -> Spread:
    if not values_ms:
        return Spread(0, math.nan, math.nan, math.nan)
    return Spread(len(values_ms), percentile(values_ms, 50), percentile(values_ms, 99),
                  max(values_ms))  # fmt: skip


def command_latencies_ms(
    published: Sequence[tuple[int, float]],
    seen: Sequence[tuple[int, float]],
    tolerance: float = 1e-4,
    horizon_ns: int = NS_PER_S,
) -> list[float]:
    """For each (publish_ns, value), the delay to the first frame (ts_ns, value) at or after
    the publish carrying that value (a float32 on the wire, hence the tolerance). Values
    must differ between consecutive publishes; one not seen within `horizon_ns` is left out."""
    out: list[float] = []
    j = 0
    for publish_ns, value in published:
        while j < len(seen) and seen[j][0] < publish_ns:
            j += 1
        for ts_ns, got in seen[j:]:
            if ts_ns - publish_ns > horizon_ns:
                break
            if abs(got - value) <= tolerance:
                out.append((ts_ns - publish_ns) / NS_PER_MS)
                break
    return out


def first_after(stamps_ns: Sequence[int], after_ns: int) -> int | None:
    return next((t for t in stamps_ns if t >= after_ns), None)
