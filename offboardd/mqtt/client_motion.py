"""The client side of onboard motions (issue 16): a motion command is answered once
accepted; its end comes later on the `events` topic as `motion_done` or `motion_aborted`
naming the command. `MotionHandle.done()` waits for that end:

    motion = await c.goto(PositionNed(20, 0, -10), speed_m_s=3)   # accepted: planned, checked
    await motion.done()                                          # arrived (MotionAborted if not)

The tracker lives in the client's inbox (it reads `events`); a lost broker or a loss of
control ends every motion still awaited with the reason.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from offboardd.mqtt.client_types import ClientError, Reply

MOTION_DONE, MOTION_ABORTED, WARNING = "motion_done", "motion_aborted", "warning"


class MotionAborted(ClientError):
    """The motion ended before its end: replaced, stopped, lease lapsed, taken over..."""

    def __init__(self, command_id: str, reason: str | None, message: str) -> None:
        super().__init__(f"{command_id}: {message}")
        self.command_id, self.reason, self.message = command_id, reason, message


@dataclass
class MotionHandle:
    """An accepted motion: its reply, and `done()` for its end."""

    command_id: str
    reply: Reply
    _end: asyncio.Future[dict[str, Any]]
    # the `warning` events about it, as they came (e.g. vehicle_trailing: its clock waits
    # for a vehicle that trails it; docs/motion.md)
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Done or aborted (then `done()` returns or raises at once)."""
        return self._end.done()

    async def done(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The `motion_done` event (a dict). MotionAborted if it ended early (with the
        daemon's reason), ControlLost if control ended first, ClientError if the broker
        went away: no end will come then."""
        async with asyncio.timeout(timeout_s):
            return await asyncio.shield(self._end)


class MotionTracker:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._warnings: dict[str, list[dict[str, Any]]] = {}

    def expect(self, command_id: str) -> tuple[asyncio.Future[dict[str, Any]],
                                               list[dict[str, Any]]]:
        """The motion's end, and the list its warning events will be added to."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[command_id] = future
        warnings: list[dict[str, Any]] = []
        self._warnings[command_id] = warnings
        return future, warnings

    def forget(self, command_id: str) -> None:
        self._waiting.pop(command_id, None)
        self._warnings.pop(command_id, None)

    def on_event(self, doc: dict[str, Any]) -> None:
        kind, command_id = doc.get("kind"), doc.get("command_id")
        if not isinstance(command_id, str):
            return
        if kind == WARNING and command_id in self._warnings:
            self._warnings[command_id].append(doc)
            return
        if kind not in (MOTION_DONE, MOTION_ABORTED):
            return
        self._warnings.pop(command_id, None)
        future = self._waiting.pop(command_id, None)
        if future is None or future.done():
            return
        if kind == MOTION_DONE:
            future.set_result(doc)
        else:
            future.set_exception(MotionAborted(command_id, doc.get("reason"),
                                               str(doc.get("message", ""))))
            future.exception()  # retrieved: a script need not await a motion it replaced

    def fail_all(self, error: ClientError) -> None:
        """The broker or control is gone: nothing awaited will be reported."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved here: nobody may be awaiting it
        self._waiting.clear()
        self._warnings.clear()
