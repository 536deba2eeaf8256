"""The bridge against a real mosquitto: both protocols, will, retained state, reconnect,
retained commands refused, MQTT 5 request/response, the inbound gate."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from offboardd.core.commands import CommanderHeartbeat, Hold, SetSetpoint
from offboardd.core.setpoints import PositionNed
from offboardd.mqtt.bridge import InboundCommand, MqttBridge
from offboardd.mqtt.topics import AVAILABILITY_OFFLINE, Topics
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.helpers import (
    body,
    dumps,
    ends_when_cancelled,
    next_message,
    observer,
    request_properties,
    running_bridge,
    settings_for,
)

pytestmark = pytest.mark.integration
TOPICS = Topics.for_vehicle("v1")
PROTOCOLS = ["5", "3.1.1"]
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_command_reaches_engine_and_reply_echoes_id(
    mosquitto: Broker, protocol: str
) -> None:
    async with running_bridge(settings_for(mosquitto.port, protocol)) as daemon, \
            observer(mosquitto.port, protocol) as client:
        await client.subscribe(TOPICS.availability, 1)
        online = await next_message(client, TOPICS.availability)
        assert online.payload == b"online" and online.retain
        await client.subscribe(TOPICS.reply, 1)
        await client.publish(TOPICS.cmd, dumps({"v": 1, "id": "c-1", "cmd": "hold"}), qos=1)
        reply = body(await next_message(client, TOPICS.reply))
    assert reply == {"v": 1, "id": "c-1", "ok": True, "code": None, "message": "done"}
    [inbound] = daemon.received
    assert inbound.command == Hold("c-1")


async def test_mqtt5_response_topic_and_correlation_data(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)), observer(mosquitto.port) as client:
        await client.subscribe("me/inbox", 1)
        await client.subscribe(TOPICS.reply, 1)
        props = request_properties("me/inbox", b"\x00corr-7")
        await client.publish(TOPICS.cmd, dumps({"v": 1, "id": "c-2", "cmd": "land"}), qos=1,
                             properties=props)
        message = await next_message(client, "#")
    assert message.topic.value == "me/inbox"
    assert message.properties is not None
    assert getattr(message.properties, "CorrelationData", None) == b"\x00corr-7"
    assert body(message)["id"] == "c-2"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_retained_command_is_refused_never_acted_on(
    mosquitto: Broker, protocol: str
) -> None:
    async with observer(mosquitto.port, protocol) as client:
        # A retained engage left on the broker before the daemon (re)starts.
        await client.publish(TOPICS.cmd, dumps({"v": 1, "id": "old", "cmd": "engage"}), qos=1,
                             retain=True)
        await client.subscribe(TOPICS.reply, 1)
        async with running_bridge(settings_for(mosquitto.port, protocol)) as daemon:
            reply = body(await next_message(client, TOPICS.reply))
            assert reply["ok"] is False and reply["code"] == "retained_refused"
            assert reply["id"] == "old"
            assert daemon.received == []


async def test_mqtt5_live_retained_publish_is_refused(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.reply, 1)
        await client.publish(TOPICS.cmd, dumps({"v": 1, "id": "live", "cmd": "engage"}),
                             qos=1, retain=True)
        reply = body(await next_message(client, TOPICS.reply))
        assert (reply["id"], reply["code"]) == ("live", "retained_refused")
        assert daemon.received == []
        await client.publish(TOPICS.cmd, b"", qos=1, retain=True)  # clearing it: ignored
        await client.publish(TOPICS.cmd, dumps({"v": 1, "id": "next", "cmd": "hold"}), qos=1)
        reply = body(await next_message(client, TOPICS.reply))
        assert (reply["id"], reply["ok"]) == ("next", True)


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"{not json", "malformed_json"),
        (b'{"v":1,"id":"n","cmd":"x","north_m":NaN}', "not_finite"),
        (b'{"v":1,"id":"n","cmd":"x","north_m":1e400}', "not_finite"),
        (b"[1,2]", "not_an_object"),
        (b'{"v":2,"id":"n","cmd":"x"}', "unsupported_version"),
        (b'{"id":"n","cmd":"x"}', "missing_field"),
        (b"\xff\xfe", "malformed_json"),
        (b'{"v":1,"id":"n","cmd":"' + b"x" * 33_000 + b'"}', "payload_too_large"),
    ],
)
async def test_inbound_gate_refuses_with_codes(
    mosquitto: Broker, payload: bytes, code: str
) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.reply, 1)
        await client.publish(TOPICS.cmd, payload, qos=1)
        reply = body(await next_message(client, TOPICS.reply))
        assert reply["ok"] is False and reply["code"] == code, reply
        assert reply["message"]
        assert daemon.received == []


async def test_setpoint_topic_replies_only_to_refusals(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.reply, 1)
        hover = {"kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -5}
        await client.publish(TOPICS.setpoint, dumps({"v": 1, "session": "a", "seq": 1, **hover}))
        await client.publish(TOPICS.setpoint, dumps({"v": 1, "session": "a", "seq": 1, **hover}))
        reply = body(await next_message(client, TOPICS.reply))
        assert (reply["id"], reply["ok"], reply["code"]) == ("a:1", False, "setpoint_stale")
        [inbound] = daemon.received
        assert inbound.command == SetSetpoint("a:1", PositionNed(0, 0, -5))


async def test_a_lease_heartbeat_without_ack_is_answered_only_when_refused(
    mosquitto: Broker
) -> None:
    async with running_bridge(settings_for(mosquitto.port), auto_reply=False) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.reply, 1)
        for n in (1, 2):
            await client.publish(TOPICS.cmd, dumps({"v": 1, "id": f"hb{n}", "cmd": "heartbeat",
                                                    "ack": False}))
        await client.publish(TOPICS.cmd, dumps({"v": 1, "id": "hb3", "cmd": "heartbeat"}))
        await wait_until(lambda: len(daemon.received) == 3, "the three heartbeats")
        hb1, hb2, hb3 = daemon.received
        assert hb1.command == CommanderHeartbeat("hb1", ack=False)
        assert hb3.command == CommanderHeartbeat("hb3")
        daemon.bridge.reply(hb1.route, ok=True, message="renewed")  # not published
        daemon.bridge.reply(hb2.route, ok=False, code="lease_expired", message="lapsed")
        daemon.bridge.reply(hb3.route, ok=True, message="renewed")
        replies = [body(await next_message(client, TOPICS.reply)) for _ in range(2)]
    assert [(r["id"], r["ok"]) for r in replies] == [("hb2", False), ("hb3", True)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_late_subscriber_gets_retained_state(mosquitto: Broker, protocol: str) -> None:
    async with running_bridge(settings_for(mosquitto.port, protocol)) as daemon, \
            observer(mosquitto.port, protocol) as witness:
        await witness.subscribe(TOPICS.state, 1)
        daemon.bridge.publish_state({"phase": "idle", "armed": False, "gap_s": float("inf")})
        daemon.bridge.publish_state({"phase": "active", "armed": True, "gap_s": 0.05})
        # The broker has the newest state once a subscriber got it (not after a fixed sleep).
        await next_message(witness, TOPICS.state, where=lambda m: body(m)["phase"] == "active")
        async with observer(mosquitto.port, protocol) as late:
            await late.subscribe(TOPICS.state, 1)
            message = await next_message(late, TOPICS.state)
    assert message.retain
    assert body(message) == {"v": 1, "phase": "active", "armed": True, "gap_s": 0.05}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_stream_messages_arrive_whole_and_in_order(mosquitto: Broker, protocol: str) -> None:
    """Telemetry and relayed MAVLink are packets the bridge builds itself
    (stream_publisher.py): the broker takes them, small and large, on either protocol."""
    sizes = [1, 150, 20_000, 3]  # one, two and three bytes of remaining length
    async with running_bridge(settings_for(mosquitto.port, protocol)) as daemon, \
            observer(mosquitto.port, protocol) as witness:
        await witness.subscribe(TOPICS.telemetry("position"), 0)
        await asyncio.sleep(0.1)  # (QoS 0: only what is published after the subscription)
        for n, size in enumerate(sizes):
            daemon.bridge.publish_telemetry("position", {"n": n, "pad": "x" * size})
            await asyncio.sleep(0.15)  # (within the topic's rate: none is throttled)
        got = [body(await next_message(witness, TOPICS.telemetry("position")))
               for _ in sizes]
    assert [(doc["n"], len(doc["pad"])) for doc in got] == list(enumerate(sizes))
    assert not got[0].keys() - {"v", "n", "pad"}
    assert daemon.bridge.outbox_stats.dropped_stream == 0


async def test_broker_restart_reconnects_and_republishes_state(mosquitto: Broker) -> None:
    async with running_bridge(settings_for(mosquitto.port)) as daemon:
        daemon.bridge.publish_state({"phase": "active"})
        await asyncio.sleep(0.2)
        await asyncio.to_thread(mosquitto.stop)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5.0
        while daemon.bridge.connected.is_set():  # the bridge sees the broker go
            assert loop.time() < deadline, "still connected 5 s after the broker stopped"
            await asyncio.sleep(0.01)
        daemon.bridge.publish_telemetry("position", {"north_m": 1.0})  # dropped, not queued
        daemon.bridge.publish_event({"event": "while_away"})  # kept (bounded)
        await asyncio.to_thread(mosquitto.start)  # no persistence: retained state is gone
        await asyncio.wait_for(daemon.bridge.connected.wait(), 10)
        assert daemon.bridge.connect_count == 2
        async with observer(mosquitto.port) as late:
            await late.subscribe(TOPICS.state, 1)
            await late.subscribe(TOPICS.availability, 1)
            state = await next_message(late, TOPICS.state)
            online = await next_message(late, TOPICS.availability)
            # telemetry goes straight to paho: through the new session's client now
            await late.subscribe(TOPICS.telemetry("position"), 0)
            await asyncio.sleep(0.1)
            daemon.bridge.publish_telemetry("position", {"north_m": 2.0})
            position = await next_message(late, TOPICS.telemetry("position"))
    assert body(state)["phase"] == "active"
    assert online.payload == b"online"
    assert body(position)["north_m"] == 2.0
    assert daemon.bridge.outbox_stats.dropped_stream >= 1


async def test_a_failing_on_command_is_replied_to_and_the_bridge_survives(
    mosquitto: Broker,
) -> None:
    def broken(inbound: InboundCommand) -> None:
        raise RuntimeError("engine bug")

    bridge = MqttBridge(settings_for(mosquitto.port), broken)
    task = asyncio.create_task(bridge.run())
    try:
        await asyncio.wait_for(bridge.connected.wait(), 10)
        async with observer(mosquitto.port) as client:
            await client.subscribe(TOPICS.reply, 1)
            for command_id in ("b1", "b2"):
                await client.publish(TOPICS.cmd, dumps({"v": 1, "id": command_id, "cmd": "hold"}),
                                     qos=1)
                reply = body(await next_message(client, TOPICS.reply))
                assert (reply["id"], reply["code"]) == (command_id, "internal_error")
        assert bridge.connect_count == 1
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_cancel_publishes_offline_and_exits(mosquitto: Broker) -> None:
    async with observer(mosquitto.port) as client:
        async with running_bridge(settings_for(mosquitto.port)):
            await client.subscribe(TOPICS.availability, 1)
            assert (await next_message(client, TOPICS.availability)).payload == b"online"
        offline = await next_message(client, TOPICS.availability)
        assert offline.payload == b"offline"


async def test_nothing_follows_offline_on_a_clean_stop(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscriber takes the vehicle for gone at `offline`: telemetry, state or events the
    runtime publishes while the bridge stops (here: the moment the offline is acknowledged)
    must not reach the broker after it. They did, until aiomqtt's DISCONNECT."""
    settings = settings_for(mosquitto.port, telemetry_rates_hz={"battery": 100.0})
    publish = aiomqtt.Client.publish
    bridges: list[MqttBridge] = []

    async def publish_then_telemetry(self: aiomqtt.Client, topic: str, payload: Any = None,
                                     *args: Any, **kwargs: Any) -> None:
        await publish(self, topic, payload, *args, **kwargs)
        if payload == AVAILABILITY_OFFLINE:
            bridges[0].publish_telemetry("battery", {"voltage_v": 15.8})
            bridges[0].publish_state({"phase": "idle"})
            bridges[0].publish_event({"event": "transition", "to": "idle"})
            await asyncio.sleep(0.1)  # the outbox's publisher would have run by now

    monkeypatch.setattr(aiomqtt.Client, "publish", publish_then_telemetry)
    async with observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.everything, 0)
        async with running_bridge(settings) as daemon:
            bridges.append(daemon.bridge)
            daemon.bridge.publish_telemetry("battery", {"voltage_v": 15.7})
            await next_message(client, TOPICS.telemetry("battery"))
        await next_message(client, TOPICS.availability, where=lambda m: m.payload == b"offline")
        with pytest.raises(TimeoutError):
            late = await next_message(client, "#", timeout_s=0.5)
            raise AssertionError(f"{late.topic.value} after offline: {late.payload!r}")


