"""The inbound gate: what stands between an MQTT message and the engine.

A message on `cmd` or `setpoint` passes only as a valid command: not retained (a retained
engage must never fly after a restart), within `max_payload_bytes`, well-formed JSON of
the schema, not replayed (schema.py's CommandDecoder). Everything else is answered with a
coded refusal on the sender's reply route, and nothing of it reaches `on_command`. Split
from bridge.py, which owns the connection and only hands the gate what arrives.

Must not: interpret commands (the engine does), publish itself (it replies through the
bridge's non-blocking `reply`), or raise into paho's read callback (the bridge hands it
what arrives from there).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import structlog
from paho.mqtt.properties import Properties

from offboardd.core.commands import Command, CommanderHeartbeat
from offboardd.mqtt.queries import Query
from offboardd.mqtt.rates import ALL_ROUTES, ALL_ROUTES_RATES, Admit, CommanderRates, Lane
from offboardd.mqtt.schema import SeqRepeated
from offboardd.mqtt.settings import MqttSettings
from offboardd.mqtt.topics import Topics, valid_publish_topic
from offboardd.mqtt.wire import MqttErrorCode, Rejection, ReplyRoute, peek_id_bytes

log = structlog.get_logger("offboardd.mqtt")
_ALL_ROUTES = (ALL_ROUTES, Lane.REFUSED)  # every route's refusals: one bucket
Channel = Literal["cmd", "setpoint"]


class InboundDecoder(Protocol):
    """Turns a loaded JSON document into an engine command, or refuses it (schema.py)."""

    def decode_bytes(self, channel: str, payload: bytes, *, max_bytes: int,
                     commander: str = "") -> Command | Query | Rejection: ...


@dataclass(frozen=True)
class InboundCommand:
    """A valid command for the engine (or a query for the runtime: queries.py) and where
    its reply goes (`bridge.reply(route, ...)`)."""

    command: Command | Query
    route: ReplyRoute
    # Set: the command repeats its commander's last session and seq, so it acts only as the
    # repeat of the command that passed with them (answered by its reply), else is refused
    # with this (schema.SeqRepeated).
    stale: Rejection | None = None


class InboundGate:
    def __init__(self, settings: MqttSettings, topics: Topics, decoder: InboundDecoder,
                 on_command: Callable[[InboundCommand], None],
                 reply: Callable[..., None], *, clock: Callable[[], float]) -> None:
        self.settings = settings
        self._clock = clock
        # Refusals are answered at the commands' rate per reply route (rates.py,
        # Lane.REFUSED), and logged at that rate in all: a flood from rotating response
        # topics gets a fresh bucket per topic, never a journal line each (review). What
        # is not logged is summed up in the next line that is.
        self._answers = CommanderRates()
        # ... and all routes together at four commanders' worth: a flood of junk on fresh
        # response topics got each its answers, queued with the engine's replies (review)
        self._all_answers = CommanderRates(ALL_ROUTES_RATES)
        self._log_lines = CommanderRates()
        self.suppressed_count = 0  # refusals not answered
        self._not_logged = 0
        self.topics = topics
        self._decoder = decoder
        self._on_command = on_command
        self._reply = reply  # the bridge's: queues, never blocks
        self._v5 = settings.protocol == "5"
        self.refused_count = 0

    def handle(self, channel: Channel, payload: bytes, *, retain: bool,
                       properties: Properties | None = None) -> None:
        max_bytes = self.settings.max_payload_bytes
        route = self._route(channel, properties, command_id=None)
        if retain and not payload:
            return  # someone clearing a stray retained command: nothing to act on or refuse
        if retain:
            command_id = peek_id_bytes(payload, max_bytes=max_bytes,
                                       stream=channel == "setpoint")
            self._refuse(channel, route, Rejection(
                MqttErrorCode.RETAINED_REFUSED,
                "retained messages are never acted on; publish commands with retain=false "
                "(and clear this one with an empty retained publish)", command_id))
            return
        # The replay check keeps a sequence per commander: the reply route, the identity
        # the engine's lease names (one shared route on MQTT 3.1.1: one commander there).
        result = self._decoder.decode_bytes(channel, payload, max_bytes=max_bytes,
                                            commander=route.topic)
        stale: Rejection | None = None
        if isinstance(result, SeqRepeated) and result.command is not None:
            decoded: Command | Query = result.command
            stale = result
        elif isinstance(result, Rejection):
            self._refuse(channel, route, result)
            return
        else:
            decoded = result
        route = self._route(channel, properties, command_id=decoded.command_id)
        if isinstance(decoded, CommanderHeartbeat) and not decoded.ack:
            route = dataclasses.replace(route, reply_on_success=False)
        try:
            self._on_command(InboundCommand(decoded, route, stale))
        except Exception as exc:  # a bug behind on_command must not take MQTT down with it
            log.exception("mqtt_on_command_failed", id=decoded.command_id)
            self._reply(route, ok=False, code=MqttErrorCode.INTERNAL_ERROR,
                       message=f"offboardd failed to handle the command: {exc!r}")

    def _route(self, channel: Channel, properties: Properties | None,
               command_id: str | None) -> ReplyRoute:
        topic = self.topics.reply
        correlation: bytes | None = None
        if self._v5 and properties is not None:
            response_topic = getattr(properties, "ResponseTopic", None)
            if isinstance(response_topic, str) and valid_publish_topic(response_topic):
                topic = response_topic
            data = getattr(properties, "CorrelationData", None)
            if isinstance(data, bytes | bytearray):
                correlation = bytes(data)
        return ReplyRoute(topic, command_id, correlation, reply_on_success=channel == "cmd")

    def _refuse(self, channel: Channel, route: ReplyRoute, rejection: Rejection) -> None:
        self.refused_count += 1
        now = self._clock()
        if (self._answers.admit((route.topic, Lane.REFUSED), now) is not Admit.ACCEPT
                or self._all_answers.admit(_ALL_ROUTES, now) is not Admit.ACCEPT):
            self.suppressed_count += 1
            self._not_logged += 1
            return
        if self._log_lines.admit(_ALL_ROUTES, now) is not Admit.ACCEPT:
            self._not_logged += 1
        else:
            not_logged, self._not_logged = self._not_logged, 0
            log.warning("mqtt_refused", channel=channel, code=str(rejection.code),
                        message=rejection.message, id=rejection.command_id,
                        **({"not_logged_before": not_logged} if not_logged else {}))
        route = ReplyRoute(route.topic, rejection.command_id, route.correlation_data,
                           route.reply_on_success)
        self._reply(route, ok=False, code=rejection.code, message=rejection.message)
