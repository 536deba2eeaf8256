"""CURRENT_MODE (#436) on one link as PX4 v1.17+ sends it: on status, capped by interval.

Measured on PX4 main ([SITL main], px4-offboard.md §7) after
MAV_CMD_SET_MESSAGE_INTERVAL(436, interval): CURRENT_MODE goes out only when
vehicle_status is published (~2.4/s at rest, and at once on a mode change) and never
sooner than `interval` after the previous one; a publication inside the interval goes
out when the interval is over, carrying the newest status. Interval 0 means PX4's
default rate for the stream, 0.5 Hz, with no faster on-change message.

| interval | at rest   | mode change seen after |
|----------|-----------|------------------------|
| 0.5 s    | 1.83 /s   | 0.10-0.52 s            |
| 0.1 s    | 2.44 /s   | 0.105-0.114 s          |
| 0.05 s   | 2.39 /s   | 0.04-0.065 s           |
| 0.02 s   | 2.44 /s   | 0.024-0.033 s          |
| 0 (dflt) | 0.5 /s    | 1.66-1.91 s            |

v1.17 was not measured: it is taken to behave like main. v1.16's stream (periodic,
plus an immediate message on every change) stays in streams.py. The vehicle says when
vehicle_status is published (vehicle.py); this module only decides when each link may
send. No clock, no I/O.
"""

from __future__ import annotations

import math

from offboardd.mavlink.codec import Message

DEFAULT_INTERVAL_S = 2.0  # [SITL main] interval 0 ("default rate"): 0.5 Hz
_EARLY_S = 1e-6  # float slack: a send due at exactly last + interval is on time


class CurrentModeStream:
    """One link's CURRENT_MODE after SET_MESSAGE_INTERVAL (v1.17+)."""

    def __init__(self, interval_us: float) -> None:
        self.interval_s = interval_us / 1e6 if interval_us > 0 else DEFAULT_INTERVAL_S
        self.last_sent_s = -math.inf
        self.pending: Message | None = None  # a status published inside the interval

    def publish(self, msg: Message, now_s: float) -> Message | None:
        """vehicle_status was published: the message to send now, or None (held back)."""
        if now_s + _EARLY_S >= self.last_sent_s + self.interval_s:
            self.last_sent_s, self.pending = now_s, None
            return msg
        self.pending = msg  # the newest status wins
        return None

    def due(self, now_s: float) -> Message | None:
        """A held-back status whose interval is over, to send now."""
        if self.pending is None or now_s + _EARLY_S < self.last_sent_s + self.interval_s:
            return None
        msg, self.pending = self.pending, None
        self.last_sent_s = now_s
        return msg
