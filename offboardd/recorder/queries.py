"""The MQTT `flights` command answered (mqtt/queries.py): the flights folder is read in a
worker thread, never on the control loop, and only a few at a time, so a commander asking
in a loop queues no unbounded work."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from offboardd.mqtt.queries import FlightsQuery
from offboardd.mqtt.wire import MqttErrorCode, ReplyRoute
from offboardd.recorder.store import list_flights

log = structlog.get_logger("offboardd.recorder")

_MAX_RUNNING = 2


class FlightsQueries:
    def __init__(self, root: Path, recording: bool, reply: Callable[..., None],
                 open_flight: Callable[[], str | None] = lambda: None) -> None:
        self.root = root
        self._recording = recording
        self._open_flight = open_flight  # the folder the recorder writes now, if any
        self._reply = reply  # the bridge's: queues, never blocks
        self._running: set[asyncio.Task[None]] = set()

    def answer(self, query: FlightsQuery, route: ReplyRoute) -> None:
        if len(self._running) >= _MAX_RUNNING:
            self._reply(route, ok=False, code=MqttErrorCode.RATE_LIMITED.value,
                        message=f"{len(self._running)} flights queries still running")
            return
        task = asyncio.get_running_loop().create_task(self._answer(query, route),
                                                      name="flights")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _answer(self, query: FlightsQuery, route: ReplyRoute) -> None:
        try:
            flights = await asyncio.to_thread(list_flights, self.root, query.limit)
        except Exception as exc:  # (a task's exception would go unanswered, unretrieved)
            log.exception("flights_query_failed", root=str(self.root))
            self._reply(route, ok=False, code=MqttErrorCode.INTERNAL_ERROR.value,
                        message=f"cannot list the flights in {self.root}: {exc!r}")
            return
        off = "" if self._recording else " (recording is off)"
        open_now = self._open_flight()
        found: list[dict[str, Any]] = [
            {**f.summary.as_dict(), "recording": f.name == open_now and not f.summary.complete}
            for f in flights]
        self._reply(route, ok=True, message=f"{len(flights)} flights in {self.root}{off}",
                    flights=found)
