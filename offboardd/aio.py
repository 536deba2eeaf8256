"""Asyncio guards shared by the daemon and the client."""

from __future__ import annotations

import asyncio


def raise_if_cancelling() -> None:
    """Raise CancelledError when the current task was asked to stop.

    Python 3.11's `asyncio.wait_for` (used inside aiomqtt's publish and subscribe) returns
    the result instead of raising when a cancellation arrives just as its wait completes.
    The request is still counted by `Task.cancelling()`, so a loop that checks it each turn
    ends anyway instead of running on and hanging whoever awaits it (seen in CI: `offboardd
    ctl engage --keep-lease` never exited)."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
