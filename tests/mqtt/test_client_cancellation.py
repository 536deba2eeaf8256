"""A task that loops over `OffboardClient.setpoint` or `renew_lease` must end when cancelled.

Python 3.11's `asyncio.wait_for`, inside aiomqtt's publish (QoS 0 too: the packet is written
by a loop callback), returns instead of raising when the cancellation arrives as its wait
completes. A caller's loop then runs on, and whoever awaits it waits forever. Seen in full
runs: `offboardd demo` flew its whole mission after SIGTERM (the scenario runner's
setpoint loop; test_interrupted_demo_leaves_no_process_behind[sigterm] got exit 0, not
130) and the bench smoke test hung until pytest's 120 s timeout (the bench commander's
lease loop, `beating.cancel()` then `await beating`).

The property holds because `OffboardClient` calls `offboardd.aio.raise_if_cancelling()`
after each publish (as its own heartbeat loop and the bridge do). Each test cancels a tight
publishing loop up to 60 times; without that call about 4 cancellations in 10 were lost
here (measured), so one is lost within the first few in every run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from offboardd.client import OffboardClient
from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.mqtt.fake_daemon import fake_daemon
from tests.mqtt.helpers import ends_when_cancelled, settings_for

pytestmark = pytest.mark.integration
CANCELS = 60


async def a_cancellation_is_lost(publish: Callable[[], Awaitable[object]]) -> bool:
    """Cancel a loop of `publish()` up to CANCELS times, at varied moments: True at the
    first loop still running a second after its cancellation (then ended by force)."""
    for k in range(CANCELS):
        async def loop() -> None:
            while True:
                await publish()
                await asyncio.sleep(0)

        task = asyncio.create_task(loop())
        await asyncio.sleep(0.001 * (k % 7))
        if not await ends_when_cancelled(task, timeout_s=1.0):  # it ends at its next await
            return True
    return False


async def test_a_setpoint_loop_ends_when_cancelled(mosquitto: Broker) -> None:
    async with OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        assert not await a_cancellation_is_lost(lambda: c.setpoint(PositionNed(0, 0, -3)))


async def test_a_lease_renewal_loop_ends_when_cancelled(mosquitto: Broker) -> None:
    async with fake_daemon(settings_for(mosquitto.port)), \
            OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        assert not await a_cancellation_is_lost(c.renew_lease)


async def test_a_watch_cancelled_while_it_subscribes_ends(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scenario runner's PositionFeed reads `watch()` in a task it cancels on exit; a
    cancellation swallowed by the subscribe left the reader waiting on its queue forever,
    and the feed's exit with it. Reproduced exactly: a subscribe that swallows it."""
    async with OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        subscribing = asyncio.Event()
        subscribe = c._mqtt.subscribe

        async def subscribe_swallowing(*args: Any, **kwargs: Any) -> Any:
            subscribing.set()
            with contextlib.suppress(asyncio.CancelledError):  # as 3.11's wait_for can
                await asyncio.sleep(0.05)
            return await subscribe(*args, **kwargs)

        monkeypatch.setattr(c._mqtt, "subscribe", subscribe_swallowing)

        async def read() -> None:
            async for _ in c.watch(["offboardd/v1/telemetry/#"]):
                pass

        task = asyncio.create_task(read())
        await asyncio.wait_for(subscribing.wait(), 5)
        assert await ends_when_cancelled(task), "the watch kept reading after it was cancelled"