async def test_telemetry_events_and_relay_are_published(mosquitto: Broker) -> None:
    settings = settings_for(mosquitto.port, mavlink_relay=frozenset({"EFI_STATUS"}))
    async with running_bridge(settings) as daemon, observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.everything, 0)
        await asyncio.sleep(0.1)
        daemon.bridge.publish_telemetry("battery", {"voltage_v": 15.8})
        daemon.bridge.publish_event({"event": "transition", "to": "active"})
        daemon.bridge.relay_mavlink("EFI_STATUS", {"rpm": 5000.0})
        daemon.bridge.relay_mavlink("ESC_STATUS", {"rpm": [1, 2]})  # not chosen: not relayed
        seen: dict[str, object] = {}
        while len(seen) < 3:
            message = await next_message(client, "#", where=lambda m: not m.retain)
            seen[message.topic.value] = body(message)
    assert seen[TOPICS.telemetry("battery")] == {"v": 1, "voltage_v": 15.8}
    assert seen[TOPICS.events] == {"v": 1, "event": "transition", "to": "active"}
    assert seen[TOPICS.mavlink("EFI_STATUS")] == {"v": 1, "rpm": 5000.0}


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from offboardd.mqtt.bridge import MqttBridge, MqttSettings
    from offboardd.logs import configure_logging

    async def main() -> None:
        configure_logging("warning")  # logs go to stderr; stdout carries "connected"
        settings = MqttSettings(host="127.0.0.1", port=int(sys.argv[1]), vehicle_id="v1",
                                protocol=sys.argv[2], keepalive_s=5)
        bridge = MqttBridge(settings, lambda inbound: None, )
        task = asyncio.create_task(bridge.run())
        await bridge.connected.wait()
        print("connected", flush=True)
        await task

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_sigkill_makes_subscribers_see_offline(mosquitto: Broker, protocol: str) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(mosquitto.port), protocol,
        stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 20)
        assert line.strip() == b"connected"
        async with observer(mosquitto.port, protocol) as client:
            await client.subscribe(TOPICS.availability, 1)
            assert (await next_message(client, TOPICS.availability)).payload == b"online"
            child.send_signal(signal.SIGKILL)
            offline = await next_message(client, TOPICS.availability, timeout_s=10)
            assert offline.payload == b"offline"
        async with observer(mosquitto.port, protocol) as late:  # the will was retained
            await late.subscribe(TOPICS.availability, 1)
            assert (await next_message(late, TOPICS.availability)).payload == b"offline"
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        await child.wait()


