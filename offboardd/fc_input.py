"""What comes in from the flight controller: bytes -> frames -> telemetry cache, the MQTT
MAVLink relay, and engine events, held until the runtime feeds them in one batch.

It owns the inbound half of design.md's data flow (link -> codec -> translate_in) and
the telemetry cache the bridge publishes from. It must not decide anything, read the
clock (`now` comes in) or send: the runtime feeds the events to the engine, and a bug in
handling one message is reported through `on_error` rather than taking the link down.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from offboardd.core.events import MAV_AUTOPILOT_INVALID, Event
from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, Message
from offboardd.mavlink.telemetry import TelemetryCache, message_document
from offboardd.mqtt.bridge import MqttBridge

_MAX_UNFOLLOWED = 16  # system ids remembered (a shared radio may carry a fleet)


class FcInput:
    def __init__(self, codec: MavlinkCodec, fc_system_id: int, relay: MqttBridge | None,
                 on_error: Callable[[Message], None], *, whole_frames: bool = False) -> None:
        """`whole_frames`: each chunk holds whole frames (a UDP link): no partial frame is
        kept from one chunk to the next, where it could join another sender's bytes."""
        self.codec = codec
        self.whole_frames = whole_frames
        self.fc_system_id = fc_system_id  # 0: any system
        self.translator = translate.InboundTranslator()
        self.telemetry = TelemetryCache()
        self._relay = relay
        self._on_error = on_error
        self._pending: list[Event] = []  # translated, not yet fed to the engine
        # The autopilot (system, component) the engine follows, once it adopted one (the
        # runtime keeps it current): only a frame from it vouches for its sender as the
        # address setpoints go to. The component counts: a camera of the FC's system
        # heartbeating to our port from its own address took the stream away (review).
        self.fc_target: tuple[int, int] | None = None
        # Autopilots heard heartbeating under another system id than fc_system_id: a
        # mistyped id left the daemon silent, "no flight controller heard" (review).
        self.unfollowed: set[int] = set()
        self.unfollowed_new: list[int] = []

    def decode(self, data: bytes, now: float) -> bool:
        """Take one chunk of link bytes; True when it held valid MAVLink (signed, when
        signing is on) from the flight controller: a sender worth replying to. Valid
        MAVLink from anyone else (a GCS's heartbeat sent to our port) is no reason to
        send our setpoints there: that once took the stream away from PX4 (review)."""
        messages = self.codec.decode(data, now)
        if self.whole_frames:
            # A sender's leftover must not complete, or hold back, the next chunk: the
            # next may come from someone else, and what it decodes vouches for its sender
            # (the runtime's `confirm_sender`). The end-to-end fuzz once saw setpoints
            # follow a garbage sender that way; with nothing kept, only a sender's own
            # bytes can vouch for it.
            self.codec.reset()
        return self._take_messages(messages, now)

    def _take_messages(self, messages: list[Message], now: float) -> bool:
        from_fc = False
        target = self.fc_target
        for msg in messages:
            source = (msg.get_srcSystem(), msg.get_srcComponent())
            if self.fc_system_id and source[0] != self.fc_system_id:
                if source[0] not in self.unfollowed and len(self.unfollowed) < _MAX_UNFOLLOWED \
                        and self._autopilot_heartbeat(msg):
                    self.unfollowed.add(source[0])
                    self.unfollowed_new.append(source[0])
                continue
            # The autopilot followed (once there is one): it vouches for its sender, and the
            # telemetry is its own, not its gimbal's attitude.
            ours = target is None or source == target
            from_fc = from_fc or (ours if target is not None else self._autopilot_heartbeat(msg))
            try:
                self._on_message(msg, now, ours)
            except Exception:  # a bug must not take the FC link down mid-flight
                self._on_error(msg)
        return from_fc

    @staticmethod
    def _autopilot_heartbeat(msg: Message) -> bool:
        """Before the engine follows an autopilot, what vouches for a sender: an autopilot's
        HEARTBEAT (a GCS or a companion heartbeats with autopilot INVALID)."""
        return msg.get_type() == "HEARTBEAT" and bool(msg.autopilot != MAV_AUTOPILOT_INVALID)

    def _on_message(self, msg: Message, now: float, ours: bool) -> None:
        if ours:
            self.telemetry.update(msg)
            # The FC's own only, as the telemetry: a document names no sender, and a gimbal's
            # ATTITUDE or another vehicle's took the FC's place at its topic (review).
            if self._relay is not None and self._relay.wants_mavlink(msg.get_type()):
                self._relay.relay_mavlink(msg.get_type(), message_document(msg))
        self._pending.extend(self.translator.events(msg, now))

    def take_unfollowed(self) -> list[int]:
        """System ids of autopilots heard, not fc_system_id, since the last call (each once)."""
        new, self.unfollowed_new = self.unfollowed_new, []
        return new

    def take(self, now: float) -> list[Event]:
        """The events decoded since the last call, in arrival order; the thinned messages'
        (the newest of each, codec.take_held) last, as at `now`."""
        if held := self.codec.take_held():
            self._take_messages(held, now)  # (vouching for no sender: none is at hand)
        events, self._pending = self._pending, []
        return events

    def flush_stale(self, now: float) -> Sequence[Event]:
        """Chunked STATUSTEXTs whose last chunk never came, as events of what arrived."""
        return self.translator.flush(now)
