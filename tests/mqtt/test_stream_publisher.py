"""Stream topics (telemetry, relayed MAVLink) go to paho directly: found inside aiomqtt,
bounded while paho cannot write, refused (never raised) when there is no session.
Delivery through a real mosquitto, across a broker restart: test_bridge.py."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

import aiomqtt
import paho.mqtt.client as paho_mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from offboardd.errors import OffboarddError
from offboardd.mqtt import connection
from offboardd.mqtt.stream_publisher import Qos0Packets, StreamPublisher


@dataclass
class StuckPaho:
    """paho as seen while the broker reads nothing: every packet stays queued."""

    queued: list[bytes] = field(default_factory=list)
    connected: bool = True

    def want_write(self) -> bool:
        return bool(self.queued)

    def socket(self) -> object | None:
        return object() if self.connected else None

    def _packet_queue(self, command: int, packet: bytes, mid: int, qos: int) -> object:
        self.queued.append(packet)
        return 0


def packet(topic: str, payload: bytes, *, mqtt5: bool = True) -> bytes:
    return Qos0Packets(mqtt5=mqtt5).packet(topic, payload)


def pahos_own(topic: str, payload: bytes, protocol: MQTTProtocolVersion) -> bytes:
    """The packet paho's `publish` builds, taken from its outgoing queue."""
    paho = paho_mqtt.Client(CallbackAPIVersion.VERSION2, protocol=protocol)
    paho.on_socket_register_write = lambda *_: None  # queue only: nothing is written
    paho._sock = socket.socket()  # connected, as far as publish checks
    try:
        assert paho.publish(topic, payload, qos=0).rc == 0
        return bytes(paho._out_packet[-1]["packet"])
    finally:
        paho._sock.close()


@pytest.mark.parametrize("mqtt5", [True, False])
@pytest.mark.parametrize("size", [0, 1, 100, 120, 127, 16_380, 16_384, 2_097_200])
def test_the_packets_are_byte_for_byte_pahos(mqtt5: bool, size: int) -> None:
    """Around each boundary of the remaining length's encoding (1, 2, 3, 4 bytes)."""
    topic = "offboardd/v1/télémétrie/position"  # (not ASCII: its UTF-8 length counts)
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    protocol = MQTTProtocolVersion.MQTTv5 if mqtt5 else MQTTProtocolVersion.MQTTv311
    assert packet(topic, payload, mqtt5=mqtt5) == pahos_own(topic, payload, protocol)


def test_paho_files_the_packet_in_its_queue_and_writes_it_in_order() -> None:
    """The private queue the publisher relies on is where and what it expects."""
    paho = paho_mqtt.Client(CallbackAPIVersion.VERSION2, protocol=MQTTProtocolVersion.MQTTv5)
    asked: list[object] = []
    paho.on_socket_register_write = lambda *_: asked.append(1)
    left, right = socket.socketpair()
    paho._sock = left
    try:
        stream = StreamPublisher()
        stream.attach(paho, mqtt5=True)
        assert stream.publish("t/a", b"one")
        assert paho.publish("t/b", b"two", qos=0).rc == 0
        assert stream.publish("t/a", b"three")
        assert asked and paho.want_write()
        assert paho.loop_write() == 0 and not paho.want_write()
        theirs = pahos_own("t/b", b"two", MQTTProtocolVersion.MQTTv5)
        expected = packet("t/a", b"one") + theirs + packet("t/a", b"three")
        assert right.recv(4096) == expected
    finally:
        left.close()
        right.close()


def test_topics_paho_would_refuse_are_refused() -> None:
    packets = Qos0Packets(mqtt5=True)
    for topic in ("", "a/+/b", "a/#", "x" * 65_536):
        with pytest.raises(ValueError, match="not a topic"):
            packets.packet(topic, b"x")


async def test_the_paho_client_is_found_inside_aiomqtt() -> None:
    client = aiomqtt.Client("127.0.0.1", 1)  # never connected: nothing leaves the process
    assert isinstance(connection.paho_client(client), paho_mqtt.Client)


def test_an_aiomqtt_without_it_is_reported_clearly() -> None:
    with pytest.raises(OffboarddError, match=r"aiomqtt 2\.x"):
        connection.paho_client(object())  # type: ignore[arg-type]


def test_the_backlog_behind_unwritten_bytes_is_bounded_then_drains() -> None:
    paho = StuckPaho()
    stream = StreamPublisher(max_backlog=3)
    stream.attach(paho, mqtt5=True)
    accepted = [stream.publish("t/pos", str(i).encode()) for i in range(10)]
    assert accepted == [True] * 3 + [False] * 7
    paho.queued.clear()  # the broker read it all: paho's queue is empty again
    assert stream.publish("t/pos", b"fresh")
    assert paho.queued == [packet("t/pos", b"fresh")]


def test_no_session_or_a_refused_topic_is_a_false_never_an_exception() -> None:
    stream = StreamPublisher()
    assert not stream.publish("t/pos", b"x")  # not attached yet
    paho = StuckPaho(connected=False)  # the socket went away under us
    stream.attach(paho, mqtt5=False)
    assert not stream.publish("t/pos", b"x")
    paho.connected = True
    assert not stream.publish("", b"x")
    assert stream.publish("t/pos", b"x")
    stream.detach()
    assert not stream.publish("t/pos", b"y")
    assert paho.queued == [packet("t/pos", b"x", mqtt5=False)]
