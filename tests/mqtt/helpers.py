"""Shared helpers for the MQTT tests: an observer client and a bridge run as a task.

Tests may import aiomqtt (they are not the daemon); every broker is the `mosquitto`
fixture on a free loopback port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from offboardd.mqtt.bridge import InboundCommand, MqttBridge, MqttSettings


def settings_for(port: int, protocol: str = "5", **overrides: Any) -> MqttSettings:
    values: dict[str, Any] = {
        "host": "127.0.0.1", "port": port, "vehicle_id": "v1", "protocol": protocol,
        "reconnect_min_s": 0.05, "reconnect_max_s": 0.3, "state_min_interval_s": 0.0,
    }
    values.update(overrides)
    return MqttSettings(**values)


@dataclass
class Daemon:
    """A bridge whose on_command records and (optionally) replies ok, like the runtime."""

    bridge: MqttBridge
    received: list[InboundCommand] = field(default_factory=list)


@contextlib.asynccontextmanager
async def running_bridge(
    settings: MqttSettings,
    *,
    auto_reply: bool = True,
    decoder: Any = None,
    wait_connected: bool = True,
) -> AsyncIterator[Daemon]:
    holder: list[Daemon] = []

    def on_command(inbound: InboundCommand) -> None:
        holder[0].received.append(inbound)
        if auto_reply:
            holder[0].bridge.reply(inbound.route, ok=True, message="done")

    bridge = MqttBridge(settings, on_command, decoder=decoder)
    holder.append(Daemon(bridge))
    task = asyncio.create_task(bridge.run())
    try:
        if wait_connected:
            await asyncio.wait_for(bridge.connected.wait(), 10)
        yield holder[0]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def observer(port: int, protocol: str = "5", **kwargs: Any) -> aiomqtt.Client:
    version = aiomqtt.ProtocolVersion.V5 if protocol == "5" else aiomqtt.ProtocolVersion.V311
    return aiomqtt.Client("127.0.0.1", port, protocol=version, **kwargs)


async def next_message(
    client: aiomqtt.Client,
    topic: str,
    timeout_s: float = 5.0,
    where: Callable[[aiomqtt.Message], bool] = lambda m: True,
) -> aiomqtt.Message:
    async def first() -> aiomqtt.Message:
        async for message in client.messages:
            if message.topic.matches(topic) and where(message):
                return message
        raise AssertionError("message stream ended")

    return await asyncio.wait_for(first(), timeout_s)


def body(message: aiomqtt.Message) -> Any:
    assert isinstance(message.payload, bytes)
    return json.loads(message.payload)


def dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


def request_properties(response_topic: str, correlation: bytes) -> Properties:
    props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
    props.ResponseTopic = response_topic
    props.CorrelationData = correlation
    return props


async def ends_when_cancelled(task: asyncio.Task[Any], timeout_s: float = 3.0) -> bool:
    """Cancel `task` once; True if it ended within `timeout_s`. Either way it is cancelled
    again until it ends, so nothing keeps running behind the test."""
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=timeout_s)
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=0.1)
    return bool(done)
