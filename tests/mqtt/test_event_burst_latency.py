"""A burst of QoS 1 events over a slow link (a cellular uplink: round trips of a second or
more) must not end the MQTT session (found by review 5, session 24).

paho keeps 20 QoS 1 messages in flight (and mosquitto's Receive Maximum is 20); the
bridge published up to 64 at once and gave each `timeout_s` for its PUBACK, so the
fourth score of a burst waited three round trips behind the window before its own: at
a 1.25 s round trip and the default 5 s that timed the session out, and every event of
the burst was sent again after the reconnect. Real mosquitto behind a loopback proxy
that delays each direction."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from tests.conftest import Broker
from tests.mqtt.helpers import observer, running_bridge, settings_for

pytestmark = pytest.mark.integration


class _LatencyProxy:
    """Each chunk is delivered `one_way_s` after it was read, in order, both ways."""

    def __init__(self, upstream_port: int, one_way_s: float) -> None:
        self.upstream_port = upstream_port
        self.one_way_s = one_way_s
        self.tasks: set[asyncio.Task[None]] = set()

    async def _pump(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        line: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await line.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                w.write(data)
                await w.drain()

        deliverer = asyncio.create_task(deliver())
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await r.read(65536):
                line.put_nowait((time.monotonic() + self.one_way_s, data))
        deliverer.cancel()
        w.close()

    async def serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self.tasks.add(asyncio.create_task(self._pump(r, uw)))
        self.tasks.add(asyncio.create_task(self._pump(ur, w)))


async def test_a_burst_of_events_over_a_slow_link_keeps_the_session(mosquitto: Broker) -> None:
    proxy = _LatencyProxy(mosquitto.port, one_way_s=0.3)  # 0.6 s round trip
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    # timeout_s 1.0 against a 0.6 s round trip: the same ratio as the default 5 s
    # against a 3 s one.
    settings = settings_for(port, "5", timeout_s=1.0, keepalive_s=10)
    try:
        async with running_bridge(settings) as daemon, observer(mosquitto.port) as spy:
            bridge = daemon.bridge
            await spy.subscribe(bridge.topics.events, 1)
            await asyncio.sleep(1.5)  # the session's own start-up traffic is through
            connects = bridge.connect_count
            for i in range(64):  # e.g. a flight's worth of warnings, requeued at once
                bridge.publish_event({"event": "warning", "n": i})
            got: list[int] = []
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(8.0):
                    async for m in spy.messages:
                        body = json.loads(m.payload)
                        if body.get("event") == "warning":
                            got.append(body["n"])
                        if len(set(got)) == 64:
                            break
            assert bridge.connect_count == connects, "the burst timed the session out"
            assert bridge.connected.is_set()
            assert sorted(set(got)) == list(range(64))
            assert len(got) == 64, f"{len(got) - 64} events sent twice"
    finally:
        server.close()
        for t in proxy.tasks:
            t.cancel()
