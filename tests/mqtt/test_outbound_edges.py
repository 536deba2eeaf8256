"""The daemon's MQTT side says how things are, and loses no reply (found by review):
the final state goes out before `offline`, a reply whose publish the session ended under
is sent after the reconnect, a lost FC's telemetry is not repeated. Real mosquitto, sim."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from typing import Any

import pytest

from offboardd.client import OffboardClient
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings
from offboardd.mavlink.links import parse_link_url
from offboardd.mqtt.topics import Topics
from offboardd.sim import SimConfig, SimServer
from tests.conftest import Broker, free_port
from tests.integration.harness import serving
from tests.mqtt.helpers import observer, settings_for
from tests.mqtt.test_e2e_sim import stack
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration
VEHICLE = "vehicle1"
T = Topics.for_vehicle(VEHICLE)


async def _retained(port: int, topics: list[str], wait_s: float = 1.0) -> dict[str, bytes]:
    got: dict[str, bytes] = {}
    async with observer(port) as spy:
        for topic in topics:
            await spy.subscribe(topic, 1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                async for m in spy.messages:
                    got[str(m.topic)] = bytes(m.payload)
    return got


async def test_retained_state_after_a_clean_stop_is_the_final_state(mosquitto: Broker) -> None:
    """SIGTERM while flying: the daemon releases the vehicle, then stops. The last
    retained `state` should be what the daemon last knew (docs/mqtt-api.md: state is
    "re-published on every change"); the bridge drops what the outbox still held when it
    is cancelled, so the retained state can say the vehicle is still under control."""
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", boot_ready_s=QUICK_BOOT_S)
    stop = asyncio.Event()
    async with SimServer(sim_config) as _sim:
        config = DaemonConfig(
            mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{port}")),
            engine=dataclasses.replace(EngineSettings()),
            mqtt=settings_for(mosquitto.port, "5", vehicle_id=VEHICLE,
                              state_min_interval_s=0.1),  # the shipped default
        )
        async with serving(config, mqtt=True, stop=stop) as runtime:
            events: list[dict[str, Any]] = []
            spy_cm = observer(mosquitto.port)
            spy = await spy_cm.__aenter__()
            await spy.subscribe(T.events, 1)

            async def collect() -> None:
                async for m in spy.messages:
                    events.append(json.loads(m.payload))

            collector = asyncio.create_task(collect())
            async with OffboardClient("127.0.0.1", mosquitto.port, VEHICLE) as c:
                await c.wait_for_state(
                    lambda s: s.get("com_of_loss_t_s") is not None
                    and bool(s.get("estimates", {}).get("local_position")), timeout_s=15)
                assert (await c.engage(PositionNed(0, 0, -3), arm=True)).ok
                await c.wait_for_state(lambda s: s["phase"] == "active", timeout_s=15)
                stop.set()  # SIGTERM
                await asyncio.sleep(0)
        engine = runtime.engine
        assert engine is not None
        final_phase = engine.phase.value
        await asyncio.sleep(1.0)
        collector.cancel()
        await spy_cm.__aexit__(None, None, None)
    got = await _retained(mosquitto.port, [T.state, T.availability])
    state: dict[str, Any] = json.loads(got[T.state])
    assert got[T.availability] == b"offline"
    assert state["phase"] == final_phase, (state["phase"], final_phase)


class _OneWayProxy:
    """A loopback proxy whose daemon->broker direction can be frozen alone (a radio link
    that still receives but no longer gets through: bytes sit in buffers, no FIN/RST)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.up_flowing = asyncio.Event()
        self.up_flowing.set()
        self.port = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self.conns: list[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = []

    async def _pump(self, r: asyncio.StreamReader, w: asyncio.StreamWriter,
                    gate: asyncio.Event | None) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await r.read(65536):
                if gate is not None and not gate.is_set():
                    continue  # frozen: what the daemon sends never arrives
                w.write(data)
                await w.drain()
        w.close()

    async def serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        ur, uw = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self.conns.append((w, uw))
        self.tasks.add(asyncio.create_task(self._pump(r, uw, self.up_flowing)))
        self.tasks.add(asyncio.create_task(self._pump(ur, w, None)))


async def test_a_reply_underway_when_the_session_ends_is_sent_after_reconnect(
        mosquitto: Broker) -> None:
    """A command arrives, its reply is published, and the uplink dies before the PUBACK
    (a flaky radio: very common on a drone). The session times out and reconnects; `state`
    is re-queued when its publish fails (outbox.state_failed) but a reply is not: the
    commander never gets it. docs/mqtt-api.md: "Every command gets exactly one reply"."""
    from tests.mqtt.helpers import request_properties, running_bridge  # noqa: PLC0415

    proxy = _OneWayProxy(mosquitto.port)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    settings = settings_for(proxy.port, "5", timeout_s=1.0, keepalive_s=2)
    try:
        async with running_bridge(settings) as daemon, observer(mosquitto.port) as cmdr:
            bridge = daemon.bridge
            await cmdr.subscribe("review/replies", 1)
            proxy.up_flowing.clear()  # the uplink dies
            await cmdr.publish(bridge.topics.cmd, json.dumps(
                {"v": 1, "id": "r1", "cmd": "hold"}).encode(), qos=1,
                properties=request_properties("review/replies", b"k1"))
            connects = bridge.connect_count
            for _ in range(100):  # the session ends (PUBACK timeout / keepalive)
                if not bridge.connected.is_set():
                    break
                await asyncio.sleep(0.1)
            proxy.up_flowing.set()  # the link is back
            for _ in range(100):
                if bridge.connect_count > connects:
                    break
                await asyncio.sleep(0.1)
            got = []
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    async for m in cmdr.messages:
                        got.append(json.loads(m.payload))
                        break
            assert len(daemon.received) == 1
            assert got and got[0]["id"] == "r1", "the reply to r1 never arrived"
    finally:
        server.close()
        for t in proxy.tasks:
            t.cancel()


async def test_telemetry_stops_when_the_fc_link_is_lost(mosquitto: Broker) -> None:
    """The FC link goes silent (a cable, a PX4 reboot). `state` then says fc_link down and
    blanks what the FC last said (docs/mqtt-api.md, Outbound payloads); telemetry/<kind>
    carries no timestamp, so republishing the last cached value at the configured rate
    tells every subscriber that the vehicle sits there, with that battery, indefinitely."""
    async with stack(mosquitto) as st, observer(mosquitto.port) as spy:
        sim, runtime = st.sim, st.runtime
        await spy.subscribe(T.telemetry("position"), 0)
        await spy.subscribe(T.telemetry("battery"), 0)
        await spy.subscribe(T.state, 1)
        engine = runtime.engine
        assert engine is not None
        for _ in range(100):
            if engine.fc_up and runtime.fc_input.telemetry.document("position"):
                break
            await asyncio.sleep(0.1)
        sim.drop_link()
        for _ in range(100):
            if not engine.fc_up:
                break
            await asyncio.sleep(0.1)
        assert not engine.fc_up
        # Messages arrive in order: what was published before the loss comes before
        # the first state saying so; count only what follows it (4 s of it).
        counts: dict[str, int] = {}
        lost_seen_s: float | None = None
        loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                async for m in spy.messages:
                    if str(m.topic) == T.state:
                        doc = json.loads(m.payload)
                        if doc.get("fc_link") == "lost" and lost_seen_s is None:
                            lost_seen_s = loop.time()
                    elif lost_seen_s is not None:
                        counts[str(m.topic)] = counts.get(str(m.topic), 0) + 1
                    if lost_seen_s is not None and loop.time() - lost_seen_s > 4.0:
                        break
        assert lost_seen_s is not None
        assert not counts, counts
