"""A fake daemon side for client and ctl tests: a real bridge whose on_command plays engine.

It replies ok to everything except `arm` while "flying" (refused, like the engine would)
and an engage when told to refuse it, publishes a state document on engage/land, and
records what it got.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from offboardd.core.commands import Arm, Command, CommanderHeartbeat, Engage, Land, Release
from offboardd.errors import ErrorCode
from offboardd.logs import configure_logging
from offboardd.mqtt.bridge import InboundCommand, MqttBridge, MqttSettings
from offboardd.mqtt.queries import FlightsQuery
from tests.mqtt.helpers import settings_for


@dataclass
class FakeEngine:
    commands: list[Command] = field(default_factory=list)
    heartbeats: int = 0
    phase: str = "idle"
    bridge: MqttBridge | None = None
    refuse_engage: bool = False  # as the engine does without a position estimate

    def on_command(self, inbound: InboundCommand) -> None:
        assert self.bridge is not None
        command = inbound.command
        if isinstance(command, FlightsQuery):
            self.bridge.reply(inbound.route, ok=True, message="0 flights", flights=[])
            return
        if isinstance(command, CommanderHeartbeat):
            self.heartbeats += 1
        else:
            self.commands.append(command)
        if isinstance(command, Arm) and self.phase == "active":
            self.bridge.reply(inbound.route, ok=False, code=ErrorCode.COMMAND_NOT_ALLOWED,
                              message="arm: not allowed in phase active", phase=self.phase)
            return
        if isinstance(command, Engage) and self.refuse_engage:
            self.bridge.reply(inbound.route, ok=False, code=ErrorCode.COMMAND_NOT_ALLOWED,
                              message="engage: no position estimate", reason="estimate_missing")
            return
        if isinstance(command, Engage):
            self.phase = "active"
        elif isinstance(command, Land | Release):
            self.phase = "idle"
        self.bridge.publish_state({"phase": self.phase, "armed": self.phase == "active"})
        self.bridge.reply(inbound.route, ok=True, message=f"{command.kind} done")


@contextlib.asynccontextmanager
async def fake_daemon(settings: MqttSettings) -> AsyncIterator[FakeEngine]:
    engine = FakeEngine()
    engine.bridge = MqttBridge(settings, engine.on_command)
    engine.bridge.publish_state({"phase": "idle", "armed": False})
    task = asyncio.create_task(engine.bridge.run())
    try:
        await asyncio.wait_for(engine.bridge.connected.wait(), 10)
        yield engine
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _main(port: int, protocol: str) -> None:
    configure_logging("warning")
    async with fake_daemon(settings_for(port, protocol)) as engine:
        assert engine.bridge is not None
        engine.bridge.publish_telemetry("position", {"north_m": 1.0, "east_m": 2.0})
        print("ready", flush=True)
        while True:
            await asyncio.sleep(0.2)
            engine.bridge.publish_telemetry("position", {"north_m": 1.0, "east_m": 2.0})


if __name__ == "__main__":  # run as a separate process for ctl tests
    asyncio.run(_main(int(sys.argv[1]), sys.argv[2]))