async def test_cancelled_while_subscribing_the_bridge_still_ends(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.11's wait_for inside aiomqtt's connect, subscribe and publish returns
    instead of raising when the cancellation arrives as the broker's answer does (a
    SIGTERM'd daemon while it (re)connects; 7 of 200 cancels during the connection lost
    here). _serve then waited on its publisher and receiver forever. Reproduced exactly:
    a subscribe that swallows the cancellation; _serve and run's retry loop now check
    Task.cancelling(), as the publish loop does."""
    subscribing = asyncio.Event()
    subscribe = aiomqtt.Client.subscribe

    async def subscribe_swallowing(self: aiomqtt.Client, *args: Any, **kwargs: Any) -> Any:
        subscribing.set()
        with contextlib.suppress(asyncio.CancelledError):  # as 3.11's wait_for can
            await asyncio.sleep(0.05)
        return await subscribe(self, *args, **kwargs)

    monkeypatch.setattr(aiomqtt.Client, "subscribe", subscribe_swallowing)
    bridge = MqttBridge(settings_for(mosquitto.port), lambda inbound: None)
    task = asyncio.create_task(bridge.run())
    await asyncio.wait_for(subscribing.wait(), 10)
    assert await ends_when_cancelled(task), "the bridge kept serving after it was cancelled"


async def test_a_retained_stream_setpoint_is_refused_quoting_session_and_seq(
    mosquitto: Broker,
) -> None:
    """mqtt-api.md: refusals on the setpoint topic quote "<session>:<seq>" when there is no
    id; a retained one was refused with "id": null (review)."""
    async with running_bridge(settings_for(mosquitto.port)) as daemon, \
            observer(mosquitto.port) as client:
        await client.subscribe(TOPICS.reply, 1)
        await client.publish(TOPICS.setpoint, dumps(
            {"v": 1, "session": "s9", "seq": 4, "kind": "position_ned", "north_m": 0,
             "east_m": 0, "down_m": -3}), qos=1, retain=True)
        reply = body(await next_message(client, TOPICS.reply))
        assert (reply["id"], reply["code"]) == ("s9:4", "retained_refused")
        assert daemon.received == []
        await client.publish(TOPICS.setpoint, b"", qos=1, retain=True)
