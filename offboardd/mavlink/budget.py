"""The flight-controller link's budget: setpoints and our heartbeat always go at once;
commands and requests (COMMAND_LONG, PARAM_REQUEST_READ, ...) share a token bucket, and
what exceeds it waits in a short queue, in order, a repeat of a queued message dropped.
A waiting message may carry what asked for it (`tag`): when its turn comes, `due` sends it
only if the asker still wants it (a pilot may have taken the vehicle while an OFFBOARD
request waited; sent then, it would take the vehicle back).

Why: on a 57,600-baud radio (~5.7 kB/s) a command flood would starve the setpoint stream
(issue 15: 1,200 DO_SET_MODEs in 0.3 s). The engine's own retries are paced already; this
is the backstop for whatever reaches it. Pure: `now` comes in, nothing is sent here.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from offboardd.mavlink.translate_out import FORCE_DISARM_MAGIC

# Always at once: the stream (PX4's proof of life, px4-offboard.md §1) and the companion
# heartbeat; a force-disarm (an emergency stop) never waits behind anything.
_PRIORITY = frozenset({"SET_POSITION_TARGET_LOCAL_NED", "SET_POSITION_TARGET_GLOBAL_INT",
                       "SET_ATTITUDE_TARGET", "HEARTBEAT"})  # fmt: skip
_MAV_CMD_COMPONENT_ARM_DISARM = 400


def _urgent(msg: Any) -> bool:
    if msg.get_type() in _PRIORITY:
        return True
    return bool(msg.get_type() == "COMMAND_LONG" and msg.command == _MAV_CMD_COMPONENT_ARM_DISARM
                and msg.param1 == 0 and msg.param2 == FORCE_DISARM_MAGIC)


def _key(msg: Any) -> bytes:
    """Identity of a message for de-duplication: its type and payload fields."""
    return bytes(msg.get_type(), "ascii") + repr(sorted(msg.to_dict().items())).encode()


class FcSendBudget:
    def __init__(self, rate_hz: float = 10.0, burst: int = 8, queue_max: int = 32) -> None:
        self.rate_hz = rate_hz
        self.burst = burst
        self.queue_max = queue_max
        self._tokens = float(burst)
        self._stamp_s = -math.inf
        self._queue: deque[tuple[bytes, Any, object]] = deque()
        self.queued = 0  # messages that had to wait
        self.dropped = 0  # repeats of a queued message, and overflow (oldest first)
        self.withdrawn = 0  # waited, and no longer wanted when their turn came

    def _refill(self, now: float) -> None:
        if self._stamp_s == -math.inf:
            self._stamp_s = now
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp_s) * self.rate_hz)
        self._stamp_s = now

    def offer(self, msg: Any, now: float, tag: object = None) -> bool:
        """True: send it now. False: it waits (or was a repeat of one waiting), with
        `tag`, what `due` asks about before sending it."""
        if _urgent(msg):
            return True
        self._refill(now)
        if not self._queue and self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        key = _key(msg)
        if any(k == key for k, _, _ in self._queue):
            self.dropped += 1
            return False
        if len(self._queue) >= self.queue_max:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append((key, msg, tag))
        self.queued += 1
        return False

    def due(self, now: float, wanted: Callable[[object], bool] = lambda tag: True) -> list[Any]:
        """Waiting messages whose turn has come, oldest first; one whose tag is no longer
        `wanted` is dropped and costs no turn."""
        self._refill(now)
        out = []
        while self._queue and self._tokens >= 1.0:
            _, msg, tag = self._queue.popleft()
            if tag is not None and not wanted(tag):
                self.withdrawn += 1
                continue
            self._tokens -= 1.0
            out.append(msg)
        return out

    def next_due_s(self) -> float:
        """When the next waiting message may go (inf: none waiting)."""
        if not self._queue:
            return math.inf
        return self._stamp_s + max(0.0, 1.0 - self._tokens) / self.rate_hz
