"""paho's writes in the loop's own pass (paho_io.py) and commands taken from paho's read
callback (bridge.py): against a real mosquitto, and with a paho whose socket is full."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from offboardd.mqtt.paho_io import InlineWrites
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.helpers import body, dumps, next_message, observer, running_bridge, settings_for
from tests.mqtt.test_bridge import TOPICS


async def test_what_a_held_cycle_publishes_is_written_before_it_ends(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.telemetry_all, 0)
        bridge = daemon.bridge
        writes = bridge._writes
        assert writes is not None
        paho = writes._paho
        before = writes.inline_writes
        on_publish = paho.on_publish  # aiomqtt's: off while we write (paho_io.py), then back
        with bridge.writes_held():
            for kind in ("position", "velocity", "attitude"):
                bridge.publish_telemetry(kind, {"kind": kind})
            assert paho.want_write()  # queued in paho, not yet written
        assert not paho.want_write()  # written as the cycle ended: no loop pass, no writer
        assert writes.inline_writes == before + 1
        assert paho.on_publish is on_publish
        seen = {body(await next_message(client, "#"))["kind"] for _ in range(3)}
    assert seen == {"position", "velocity", "attitude"}


def _segments_sent(sock: socket.socket) -> int:
    """tcpi_segs_out of struct tcp_info (linux/tcp.h), pure ACKs included."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int(struct.unpack_from("I", info, 136)[0])


async def test_a_held_cycles_publishes_leave_as_one_tcp_segment(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.telemetry_all, 0)
        bridge = daemon.bridge
        assert bridge._writes is not None
        sock = bridge._writes._paho.socket()
        assert isinstance(sock, socket.socket)
        kinds = ("position", "velocity", "attitude", "battery", "gps")
        before = _segments_sent(sock)
        with bridge.writes_held():
            for kind in kinds:
                bridge.publish_telemetry(kind, {"kind": kind})
        sent = _segments_sent(sock) - before
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0  # pulled: nothing waits
        seen = {body(await next_message(client, "#"))["kind"] for _ in kinds}
    assert seen == set(kinds)
    assert sent <= 2, sent  # one for the five PUBLISHes (a stray ACK at most); uncorked: five


async def test_a_publish_outside_a_cycle_is_written_in_the_next_pass(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.telemetry_all, 0)
        daemon.bridge.publish_telemetry("battery", {"voltage_v": 15.8})
        message = await next_message(client, "#")
    assert body(message) == {"v": 1, "voltage_v": 15.8}


async def test_a_bug_behind_the_read_callback_does_not_end_the_session(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        bridge = daemon.bridge
        handle = bridge.gate.handle
        calls: list[bytes] = []

        def first_one_fails(channel: Any, payload: bytes, **kwargs: Any) -> None:
            calls.append(payload)
            if len(calls) == 1:
                raise RuntimeError("a bug in the gate")
            handle(channel, payload, **kwargs)

        monkeypatch.setattr(bridge.gate, "handle", first_one_fails)
        await client.subscribe(TOPICS.reply, 1)
        for command_id in ("lost", "next"):
            await client.publish(TOPICS.cmd, dumps({"v": 1, "id": command_id, "cmd": "hold"}),
                                 qos=1)
        reply = body(await next_message(client, TOPICS.reply))
    assert reply["id"] == "next"
    assert bridge.connect_count == 1
    assert [inbound.command.command_id for inbound in daemon.received] == ["next"]


@dataclass
class SlowPaho:
    """paho as aiomqtt left it, with a socket that takes `takes` packets per write."""

    takes: int = 100
    fails: bool = False
    queued: int = 0
    fallbacks: list[str] = field(default_factory=list)
    on_socket_register_write: Any = None
    on_publish: Any = None

    def __post_init__(self) -> None:
        self.on_socket_register_write = lambda client, userdata, sock: self.fallbacks.append(
            threading.current_thread().name)

    def publish(self) -> None:  # what paho does when a packet is queued
        self.queued += 1
        self.on_socket_register_write(self, None, "sock")

    def loop_write(self) -> int:
        if self.fails:
            raise BrokenPipeError("the broker went away")
        self.queued = max(0, self.queued - self.takes)
        return 0

    def want_write(self) -> bool:
        return self.queued > 0

    def socket(self) -> str:
        return "sock"

    def user_data_get(self) -> None:
        return None


async def test_a_full_socket_or_a_failed_write_goes_to_aiomqtts_writer() -> None:
    paho = SlowPaho(takes=1)
    writes = InlineWrites(paho, asyncio.get_running_loop())  # type: ignore[arg-type]
    with writes.held():
        paho.publish()
        paho.publish()
    assert paho.queued == 1 and len(paho.fallbacks) == 1  # the rest waits for writability

    paho = SlowPaho(fails=True)
    writes = InlineWrites(paho, asyncio.get_running_loop())  # type: ignore[arg-type]
    paho.publish()
    await wait_until(lambda: bool(paho.fallbacks), "the hand-over to aiomqtt")  # it meets the error
    assert paho.fallbacks == [threading.current_thread().name]


async def test_a_write_asked_for_from_another_thread_is_left_to_aiomqtt() -> None:
    paho = SlowPaho()
    InlineWrites(paho, asyncio.get_running_loop())  # type: ignore[arg-type]
    thread = threading.Thread(target=paho.publish, name="connecting")
    thread.start()
    thread.join()
    assert paho.fallbacks == ["connecting"]
