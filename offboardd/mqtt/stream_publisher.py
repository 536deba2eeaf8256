"""Telemetry and relayed MAVLink (the "stream" topics, QoS 0) handed straight to paho.

Through aiomqtt, every publish waits until paho has written the packet, even at QoS 0:
two asyncio tasks, a timer and an event per message, plus a wake-up of the bridge's
publisher task per batch. At the default telemetry rates that was about a sixth of the
daemon's CPU (bench/README.md). A QoS 0 message has nothing to wait for, so the runtime's
cycle hands it to paho directly, and paho writes the cycle's batch as the cycle ends
(paho_io.py; aiomqtt's writer only while the socket is full).

Not through `paho.publish` either: for a QoS 0 message that builds a message id, an
`MQTTMessageInfo` (a `threading.Condition` inside) and the packet field by field, ~55 µs
a message at a tick's cold start, 17 messages a second at the default rates. The packet
is a fixed header, the topic (built once per topic), an empty property list (MQTT 5)
and the payload (`Qos0Packets`; tests/mqtt/test_stream_publisher.py holds it byte for
byte to paho's own); it joins paho's outgoing queue, so it leaves in order with what paho
sends, and is written with the cycle's batch.

Bounded: while paho still holds bytes it could not write (a slow or stuck broker), at
most `max_backlog` stream messages are queued behind them; later ones are refused (the
caller counts them), as stale telemetry is noise. Never blocks, never raises.
"""

from __future__ import annotations

from typing import Protocol


class PahoLike(Protocol):
    """What is used of `paho.mqtt.client.Client`."""

    def want_write(self) -> bool: ...

    def socket(self) -> object | None: ...

    # paho 2's outgoing queue (private: `aiomqtt<3` pins paho 2, and the tests check it).
    def _packet_queue(self, command: int, packet: bytes, mid: int, qos: int) -> object: ...


# The command paho files the packet under: not PUBLISH, so that, once written, paho looks
# for no `MQTTMessageInfo` to complete (a QoS 0 message has nothing to wait for).
_UNTRACKED = 0
_PUBLISH_QOS0 = 0x30  # PUBLISH, QoS 0, not retained, not a duplicate
_MAX_TOPIC_BYTES = 65_535
_MAX_REMAINING_LENGTH = 268_435_455
_MAX_CACHED_TOPICS = 1_024  # telemetry kinds and relayed messages: a few dozen


class Qos0Packets:
    """MQTT PUBLISH packets at QoS 0 for one protocol version."""

    def __init__(self, *, mqtt5: bool) -> None:
        self._properties = b"\x00" if mqtt5 else b""  # MQTT 5: an empty property list
        self._topic_parts: dict[str, bytes] = {}

    def packet(self, topic: str, payload: bytes) -> bytes:
        """The packet; ValueError for a topic or payload paho would refuse."""
        part = self._topic_parts.get(topic)
        if part is None:
            part = self._topic_part(topic)
        remaining = len(part) + len(payload)
        if remaining > _MAX_REMAINING_LENGTH:
            raise ValueError("payload too large for one MQTT packet")
        if remaining < 0x80:  # the usual case: one byte of remaining length
            return b"".join((bytes((_PUBLISH_QOS0, remaining)), part, payload))
        return b"".join((bytes((_PUBLISH_QOS0,)), _remaining_length(remaining), part, payload))

    def _topic_part(self, topic: str) -> bytes:
        encoded = topic.encode()
        if not encoded or len(encoded) > _MAX_TOPIC_BYTES or b"+" in encoded or b"#" in encoded:
            raise ValueError(f"not a topic to publish to: {topic!r}")
        part = len(encoded).to_bytes(2, "big") + encoded + self._properties
        if len(self._topic_parts) >= _MAX_CACHED_TOPICS:
            self._topic_parts.clear()
        self._topic_parts[topic] = part
        return part


def _remaining_length(value: int) -> bytes:
    """MQTT's variable byte integer: 7 bits a byte, least significant first."""
    out = bytearray()
    while True:
        value, digit = divmod(value, 0x80)
        out.append(digit | (0x80 if value else 0))
        if not value:
            return bytes(out)


class StreamPublisher:
    def __init__(self, *, max_backlog: int = 64) -> None:
        self._paho: PahoLike | None = None
        self._packets = Qos0Packets(mqtt5=True)
        self._max_backlog = max_backlog
        self._queued = 0  # stream messages handed over since paho's queue was last empty

    def attach(self, paho: PahoLike, *, mqtt5: bool) -> None:
        """A session started: publish through this client until `detach()`."""
        self._paho = paho
        self._packets = Qos0Packets(mqtt5=mqtt5)
        self._queued = 0

    def detach(self) -> None:
        self._paho = None

    def publish(self, topic: str, payload: bytes) -> bool:
        """Queue one QoS 0 message in paho; False when not connected or backed up."""
        paho = self._paho
        if paho is None or paho.socket() is None:  # (paho itself: MQTT_ERR_NO_CONN)
            return False
        if not paho.want_write():
            self._queued = 0  # everything before was written: the backlog is gone
        elif self._queued >= self._max_backlog:
            return False
        try:
            packet = self._packets.packet(topic, payload)
        except ValueError:  # a topic or size paho would refuse: refused, as by the broker
            return False
        paho._packet_queue(_UNTRACKED, packet, 0, 0)  # (private: see PahoLike)
        self._queued += 1
        return True
