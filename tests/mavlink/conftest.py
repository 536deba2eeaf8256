"""Helpers for the link tests: a recorder for the callbacks, real MAVLink frames, a running link.

Everything waits by polling with short sleeps and generous deadlines: the machine is shared,
so a slow wake-up must never fail a test, only a wrong outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.links import Link, LinkState

WAIT_S = 5.0  # a deadline, not an expectation: the happy path takes milliseconds


def heartbeat(codec: MavlinkCodec, marker: int) -> bytes:
    """A real HEARTBEAT frame; `marker` (in custom_mode) tells frames apart."""
    msg = dialect.MAVLink_heartbeat_message(
        type=dialect.MAV_TYPE_ONBOARD_CONTROLLER,
        autopilot=dialect.MAV_AUTOPILOT_INVALID,
        base_mode=0,
        custom_mode=marker,
        system_status=dialect.MAV_STATE_ACTIVE,
        mavlink_version=3,
    )
    return codec.encode(msg)


def markers(messages: list[Any]) -> list[int]:
    return [int(m.custom_mode) for m in messages if m.get_type() == "HEARTBEAT"]


class Recorder:
    """The link's callbacks: every chunk decoded with a real codec, every state kept."""

    def __init__(self) -> None:
        self.codec = MavlinkCodec(1, 1)
        self.chunks: list[bytes] = []
        self.messages: list[Any] = []
        self.states: list[LinkState] = []

    def on_bytes(self, data: bytes) -> None:
        self.chunks.append(data)
        self.messages.extend(self.codec.decode(data))

    def on_state(self, state: LinkState) -> None:
        self.states.append(state)

    @property
    def transitions(self) -> list[LinkState]:
        """Up, down, up...: the states but a down link's reports of why it cannot open
        again (`failures`)."""
        return [s for s in self.states if not s.open_failed]

    @property
    def ups(self) -> list[bool]:
        return [s.up for s in self.transitions]

    @property
    def failures(self) -> list[str]:
        """What a down link reported of its failed opens (each reason once per down)."""
        return [s.detail for s in self.states if s.open_failed]

    def markers(self) -> list[int]:
        return markers(self.messages)


async def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def running(link: Link) -> AsyncIterator[asyncio.Task[None]]:
    """Run `link` for the block; cancel it after and check it ended by cancellation."""
    task = asyncio.create_task(link.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert not link.up


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}
