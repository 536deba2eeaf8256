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
        # (reply topic, id) -> (token, command) of each command awaiting its reply: a
        # second delivery of it is no new command (below)
        self._awaiting: dict[tuple[str, str], tuple[str, Command]] = {}

    def repeats_pending(self, command: Command, sink: ReplySink) -> bool:
        """`command` is one still awaiting its reply, delivered again: the same id, route
        and content (QoS 1 delivers at least once; a client retries). Its reply answers
        both: an engage repeated in its warm-up was refused phase_not_allowed, then
        answered ok, two contradicting replies to one id (review, 2026-11-29)."""
        if isinstance(sink, asyncio.Future):
            return False
        entry = self._awaiting.get((sink.topic, command.command_id))
        return entry is not None and entry[1] == command

    def tokenize(self, command: Command, sink: ReplySink) -> Command:
        """Remember where the reply goes; return the command as the engine should see it."""
        token = f"#{next(self._tokens)}"
        self._pending[token] = (command.command_id, sink)
        self._names[token] = command.command_id
        if not isinstance(sink, asyncio.Future):
            self._awaiting[(sink.topic, command.command_id)] = (token, command)
        while len(self._names) > self._max_pending:
            self._names.popitem(last=False)
        while len(self._pending) > self._max_pending:
            evicted, (command_id, oldest) = self._pending.popitem(last=False)
            self._forget(command_id, oldest, evicted)
            if isinstance(oldest, asyncio.Future) and not oldest.done():
                oldest.cancel()
        return dataclasses.replace(command, command_id=token)

    def resolve(self, reply: Reply) -> tuple[Reply, ReplySink] | None:
        """The reply under the commander's own id and where it goes (None: not ours)."""
        pending = self._pending.pop(reply.command_id, None)
        if pending is None:
            return None
        command_id, sink = pending
        self._forget(command_id, sink, reply.command_id)
        return dataclasses.replace(reply, command_id=command_id), sink

    def _forget(self, command_id: str, sink: ReplySink, token: str) -> None:
        if isinstance(sink, asyncio.Future):
            return
        key = (sink.topic, command_id)
        entry = self._awaiting.get(key)
        if entry is not None and entry[0] == token:
            del self._awaiting[key]

    def original_id(self, token: str) -> str:
        """The commander's id of a command the engine knows by `token` (else as given)."""
        return self._names.get(token, token)

    def __len__(self) -> int:
        return len(self._pending)
