"""The runtime's one cycle (tick, polled UDP read, telemetry) against the sim: it keeps
coming, and FC messages wait at most `read_period_s` for it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from offboardd.core.actions import Action
from offboardd.core.events import Event
from offboardd.mqtt.inbound_gate import InboundGate
from offboardd.mqtt.schema import CommandDecoder
from offboardd.mqtt.settings import MqttSettings
from offboardd.mqtt.topics import Topics
from offboardd.mqtt.wire import ReplyRoute, encode_document
from tests.integration.harness import flight

pytestmark = pytest.mark.integration


async def test_a_failing_cycle_is_counted_and_the_stream_goes_on(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    async with flight() as fl:
        await fl.takeoff(-2.0)
        engine = fl.runtime.engine
        assert engine is not None
        real_step = engine.step
        failed: list[float] = []

        def step_failing_once(events: Sequence[Event], now: float) -> list[Action]:
            if not failed:
                failed.append(now)
                raise RuntimeError("a bug in the tick")
            return real_step(events, now)

        monkeypatch.setattr(engine, "step", step_failing_once)
        sent = len(fl.sim.record.setpoints)
        await fl.wait_for(lambda: len(fl.sim.record.setpoints) >= sent + 10, 5.0,
                          "the stream going on after the failed cycle")
        assert failed and fl.runtime.internal_errors == 1
        assert fl.sim.vehicle.mode_name == "OFFBOARD"
        fl.runtime.internal_errors = 0  # seen; the harness checks for others on the way out


async def test_idle_the_link_is_still_read_every_read_period() -> None:
    async with flight() as fl:
        await fl.wait_fc_ready()
        assert fl.runtime.link.polled  # the event loop never reads it: the cycle must
        codec = fl.runtime.codec
        before = codec.stats.frames_ok
        await asyncio.sleep(1.0)  # not engaged: no stream ticks, only the read period
        assert codec.stats.frames_ok - before > 10  # the light profile sends ~30 frames/s


class _Replies:
    """The bridge's reply side, recorded (the runtime's outputs and the gate answer here)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str | None, bool, str | None]] = []

    def reply(self, route: ReplyRoute, *, ok: bool, code: str | None = None,
              message: str = "", **extra: object) -> None:
        self.sent.append((route.command_id, ok, None if code is None else str(code)))


async def test_a_command_the_engine_failed_on_is_answered_and_its_retry_acts(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug raising while the engine handles a command: `internal_error`, and the retry
    the docs invite is a new command. Its token was left pending, and every retry was taken
    for a repeat of it and dropped unanswered (review, 2026-11-29)."""
    async with flight() as fl:
        await fl.wait_fc_ready()
        runtime, replies = fl.runtime, _Replies()
        monkeypatch.setattr(runtime.outputs, "bridge", replies)
        gate = InboundGate(MqttSettings(vehicle_id="v"), Topics.for_vehicle("v"),
                           CommandDecoder(), runtime._on_inbound, replies.reply,
                           clock=asyncio.get_running_loop().time)
        engine = runtime.engine
        assert engine is not None
        real_handle_all = engine.handle_all
        failed: list[float] = []

        def failing_once(events: Sequence[Event], now: float, *,
                         commander: str | None = None) -> list[Action]:
            if commander is not None and not failed:
                failed.append(now)
                raise RuntimeError("a bug in a command")
            return real_handle_all(events, now, commander=commander)

        monkeypatch.setattr(engine, "handle_all", failing_once)
        disarm = encode_document({"id": "d1", "cmd": "disarm"})
        gate.handle("cmd", disarm, retain=False)
        assert replies.sent == [("d1", False, "internal_error")]
        assert len(runtime.outputs.replies) == 0  # nothing left awaiting a reply
        gate.handle("cmd", disarm, retain=False)  # the retry
        await fl.wait_for(lambda: len(replies.sent) == 2, 2.0, "the retry's reply")
        assert replies.sent[1][:2] == ("d1", True)
        assert engine.commander is None
        fl.runtime.internal_errors = 0
