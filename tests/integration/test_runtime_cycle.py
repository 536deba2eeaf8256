"""The runtime's one cycle (tick, polled UDP read, telemetry) against the sim: it keeps
coming, and FC messages wait at most `read_period_s` for it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from offboardd.core.actions import Action
from offboardd.core.events import Event
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
