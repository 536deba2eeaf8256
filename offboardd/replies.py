"""Pending replies: which commander gets the engine's reply to which command.

Two commanders may pick the same command id, and each must get its own reply, so the
engine sees an internal token instead (`#1`, `#2`...) and the reply is matched back by it.
A reply goes to an MQTT route (the bridge publishes it) or to a future (`Runtime.submit`).
Bounded: a commander that never waits for its replies cannot grow memory.

A command delivered again (the same route, id and content: QoS 1 delivers at least once, a
client retries when a reply is late) is known as such: while it awaits its reply, the
reply answers both; and a command that makes the vehicle go (engage, arm, a motion), for
`ANSWERED_KEEP_S` after it succeeded, is answered again with that reply (`"repeat": true`)
instead of acting again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections import OrderedDict

from offboardd.core.actions import Reply
from offboardd.core.command_kind import CommandKind
from offboardd.core.commands import Command
from offboardd.mqtt.wire import ReplyRoute

ReplySink = ReplyRoute | asyncio.Future[Reply]
_MAX_PENDING = 1024
# How long a command that succeeded is remembered, so that its repeat does not act again: a
# retry after a reply was lost comes within seconds; a late copy held back by a bridged
# broker or a stalled network, within about a minute (a goto re-flown after the commander
# sent the vehicle elsewhere). Longer would catch a restarted client that counts its ids
# from 1 again and sends the same command.
ANSWERED_KEEP_S = 60.0
# Answered from memory: the commands whose late copy could make the vehicle go where or
# when nobody wants it any more; not acting is the safe side of a mistaken repeat. Never a
# stop (release, hold, land, rtl, stop, disarm, emergency_stop): a dashboard's button may
# send the same id each time, and an "ok, repeat" to a stop that did nothing left a vehicle
# flying that had taken off again since (review, 2026-11-29); nor setpoints and heartbeats,
# which repeat on purpose and renew the lease each time (a setpoint's session and seq are
# the replay guard's: schema.py). A refusal or a failure is not remembered either: the
# retry of a command that did not act acts.
_GO_COMMANDS = frozenset({CommandKind.ENGAGE, CommandKind.ARM, CommandKind.GOTO,
                          CommandKind.PATH, CommandKind.ORBIT})


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
        # (reply topic, id) -> (command, its reply, when) of the commands that succeeded in
        # the last ANSWERED_KEEP_S, the oldest first
        self._answered: OrderedDict[tuple[str, str], tuple[Command, Reply, float]] = \
            OrderedDict()

    def repeats_pending(self, command: Command, sink: ReplySink) -> bool:
        """`command` is one still awaiting its reply, delivered again: the same id, route
        and content (QoS 1 delivers at least once; a client retries). Its reply answers
        both: an engage repeated in its warm-up was refused phase_not_allowed, then
        answered ok, two contradicting replies to one id (review, 2026-11-29)."""
        if isinstance(sink, asyncio.Future):
            return False
        entry = self._awaiting.get((sink.topic, command.command_id))
        return entry is not None and entry[1] == command

    def answered_before(self, command: Command, sink: ReplySink, now: float) -> Reply | None:
        """The reply of `command` when it succeeded within ANSWERED_KEEP_S, delivered again
        (the same route, id and content): answer with it, do not act again."""
        if isinstance(sink, asyncio.Future):
            return None
        answered = self._answered
        while answered:
            oldest = next(iter(answered.values()))
            if now - oldest[2] <= ANSWERED_KEEP_S:
                break
            answered.popitem(last=False)
        entry = answered.get((sink.topic, command.command_id))
        return entry[1] if entry is not None and entry[0] == command else None

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

    def resolve(self, reply: Reply, now: float) -> tuple[Reply, ReplySink] | None:
        """The reply under the commander's own id and where it goes (None: not ours)."""
        pending = self._pending.pop(reply.command_id, None)
        if pending is None:
            return None
        command_id, sink = pending
        command = self._forget(command_id, sink, reply.command_id)
        reply = dataclasses.replace(reply, command_id=command_id)
        if (command is not None and reply.ok and command.kind in _GO_COMMANDS
                and isinstance(sink, ReplyRoute) and sink.reply_on_success):
            key = (sink.topic, command_id)
            self._answered.pop(key, None)  # (re-entered as the newest)
            self._answered[key] = (command, reply, now)
            while len(self._answered) > self._max_pending:
                self._answered.popitem(last=False)
        return reply, sink

    def drop(self, token: str) -> None:
        """The engine failed on this command (a bug, answered `internal_error`): no reply of
        its will come, and a retry is a new command. Kept pending, every retry was taken
        for a repeat and dropped unanswered (review)."""
        pending = self._pending.pop(token, None)
        if pending is not None:
            self._forget(pending[0], pending[1], token)

    def _forget(self, command_id: str, sink: ReplySink, token: str) -> Command | None:
        """No longer awaiting: the command as it came (None for a future's)."""
        if isinstance(sink, asyncio.Future):
            return None
        key = (sink.topic, command_id)
        entry = self._awaiting.get(key)
        if entry is not None and entry[0] == token:
            del self._awaiting[key]
            return entry[1]
        return None

    def original_id(self, token: str) -> str:
        """The commander's id of a command the engine knows by `token` (else as given)."""
        return self._names.get(token, token)

    def __len__(self) -> int:
        return len(self._pending)
