"""What the bridge still has to publish: bounded, prioritised, safe while disconnected.

The runtime publishes from its own loop and must never block on the broker, and a broker
that is away for an hour must not make the daemon's memory grow. So each kind of output
has its own rule:

- replies: a bounded FIFO (oldest dropped first, but the gate's refusals before any of
  the engine's replies: junk on fresh response topics must not push a pilot's reply out);
  they matter most and go out first;
- state: only the latest document is kept, sent at most every `state_min_interval_s`,
  and sent again after every reconnect (it is retained: late subscribers rely on it);
- events: a bounded FIFO kept across a disconnection (oldest dropped first, counted);
- telemetry and the MAVLink relay ("stream" topics) are not queued here: `admit_stream`
  paces each topic to its rate and refuses them outright while disconnected (stale
  telemetry is noise); the bridge hands admitted ones to paho at once
  (stream_publisher.py).

Pure: the caller passes `now`; no asyncio, no aiomqtt.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Outbound:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    correlation_data: bytes | None = None  # MQTT 5 only; echoed from the request
    refusal: bool = False  # the inbound gate's answer to input it refused (put_reply)

    def __post_init__(self) -> None:
        # QoS 0 goes to paho directly (stream_publisher.py), whose writes skip paho's
        # per-packet QoS 0 completion callback (paho_io.py): through aiomqtt it would wait
        # for that callback forever.
        if self.qos < 1:
            raise ValueError(f"{self.topic}: the outbox carries QoS 1 and 2 only")


@dataclass
class OutboxStats:
    dropped_replies: int = 0
    dropped_events: int = 0
    dropped_stream: int = 0  # telemetry/relay offered while disconnected or backed up
    throttled_stream: int = 0  # telemetry/relay offered faster than its rate


class Outbox:
    def __init__(
        self, *, state_min_interval_s: float, max_replies: int = 64, max_events: int = 256
    ) -> None:
        if max_replies < 1 or max_events < 1:  # a queue of none fails at its first message
            raise ValueError(f"the outbox keeps at least 1 reply and 1 event (max_replies = "
                             f"{max_replies}, max_events = {max_events})")
        self._state_min_interval_s = state_min_interval_s
        self._replies: deque[Outbound] = deque()
        self._max_replies = max_replies
        self._events: deque[Outbound] = deque()
        self._max_events = max_events
        self._state: Outbound | None = None
        self._state_dirty = False
        self._state_sent_s = float("-inf")
        self._stream_due_s: dict[str, float] = {}  # per topic: earliest on-time offer
        self.connected = False
        self.stats = OutboxStats()

    # -- offered by the runtime -------------------------------------------------------
    def put_reply(self, item: Outbound) -> None:
        replies = self._replies
        if len(replies) >= self._max_replies:
            oldest_refusal = next((queued for queued in replies if queued.refusal), None)
            if oldest_refusal is not None:
                replies.remove(oldest_refusal)
            elif item.refusal:  # nothing but the engine's: the refusal is the one dropped
                self.stats.dropped_replies += 1
                return
            else:
                replies.popleft()
            self.stats.dropped_replies += 1
        replies.append(item)

    def put_state(self, item: Outbound) -> None:
        self._state = item
        self._state_dirty = True

    def put_event(self, item: Outbound) -> None:
        if len(self._events) >= self._max_events:
            self._events.popleft()
            self.stats.dropped_events += 1
        self._events.append(item)

    def admit_stream(self, topic: str, *, now: float, rate_hz: float) -> bool:
        """May telemetry/relay on `topic` go out now? False (counted) when disconnected,
        disabled (rate 0) or too soon for the topic's rate."""
        if not self.connected or rate_hz <= 0:
            self.stats.dropped_stream += 1
            return False
        # GCRA pacing: the long-run rate never exceeds rate_hz, yet a caller that already
        # paces at rate_hz with jitter (the runtime does) loses nothing: an offer may come
        # up to one period before it is due (a burst of at most two).
        period_s = 1.0 / rate_hz
        due_s = self._stream_due_s.get(topic, float("-inf"))
        if now < due_s - period_s:
            self.stats.throttled_stream += 1
            return False
        self._stream_due_s[topic] = max(due_s, now) + period_s
        return True

    # -- connection changes -----------------------------------------------------------
    def on_connected(self) -> None:
        self.connected = True
        # The broker may have restarted without persistence: the retained state is gone.
        self._state_dirty = self._state is not None
        self._state_sent_s = float("-inf")

    def on_disconnected(self) -> None:
        self.connected = False

    # -- drained by the bridge's publisher --------------------------------------------
    def pop(self, now: float) -> Outbound | None:
        if self._replies:
            return self._replies.popleft()
        if self._state_due(now):
            assert self._state is not None
            self._state_dirty = False
            self._state_sent_s = now
            return self._state
        if self._events:
            return self._events.popleft()
        return None

    def state_failed(self) -> None:
        """The last state publish did not complete: send it again when connected."""
        self._state_dirty = self._state is not None

    def failed(self, item: Outbound, *, event: bool) -> None:
        """A reply or event whose publish did not complete (the session ended under it):
        first in line again for the next session, if there is room. It was already taken
        out, and a reply lost there was counted nowhere (review); a duplicate after a
        reconnect is what the client ignores."""
        queue, limit = ((self._events, self._max_events) if event
                        else (self._replies, self._max_replies))
        if len(queue) >= limit:
            if event:
                self.stats.dropped_events += 1
            else:
                self.stats.dropped_replies += 1
            return
        queue.appendleft(item)

    def final_state(self) -> Outbound | None:
        """The state not sent yet, whatever its pacing: the last word before `offline`
        (a clean stop once left the retained state saying `active`: review)."""
        if not self._state_dirty:
            return None
        self._state_dirty = False
        return self._state

    def next_due_s(self, now: float) -> float | None:
        """When `pop` will next have something (now, later, or None: wait for an offer)."""
        if self._replies or self._events or self._state_due(now):
            return now
        if self._state_dirty:
            return self._state_sent_s + self._state_min_interval_s
        return None

    def _state_due(self, now: float) -> bool:
        return self._state_dirty and now - self._state_sent_s >= self._state_min_interval_s

    def __len__(self) -> int:
        return len(self._replies) + len(self._events) + self._state_dirty
