"""What the runner reads from the daemon besides commands: the vehicle's position as
published on `telemetry/position`, and whether the retained state says it can fly.

A background task reads the topic through `OffboardClient.watch` and keeps the newest
local NED position with its arrival time; `fresh()` returns it only while it is recent, so a
stalled feed never passes for a vehicle at rest. Client side only: no MAVLink, no sim.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from types import TracebackType
from typing import Any

from offboardd.client import ClientError, OffboardClient
from offboardd.scenario.geometry import Vector
from offboardd.scenario.report import ScenarioError


def parse_position(payload: bytes) -> Vector | None:
    """north_m, east_m, down_m from a telemetry/position document; None when absent
    (the daemon sends null while PX4 has no local position)."""
    try:
        doc = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    ned = (doc.get("north_m"), doc.get("east_m"), doc.get("down_m"))
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in ned):
        return None
    return (float(ned[0]), float(ned[1]), float(ned[2]))  # type: ignore[arg-type]


def not_ready(s: dict[str, Any]) -> list[str]:
    """What the daemon's state still lacks before a mission can start (empty: ready)."""
    missing = {
        "the flight controller": s.get("fc_link") == "up",
        "its parameters (COM_OF_LOSS_T...)": s.get("com_of_loss_t_s") is not None,
        "a local position estimate": bool(s.get("estimates", {}).get("local_position")),
        # EXTENDED_SYS_STATE may come after the rest: "undefined" is not "on the ground"
        "its landed state": s.get("landed_state") not in (None, "undefined"),
    }
    return [what for what, ok in missing.items() if not ok]


class PositionFeed:
    def __init__(self, client: OffboardClient, *, stale_s: float,
                 on_sample: Callable[[Vector], None] | None = None) -> None:
        self.client = client
        self.stale_s = stale_s
        self.on_sample = on_sample
        self.latest: Vector | None = None
        self._loop = asyncio.get_running_loop()
        self._latest_at = -1e9
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> PositionFeed:
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def check(self) -> None:
        """Raise ScenarioError if the reader ended (the broker connection is gone)."""
        if self._task is None or not self._task.done():
            return
        error = None if self._task.cancelled() else self._task.exception()
        raise ScenarioError(f"the telemetry feed ended: {error or 'broker connection lost'}")

    def fresh(self) -> Vector | None:
        """The latest position if it arrived within `stale_s`, else None."""
        recent = self._loop.time() - self._latest_at <= self.stale_s
        return self.latest if recent else None

    async def _read(self) -> None:
        wanted = self.client.topics.telemetry("position")
        with contextlib.suppress(ClientError):  # the connection ended: see check()
            async for message in self.client.watch([wanted]):
                if message.topic != wanted:
                    continue  # the watch queue also carries state and replies
                position = parse_position(message.payload)
                if position is not None:
                    self.latest, self._latest_at = position, self._loop.time()
                    if self.on_sample is not None:
                        self.on_sample(position)
