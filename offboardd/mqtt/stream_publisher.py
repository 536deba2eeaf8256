"""Telemetry and relayed MAVLink (the "stream" topics, QoS 0) handed straight to paho.

Through aiomqtt, every publish waits until paho has written the packet, even at QoS 0:
two asyncio tasks, a timer and an event per message, plus a wake-up of the bridge's
publisher task per batch. At the default telemetry rates that was about a sixth of the
daemon's CPU (bench/README.md). A QoS 0 message has nothing to wait for, so the runtime's
cycle hands it to paho directly, and paho writes the cycle's batch as the cycle ends
(paho_io.py; aiomqtt's writer only while the socket is full).

Bounded: while paho still holds bytes it could not write (a slow or stuck broker), at
most `max_backlog` stream messages are queued behind them; later ones are refused (the
caller counts them), as stale telemetry is noise. Never blocks, never raises.
"""

from __future__ import annotations

from typing import Protocol


class _PublishInfo(Protocol):
    @property
    def rc(self) -> int: ...


class PahoLike(Protocol):
    """What is used of `paho.mqtt.client.Client` (public API only)."""

    def publish(self, topic: str, payload: bytes, qos: int) -> _PublishInfo: ...

    def want_write(self) -> bool: ...


_MQTT_ERR_SUCCESS = 0  # paho.mqtt.enums.MQTTErrorCode.MQTT_ERR_SUCCESS


class StreamPublisher:
    def __init__(self, *, max_backlog: int = 64) -> None:
        self._paho: PahoLike | None = None
        self._max_backlog = max_backlog
        self._queued = 0  # stream messages handed over since paho's queue was last empty

    def attach(self, paho: PahoLike) -> None:
        """A session started: publish through this client until `detach()`."""
        self._paho = paho
        self._queued = 0

    def detach(self) -> None:
        self._paho = None

    def publish(self, topic: str, payload: bytes) -> bool:
        """Queue one QoS 0 message in paho; False when not connected or backed up."""
        paho = self._paho
        if paho is None:
            return False
        if not paho.want_write():
            self._queued = 0  # everything before was written: the backlog is gone
        elif self._queued >= self._max_backlog:
            return False
        try:
            info = paho.publish(topic, payload, qos=0)
        except ValueError:  # paho's own checks (topic, size): refused, as by the broker
            return False
        if info.rc != _MQTT_ERR_SUCCESS:  # e.g. the socket closed under us
            return False
        self._queued += 1
        return True
