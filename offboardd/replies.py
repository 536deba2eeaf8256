"""Pending replies: which commander gets the engine's reply to which command.

Two commanders may pick the same command id, and each must get its own reply, so the
engine sees an internal token instead (`#1`, `#2`...) and the reply is matched back by it.
A reply goes to an MQTT route (the bridge publishes it) or to a future (`Runtime.submit`).
Bounded: a commander that never waits for its replies cannot grow memory.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections import OrderedDict

from offboardd.core.actions import Reply
from offboardd.core.commands import Command
from offboardd.mqtt.wire import ReplyRoute

ReplySink = ReplyRoute | asyncio.Future[Reply]
_MAX_PENDING = 1024


def commander_of(sink: ReplySink) -> str:
    """Who sent a command, as the flight recorder's journal names it: its reply topic
    (the Python client's holds its client id), or "local" for the daemon's own."""
    return "local" if isinstance(sink, asyncio.Future) else sink.topic


class PendingReplies:
    def __init__(self, max_pending: int = _MAX_PENDING) -> None:
        self._pending: OrderedDict[str, tuple[str, ReplySink]] = OrderedDict()
        self._tokens = itertools.count(1)
        self._max_pending = max_pending
        # token -> the commander's id, kept past the reply: a motion's end (motion_done,
        # motion_aborted) and `state.motion` name its command after it was answered.
        self._names: OrderedDict[str, str] = OrderedDict()

    def tokenize(self, command: Command, sink: ReplySink) -> Command:
        """Remember where the reply goes; return the command as the engine should see it."""
        token = f"#{next(self._tokens)}"
        self._pending[token] = (command.command_id, sink)
        self._names[token] = command.command_id
        while len(self._names) > self._max_pending:
            self._names.popitem(last=False)
        while len(self._pending) > self._max_pending:
            _, (_, oldest) = self._pending.popitem(last=False)
            if isinstance(oldest, asyncio.Future) and not oldest.done():
                oldest.cancel()
        return dataclasses.replace(command, command_id=token)

    def resolve(self, reply: Reply) -> tuple[Reply, ReplySink] | None:
        """The reply under the commander's own id and where it goes (None: not ours)."""
        pending = self._pending.pop(reply.command_id, None)
        if pending is None:
            return None
        command_id, sink = pending
        return dataclasses.replace(reply, command_id=command_id), sink

    def original_id(self, token: str) -> str:
        """The commander's id of a command the engine knows by `token` (else as given)."""
        return self._names.get(token, token)

    def __len__(self) -> int:
        return len(self._pending)
