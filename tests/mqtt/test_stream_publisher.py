"""Stream topics (telemetry, relayed MAVLink) go to paho directly: found inside aiomqtt,
bounded while paho cannot write, refused (never raised) when there is no session.
Delivery through a real mosquitto, across a broker restart: test_bridge.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import aiomqtt
import paho.mqtt.client as paho_mqtt
import pytest

from offboardd.errors import OffboarddError
from offboardd.mqtt import connection
from offboardd.mqtt.stream_publisher import StreamPublisher


@dataclass
class Info:
    rc: int


@dataclass
class StuckPaho:
    """paho as seen while the broker reads nothing: every packet stays queued."""

    queued: list[tuple[str, bytes]] = field(default_factory=list)
    rc: int = 0

    def publish(self, topic: str, payload: bytes, qos: int) -> Info:
        assert qos == 0
        if not topic:
            raise ValueError("Invalid topic.")
        if self.rc == 0:
            self.queued.append((topic, payload))
        return Info(self.rc)

    def want_write(self) -> bool:
        return bool(self.queued)


async def test_the_paho_client_is_found_inside_aiomqtt() -> None:
    client = aiomqtt.Client("127.0.0.1", 1)  # never connected: nothing leaves the process
    assert isinstance(connection.paho_client(client), paho_mqtt.Client)


def test_an_aiomqtt_without_it_is_reported_clearly() -> None:
    with pytest.raises(OffboarddError, match=r"aiomqtt 2\.x"):
        connection.paho_client(object())  # type: ignore[arg-type]


def test_the_backlog_behind_unwritten_bytes_is_bounded_then_drains() -> None:
    paho = StuckPaho()
    stream = StreamPublisher(max_backlog=3)
    stream.attach(paho)
    accepted = [stream.publish("t/pos", str(i).encode()) for i in range(10)]
    assert accepted == [True] * 3 + [False] * 7
    paho.queued.clear()  # the broker read it all: paho's queue is empty again
    assert stream.publish("t/pos", b"fresh")
    assert paho.queued == [("t/pos", b"fresh")]


def test_no_session_or_a_paho_refusal_is_a_false_never_an_exception() -> None:
    stream = StreamPublisher()
    assert not stream.publish("t/pos", b"x")  # not attached yet
    paho = StuckPaho(rc=4)  # MQTT_ERR_NO_CONN: the socket went away under us
    stream.attach(paho)
    assert not stream.publish("t/pos", b"x")
    paho.rc = 0
    assert not stream.publish("", b"x")  # paho's own checks raise ValueError
    assert stream.publish("t/pos", b"x")
    stream.detach()
    assert not stream.publish("t/pos", b"y")
    assert paho.queued == [("t/pos", b"x")]
