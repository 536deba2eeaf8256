"""How an MQTT session ends is always read, so asyncio never prints "Future exception was
never retrieved" to stderr, outside the daemon's JSON logs. Seen after 12 s broker stalls,
twice: aiomqtt's `__aexit__` returns early, without reading it, when the error that ended
the session came while nobody waited for it; and a connection attempt aiomqtt gave up on
(no CONNACK in time) stayed open, was answered when the broker continued, then taken over
by our next attempt, with no `__aexit__` ever to read how it ended."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import weakref
from collections.abc import Iterator
from typing import Any

import aiomqtt
import pytest

from offboardd.mqtt import connection
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.helpers import running_bridge, settings_for


async def test_a_session_ended_while_nobody_waited_is_read(mosquitto: Broker) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        settings = settings_for(mosquitto.port)
        client = connection.daemon_client(settings, "v1/availability", connection.PahoErrors())
        async with client:
            connection.read_session_end(client)  # as the bridge does
            ended = client._disconnected  # (what until_disconnected waits on)
            mosquitto.stop()  # the broker gone while no receiver waits for the end
            await wait_until(ended.done, "paho to see the connection closed")
        del client, ended
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert not [c for c in reported if "never retrieved" in str(c.get("message"))], reported


@contextlib.contextmanager
def frozen(broker: Broker) -> Iterator[None]:
    """The broker stopped as by SIGSTOP: its TCP connections stay up (the kernel still
    accepts and buffers), nothing is answered until it continues."""
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)


async def test_attempts_given_up_on_leave_nothing_behind_when_the_broker_wakes(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tester's 12 s broker stall, shortened. While the broker is stopped every attempt
    times out waiting for its CONNACK; aiomqtt gave up on it but left its socket open, so when
    the broker continued it answered that stale CONNECT, and the next CONNECT with the same
    client id (ours) took that session over: the stale client's `_disconnected` took
    "Unexpected disconnection", which nobody would ever read, and asyncio printed it to
    stderr when the client was collected. An attempt given up on is closed at once (before
    the broker can answer it) and how it ends is read."""
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    clients: list[weakref.ref[aiomqtt.Client]] = []
    make_client = connection.daemon_client

    def recorded(*args: Any, **kwargs: Any) -> aiomqtt.Client:
        client = make_client(*args, **kwargs)
        clients.append(weakref.ref(client))
        return client

    monkeypatch.setattr(connection, "daemon_client", recorded)
    settings = settings_for(mosquitto.port, timeout_s=0.3)
    try:
        async with running_bridge(settings) as daemon:
            bridge = daemon.bridge
            with frozen(mosquitto):
                bridge.publish_state({"phase": "idle"})  # no PUBACK: the session times out
                await wait_until(lambda: bridge.failed_attempts >= 2,
                                 "two attempts to time out", 10)
                await asyncio.sleep(0.1)  # (paho writes the DISCONNECT, then closes)
                given_up = [ref() for ref in clients[1:3]]  # (clients[0]: the first session)
                still_open = sum(1 for client in given_up if client is not None
                                 and connection.paho_client(client).socket() is not None)
                del given_up
            await wait_until(bridge.connected.is_set, "the bridge to reconnect", 10)
            await asyncio.sleep(1.0)  # the broker answers (and drops) what it had buffered
            live = clients[-1]
            gc.collect()
            await asyncio.sleep(0)
            left = [ref for ref in clients[:-1] if ref() is not None]
            assert not left, f"{len(left)} connection attempt(s) given up on still alive"
            assert live() is not None
    finally:
        loop.set_exception_handler(None)
    unread = [c for c in reported if "never retrieved" in str(c.get("message"))]
    assert not unread, unread
    assert still_open == 0, f"{still_open} attempt(s) given up on still connected"
