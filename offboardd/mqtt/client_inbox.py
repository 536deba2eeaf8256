"""What an `OffboardClient` reads: replies matched to the commands waiting for them, the
retained `state`, `availability`, the `watch` queue, and the signals that this commander
lost control (control_watch.py).

The client's inbound half, split from client.py along the line a reader would draw: the
client sends (commands, setpoints, the lease's heartbeats), the inbox listens. It never
publishes. It does not reconnect: when the broker goes away it fails every waiting
command and every later call at once (`lost`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import aiomqtt

from offboardd.mqtt.client_motion import MotionTracker
from offboardd.mqtt.client_types import ClientError, Reply, ReplyTimeout, Watched
from offboardd.mqtt.control_watch import ControlWatch
from offboardd.mqtt.topics import Topics

StatePredicate = Callable[[dict[str, Any]], bool]
WATCH_QUEUE_MAX = 1000


class ClientInbox:
    def __init__(self, topics: Topics, inbox_topic: str, session: str, client_id: str) -> None:
        self.topics = topics
        self.inbox_topic = inbox_topic  # where our replies arrive
        self._stream_ids = f"{session}:"  # replies to the setpoint topic's messages
        self._command_ids = f"{client_id}-"
        self.state: dict[str, Any] | None = None  # latest retained state document
        self.state_received_s: float | None = None  # (the loop's clock) when it came
        self.state_changed = asyncio.Condition()  # (also notified on `availability`)
        self.availability: str | None = None  # the retained `online` / `offline`, once read
        self.pending: dict[str, asyncio.Future[Reply]] = {}
        self.control = ControlWatch()
        self.last_stream_error: Reply | None = None  # a refused setpoint-topic message
        # The daemon's token, from the state or from a refusal, whichever came last:
        # quoting it takes control (resume from holding, take over; mqtt-api.md, the lease)
        self.resume_token: str | None = None
        self.heartbeat_failures = 0
        self.last_heartbeat_error: Reply | None = None
        self.watch_queue: asyncio.Queue[Watched | None] | None = None
        self.watch_dropped = 0
        self.lost: ClientError | None = None  # the broker connection, once gone
        self.motions = MotionTracker()  # goto / path / orbit / stop awaiting their end
        self.control.on_lost.append(self.motions.fail_all)  # no end will be reported then

    def start_watch(self) -> asyncio.Queue[Watched | None]:
        self.watch_queue = asyncio.Queue(maxsize=WATCH_QUEUE_MAX)
        return self.watch_queue

    async def read(self, mqtt: aiomqtt.Client) -> None:
        """Read until the connection ends; then fail whatever waits, at once."""
        try:
            await self._read_messages(mqtt)
        except aiomqtt.MqttError as exc:
            self.lost = ClientError(f"connection to the broker lost: {exc}")
            self.control.on_broker_lost(str(exc))
            self.motions.fail_all(self.lost)
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(self.lost)
            if self.watch_queue is not None:
                with contextlib.suppress(asyncio.QueueFull):
                    self.watch_queue.put_nowait(None)

    async def _read_messages(self, mqtt: aiomqtt.Client) -> None:
        async for message in mqtt.messages:
            if self.watch_queue is not None and isinstance(message.payload, bytes):
                topic = message.topic.value
                relative = topic.removeprefix(self.topics.prefix)
                try:
                    self.watch_queue.put_nowait(
                        Watched(topic, relative, message.payload, message.retain))
                except asyncio.QueueFull:
                    self.watch_dropped += 1
            if message.topic.matches(self.topics.availability):
                if isinstance(message.payload, bytes):
                    async with self.state_changed:
                        self.availability = message.payload.decode("utf-8", "replace").strip()
                        self.state_changed.notify_all()
                    self.control.on_availability(message.payload)
                continue
            try:
                doc = json.loads(message.payload) if isinstance(message.payload, bytes) else None
            except ValueError:
                continue
            if not isinstance(doc, dict):
                continue
            if message.topic.matches(self.topics.state):
                self.state_received_s = asyncio.get_running_loop().time()
                async with self.state_changed:
                    self.state = doc
                    self.resume_token = doc.get("resume_token")
                    self.state_changed.notify_all()
                self.control.on_state(doc)
            elif message.topic.matches(self.inbox_topic):
                reply = Reply.from_document(doc)
                if reply.id is None:  # refused unread (too large): MQTT 5 echoes our id
                    data = getattr(message.properties, "CorrelationData", None)
                    if isinstance(data, bytes):
                        reply = dataclasses.replace(reply, id=data.decode(errors="replace"))
                self.on_reply(reply)
            elif message.topic.matches(self.topics.events):
                self.motions.on_event(doc)

    def on_reply(self, reply: Reply) -> None:
        if not reply.ok:
            self.control.on_refusal(reply)
        if isinstance(token := reply.extra.get("resume"), str):  # a refusal, or an outcome
            self.resume_token = token  # that left the vehicle taken (the next one to quote)
        future = self.pending.get(reply.id or "")
        if future is not None and not future.done():
            future.set_result(reply)
        elif not reply.ok and reply.id and reply.id.startswith(self._stream_ids):
            self.last_stream_error = reply
        elif not reply.ok and reply.id and reply.id.startswith(self._command_ids):
            self.heartbeat_failures += 1  # a heartbeat refused (e.g. the lease had lapsed)
            self.last_heartbeat_error = reply

    async def wait_for_availability(self, timeout_s: float) -> str | None:
        """The daemon's retained `online` / `offline` (None: none came within `timeout_s`)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s), self.state_changed:
                await self.state_changed.wait_for(lambda: self.availability is not None)
        return self.availability

    async def wait_for_state(self, predicate: StatePredicate, timeout_s: float) -> dict[str, Any]:
        """Wait until the published state satisfies `predicate`; return that state."""
        async def satisfied() -> dict[str, Any]:
            async with self.state_changed:
                await self.state_changed.wait_for(
                    lambda: self.state is not None and predicate(self.state))
                assert self.state is not None
                return self.state
        try:
            async with asyncio.timeout(timeout_s):
                return await satisfied()
        except TimeoutError:
            if self.state is None:
                raise ReplyTimeout(f"no state retained on {self.topics.state} within "
                                   f"{timeout_s} s: is the vehicle id right, and has the "
                                   "daemon run?") from None
            raise ReplyTimeout(f"state did not match within {timeout_s} s; "
                               f"last state: {self.state}") from None
