"""The daemon's MQTT connection (with connection.py, the daemon's only aiomqtt importers).

Owns the connection life cycle (connect with a retained `offline` last will, announce
`online`, subscribe with a clean session so no backlog is ever replayed, reconnect forever
with exponential backoff and jitter, saying why an attempt failed), feeding what arrives
to the inbound gate (inbound_gate.py: size, retain flag, JSON, schema, replay) in front of
`on_command`, and the publisher that drains
the `Outbox`; telemetry and relayed MAVLink (QoS 0) go straight to paho through the
`StreamPublisher`. How to open a connection and explain a failure is in connection.py.

Must not: interpret commands (the engine does), block the caller (every publish method
only queues), or let anything invalid reach `on_command`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import aiomqtt
import paho.mqtt.client as paho_mqtt
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from offboardd.aio import raise_if_cancelling
from offboardd.errors import OffboarddError
from offboardd.mqtt import connection
from offboardd.mqtt.connection import IN_FLIGHT, ConnectFailure, FailureKind
from offboardd.mqtt.inbound_gate import Channel, InboundCommand, InboundDecoder, InboundGate
from offboardd.mqtt.outbox import Outbound, Outbox
from offboardd.mqtt.paho_io import InlineWrites
from offboardd.mqtt.schema import CommandDecoder
from offboardd.mqtt.settings import DEFAULT_TELEMETRY_RATES_HZ, MqttSettings, backoff_s
from offboardd.mqtt.stream_publisher import StreamPublisher
from offboardd.mqtt.topics import (
    AVAILABILITY_OFFLINE,
    AVAILABILITY_ONLINE,
    Topics,
)
from offboardd.mqtt.wire import (
    ReplyRoute,
    encode_document,
    reply_document,
)

log = structlog.get_logger("offboardd.mqtt")
# Messages published concurrently at most (one outbox drain): paho's in-flight window.
# A batch beyond it timed the session out over a slow link (64 events at a 1.25 s round
# trip: the last score waited three round trips for the window, then its own, past 5 s).
_MAX_BATCH = IN_FLIGHT
_NOT_HELD: AbstractContextManager[None] = contextlib.nullcontext()

STABLE_SESSION_S = 5.0  # a session this long starts the reconnect backoff over (run)

# MqttSettings lives in settings.py; it is re-exported here, next to the bridge it configures.
__all__ = ["DEFAULT_TELEMETRY_RATES_HZ", "InboundCommand", "InboundDecoder", "MqttBridge",
           "MqttSettings", "backoff_s"]


class MqttBridge:
    def __init__(
        self,
        settings: MqttSettings,
        on_command: Callable[[InboundCommand], None],
        *,
        decoder: InboundDecoder | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.topics = Topics.for_vehicle(settings.vehicle_id, settings.topic_root)
        # (the gate's answers to what it refused: queued behind the engine's replies)
        self.gate = InboundGate(settings, self.topics, decoder or CommandDecoder(), on_command,
                                functools.partial(self.reply, refusal=True), clock=clock)
        self._clock = clock
        self._v5 = settings.protocol == "5"
        self._outbox = Outbox(
            state_min_interval_s=settings.state_min_interval_s,
            max_events=settings.max_pending_events,
        )
        self._stream = StreamPublisher()
        self._writes: InlineWrites | None = None  # while a session is up
        self._channels: dict[str, Channel] = {self.topics.cmd: "cmd",
                                              self.topics.setpoint: "setpoint"}
        self._wake = asyncio.Event()
        self.connected = asyncio.Event()
        self.connect_count = 0
        self.failed_attempts = 0  # connection attempts that failed (all time)
        self.last_failure: ConnectFailure | None = None  # why we are not connected, if known

    # -- publishing (non-blocking; called from the runtime's loop) --------------------
    def reply(self, route: ReplyRoute, *, ok: bool, code: str | None = None,
              message: str = "", refusal: bool = False, **extra: Any) -> None:
        """`refusal`: the inbound gate's answer to input it refused, queued behind, never
        before, the engine's replies (outbox.py)."""
        if ok and not route.reply_on_success:
            return
        doc = reply_document(route.command_id, ok=ok, code=code, message=message, **extra)
        self._queue_reply(route, doc, refusal=refusal)

    def publish_state(self, state: Mapping[str, Any]) -> None:
        self._outbox.put_state(Outbound(self.topics.state, encode_document(state), 1, True))
        self._wake.set()

    def publish_telemetry(self, kind: str, data: Mapping[str, Any]) -> None:
        rate_hz = self.settings.telemetry_rates_hz.get(kind, 0.0)
        self._put_stream(self.topics.telemetry(kind), data, rate_hz)

    def publish_event(self, event: Mapping[str, Any]) -> None:
        self._outbox.put_event(Outbound(self.topics.events, encode_document(event), 1, False))
        self._wake.set()

    def wants_mavlink(self, name: str) -> bool:
        return name in self.settings.mavlink_relay

    def relay_mavlink(self, name: str, fields: Mapping[str, Any]) -> None:
        if self.wants_mavlink(name):
            self._put_stream(self.topics.mavlink(name), fields, self.settings.mavlink_relay_rate_hz)

    def writes_held(self) -> AbstractContextManager[None]:
        """Within: what is published waits in paho; at the end it is written at once, in one
        write (the runtime wraps its cycle in it; paho_io.py says why)."""
        return _NOT_HELD if self._writes is None else self._writes.held()

    @property
    def outbox_stats(self) -> Any:
        return self._outbox.stats

    def _put_stream(self, topic: str, data: Mapping[str, Any], rate_hz: float) -> None:
        if not self._outbox.admit_stream(topic, now=self._clock(), rate_hz=rate_hz):
            return  # (counted by the outbox) and nothing spent on encoding
        if not self._stream.publish(topic, encode_document(data)):
            self._outbox.stats.dropped_stream += 1

    def _queue_reply(self, route: ReplyRoute, doc: Mapping[str, Any], *,
                     refusal: bool = False) -> None:
        correlation = route.correlation_data if self._v5 else None
        self._outbox.put_reply(Outbound(route.topic, encode_document(doc), 1, False, correlation,
                                        refusal))
        self._wake.set()

    # -- connection life cycle ---------------------------------------------------------
    async def run(self) -> None:
        """Serve forever; reconnect on any connection error; return only by cancellation.

        A refused password or an unverifiable broker is logged (with what to check), kept in
        `last_failure`, and retried with the same growing backoff: never a tight loop."""
        s = self.settings
        for event, message in connection.security_warnings(s):
            log.warning(event, host=s.host, message=message)
        attempt = 0
        while True:
            raise_if_cancelling()  # a failed connect may have swallowed it (offboardd.aio)
            paho_errors = connection.PahoErrors()
            served = self.connect_count
            failure: ConnectFailure | None = None
            began_s: float | None = None
            try:
                client = connection.daemon_client(s, self.topics.availability, paho_errors)
                # (an attempt that fails is closed: a stalled broker may answer it later)
                async with connection.session(client):
                    began_s = self._clock()
                    self.last_failure = None
                    await self._serve(client)
            except (aiomqtt.MqttError, OffboarddError) as exc:
                failure = connection.with_settings_hint(
                    connection.explain(exc, paho_errors.take()), s)
            except Exception as exc:  # (nothing on the MQTT side may end the
                # daemon: it flies from the FC link, and a task failing in its TaskGroup
                # took the stream down with no hand-back. Seen: a host name with an empty
                # label, whose UnicodeError came out of getaddrinfo; a TLS file replaced
                # under a reconnect, FileNotFoundError. Review, 2026-11-29.)
                log.exception("mqtt_unexpected_error", host=s.host)
                failure = ConnectFailure(FailureKind.REFUSED, f"unexpected error: {exc!r}")
            finally:
                self._stream.detach()
                self._writes = None
                self._outbox.on_disconnected()
                self.connected.clear()
            if began_s is not None and self._clock() - began_s >= STABLE_SESSION_S:
                # The backoff starts over after a session that lasted: one ended at once
                # (a twin daemon with our client id taking the session over, SUBACK or the
                # `online` publish failing) was retried twice a second for ever (review).
                attempt = 0
            delay_s = backoff_s(attempt, s.reconnect_min_s, s.reconnect_max_s, random.random)
            where = {"host": s.host, "port": s.port, "retry_in_s": round(delay_s, 2)}
            if failure is not None and self.connect_count > served:  # a session ended
                log.warning("mqtt_disconnected", error=failure.message, **where)
            elif failure is not None:  # never got in: say why, loudly unless it is the network
                self.last_failure = failure
                self.failed_attempts += 1
                level = log.warning if failure.kind == FailureKind.NETWORK else log.error
                level("mqtt_connect_failed", kind=str(failure.kind), error=failure.message,
                      attempt=attempt + 1, **where)
            attempt += 1
            await asyncio.sleep(delay_s)

    async def _serve(self, client: aiomqtt.Client) -> None:
        paho = connection.paho_client(client)
        # Before subscribing: nothing that arrives may wait in aiomqtt's own queue.
        paho.on_message = self._on_message
        self._writes = InlineWrites(paho, asyncio.get_running_loop())
        await self._subscribe(client)
        raise_if_cancelling()  # connect and subscribe may have swallowed it (offboardd.aio)
        await client.publish(self.topics.availability, AVAILABILITY_ONLINE, qos=1, retain=True)
        self.connect_count += 1
        self._stream.attach(paho, mqtt5=self._v5)
        self._outbox.on_connected()
        self.connected.set()
        log.info("mqtt_connected", host=self.settings.host, port=self.settings.port,
                 protocol=self.settings.protocol, prefix=self.topics.prefix)
        publisher = asyncio.create_task(self._publish_loop(client))
        receiver = asyncio.create_task(connection.until_disconnected(client))
        try:
            raise_if_cancelling()  # the online publish may have swallowed it
            done, _ = await asyncio.wait({publisher, receiver},
                                         return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # re-raise the MqttError that ended the session
        except asyncio.CancelledError:
            # A clean stop: a graceful DISCONNECT discards the will, so say it ourselves,
            # as the last word: no telemetry, state or event after `offline` (a subscriber
            # would take the vehicle for back). What the outbox still held is dropped.
            self._stream.detach()
            publisher.cancel()
            await asyncio.gather(publisher, return_exceptions=True)
            with contextlib.suppress(aiomqtt.MqttError, TimeoutError):
                async with asyncio.timeout(2.0):
                    if (state := self._outbox.final_state()) is not None:
                        await self._publish(client, state)  # how it ended, then offline
                    await client.publish(
                        self.topics.availability, AVAILABILITY_OFFLINE, qos=1, retain=True)
            raise
        finally:
            for task in (publisher, receiver):
                task.cancel()
            await asyncio.gather(publisher, receiver, return_exceptions=True)

    async def _subscribe(self, client: aiomqtt.Client) -> None:
        for topic, qos in ((self.topics.cmd, 1), (self.topics.setpoint, 0)):
            if self._v5:
                # retainAsPublished: a command published with retain=True keeps the flag
                # even when delivered live, so it can be refused (MQTT 5 §3.8.3.1).
                options = SubscribeOptions(qos=qos, retainAsPublished=True)
                codes = await client.subscribe(topic, options=options)
            else:
                codes = await client.subscribe(topic, qos)
            if (refused := connection.refused_subscription(topic, codes)) is not None:
                raise refused

    async def _publish_loop(self, client: aiomqtt.Client) -> None:
        while True:
            raise_if_cancelling()  # a daemon must stop on SIGTERM (seen in process tests)
            now = self._clock()
            due_s = self._outbox.next_due_s(now)
            if due_s is None or due_s > now:
                self._wake.clear()
                timeout_s = None if due_s is None else due_s - now
                # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation
                # that arrives as the wait completes, and this loop would then never end
                # (a daemon hanging on SIGTERM, seen in the process tests).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout_s):
                        await self._wake.wait()
                continue
            # Everything due goes out as one batch: paho writes it in one pass of the loop,
            # where one message at a time costs a loop iteration per message and, for QoS 1,
            # a broker round trip (a transition's state and events arrive together).
            batch: list[Outbound] = []
            while len(batch) < _MAX_BATCH and (item := self._outbox.pop(now)) is not None:
                batch.append(item)
            if len(batch) == 1:
                await self._publish(client, batch[0])
                continue
            results = await asyncio.gather(*(self._publish(client, item) for item in batch),
                                           return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result

    async def _publish(self, client: aiomqtt.Client, item: Outbound) -> None:
        try:
            await client.publish(item.topic, item.payload, qos=item.qos, retain=item.retain,
                                 properties=self._properties(item))
        except aiomqtt.MqttError:
            if item.topic == self.topics.state:
                self._outbox.state_failed()
            else:
                self._outbox.failed(item, event=item.topic == self.topics.events)
            raise

    def _properties(self, item: Outbound) -> Properties | None:
        if not self._v5 or item.correlation_data is None:
            return None
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.CorrelationData = item.correlation_data
        return props

    # -- inbound gate ------------------------------------------------------------------
    def _on_message(self, _paho: object, _userdata: object,
                    message: paho_mqtt.MQTTMessage) -> None:
        """paho's callback, inside its read on the loop's thread: a command reaches the gate
        in the same pass of the loop that read it. (aiomqtt's message iterator spent a task,
        an `asyncio.wait` and four more loop passes on each; 4 lease renewals a second.)"""
        try:
            # our topics hold no wildcards: a plain lookup (Topic.matches builds a Wildcard)
            channel = self._channels.get(message.topic)
            if channel is not None:
                self.handle_inbound(channel, bytes(message.payload), retain=message.retain,
                                    properties=message.properties)
        except Exception:  # a bug: paho would re-raise it into its read and end the session
            log.exception("internal_error", where="mqtt_inbound")

    def handle_inbound(self, channel: Channel, payload: bytes, *, retain: bool,
                       properties: Properties | None = None) -> None:
        self.gate.handle(channel, payload, retain=retain, properties=properties)

    @property
    def refused_count(self) -> int:
        return self.gate.refused_count
