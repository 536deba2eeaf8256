"""Where the engine's words go: each reply to its command's waiter (a future in this
process, or an MQTT route), notices to the journal and the `events` topic, the retained
`state` and systemd's STATUS line, and the telemetry documents due.

It owns the pending-reply table and when state was last published. It must not decide
anything about flying, read the clock (`now` comes in) or touch the FC link.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import structlog

from offboardd.core.actions import Notice, NoticeKind, Reply
from offboardd.core.reasons import STREAMING_PHASES, Phase, Reason
from offboardd.core.setpoints import EstimateNeed
from offboardd.core.vehicle import VehicleState
from offboardd.mavlink.telemetry import TelemetryCache
from offboardd.mqtt.bridge import MqttBridge
from offboardd.mqtt.telemetry_schedule import TelemetrySchedule
from offboardd.mqtt.wire import ReplyRoute
from offboardd.replies import PendingReplies, commander_of
from offboardd.systemd import SystemdNotifier, status_line

log = structlog.get_logger("offboardd")

NOT_IN_CONTROL_GAP_S = 0.25  # at most 4 not_in_control replies a second per reply topic
_MAX_ROUTES_REMEMBERED = 256


# Phases in which the daemon flies the vehicle, or hands it over: the FC lost then is news.
_FLYING_PHASES = STREAMING_PHASES | {Phase.RELEASING}
_MAV_SEVERITY_ERROR = 3  # MAV_SEVERITY: 0 emergency .. 3 error, 4 warning, 5 notice ..
_MAV_SEVERITY_WARNING = 4


def log_level(notice: Notice) -> str:
    """The journal's level for a notice, so that `journalctl -p warning` shows every moment
    a field engineer must see: a failsafe step, a warning, the daemon losing the vehicle
    (failsafe or a takeover), the FC lost while flown, PX4's own errors and warnings."""
    kind = notice.kind
    if kind is NoticeKind.FC_STATUSTEXT and notice.severity is not None:
        if notice.severity <= _MAV_SEVERITY_ERROR:
            return "error"
        return "warning" if notice.severity == _MAV_SEVERITY_WARNING else "info"
    if kind in (NoticeKind.FAILSAFE, NoticeKind.WARNING):
        return "warning"
    if kind is NoticeKind.TRANSITION and notice.phase in (Phase.FAILSAFE, Phase.PREEMPTED):
        return "warning"
    if kind is NoticeKind.FC_LINK and notice.phase in _FLYING_PHASES:
        return "warning"
    return "info"


class Outputs:
    def __init__(self, bridge: MqttBridge | None, notifier: SystemdNotifier,
                 link_hint: Callable[[], str | None]) -> None:
        self.bridge = bridge
        self.notifier = notifier
        self.replies = PendingReplies()
        self.last_state_s = -1e9
        self._last_status = ""
        self._fc_logged: tuple[Any, ...] = ()  # the FC's mode, armed, landed state last logged
        self._link_hint = link_hint  # why the FC may be silent (e.g. refused signatures)
        self._told_not_in_control: dict[str, float] = {}  # reply topic -> when
        # the flight recorder's journal (recorder.py), when recording: replies and notices
        self.journal: Callable[..., None] | None = None
        self.journaled: set[str] = set()  # tokens of commands journaled: their replies too

    def reply(self, reply: Reply, now: float) -> None:
        token = reply.command_id
        resolved = self.replies.resolve(reply, now)
        if resolved is None:
            return
        reply, sink = resolved
        if (reply.reason is Reason.NOT_IN_CONTROL and not isinstance(sink, asyncio.Future)
                and not sink.reply_on_success):
            # A stream (setpoints on their topic, heartbeats with ack false) from a
            # commander that lost control is told a few times a second, not 20 (issue 15);
            # the rest are resolved unanswered. A command that asked for its reply gets it.
            last_s = self._told_not_in_control.get(sink.topic, -math.inf)
            if now - last_s < NOT_IN_CONTROL_GAP_S:
                return
            if len(self._told_not_in_control) >= _MAX_ROUTES_REMEMBERED:
                self._told_not_in_control.clear()
            self._told_not_in_control[sink.topic] = now
        if reply.reason is Reason.FC_UNKNOWN and (hint := self._link_hint()):
            reply = dataclasses.replace(reply, message=f"{reply.message}; {hint}")
        if not reply.ok:
            log.info("command_refused", id=reply.command_id, code=reply.code,
                     reason=reply.reason, message=reply.message)
        journaled = self._was_journaled(token)
        if self.journal is not None and (journaled or not reply.ok):
            self.journal("reply", id=reply.command_id, ok=reply.ok,
                         commander=commander_of(sink),
                         code=None if reply.code is None else reply.code.value,
                         reason=None if reply.reason is None else reply.reason.value,
                         message=reply.message)
        if isinstance(sink, asyncio.Future):
            if not sink.done():
                sink.set_result(reply)
        else:
            self._publish_reply(reply, sink)

    def reply_again(self, reply: Reply, route: ReplyRoute) -> None:
        """A command that succeeded, delivered again: its reply once more, marked as such
        (replies.py: it does not act twice)."""
        self._publish_reply(reply, route, repeat=True)

    def _publish_reply(self, reply: Reply, route: ReplyRoute, **extra: Any) -> None:
        if self.bridge is None:
            return
        if reply.resume is not None:
            extra["resume"] = reply.resume
        self.bridge.reply(
            route, ok=reply.ok, code=None if reply.code is None else reply.code.value,
            message=reply.message, reason=None if reply.reason is None else reply.reason.value,
            **extra)

    def _was_journaled(self, token: str) -> bool:
        if token in self.journaled:
            self.journaled.discard(token)
            return True
        if len(self.journaled) > _MAX_ROUTES_REMEMBERED:  # replies that never came
            self.journaled.clear()
        return False

    def notice(self, notice: Notice) -> None:
        fields = notice.as_dict()
        if notice.command_id is not None:  # the engine's token -> the commander's id
            fields["command_id"] = self.replies.original_id(notice.command_id)
        getattr(log, log_level(notice))("engine_" + notice.kind.value,
                            **{k: v for k, v in fields.items() if k != "kind"})
        if self.bridge is not None:
            self.bridge.publish_event(fields)
        if self.journal is not None:
            self.journal("notice", **{("notice" if k == "kind" else k): v
                                      for k, v in fields.items()})

    def state(self, state: dict[str, Any], now: float) -> None:
        """Retained state and the systemd STATUS line (the line only when it changed)."""
        motion = state.get("motion")
        if isinstance(motion, dict) and isinstance(motion.get("command_id"), str):
            state = {**state, "motion": {**motion, "command_id":
                                         self.replies.original_id(motion["command_id"])}}
        if self.bridge is not None:
            self.bridge.publish_state(state)
        fc_now = (state.get("fc_mode"), state.get("armed"), state.get("landed_state"))
        if fc_now != self._fc_logged and state.get("fc_link") == "up":
            # the journal follows the vehicle whoever flies it: after a restart in flight
            # the daemon is idle, and its log said nothing of the Return PX4 flew (review)
            log.info("fc_state", mode=fc_now[0], armed=fc_now[1], landed_state=fc_now[2])
            self._fc_logged = fc_now
        connected = None if self.bridge is None else self.bridge.connected.is_set()
        status = status_line(state, connected)
        if status != self._last_status:
            self.notifier.status(status)
            self._last_status = status
        self.last_state_s = now

    def telemetry(self, schedule: TelemetrySchedule, cache: TelemetryCache,
                  vehicle: VehicleState, now: float) -> None:
        """Each telemetry kind at its configured rate (0 = off); kinds due together go out
        together, as one batch for the bridge. Positions and velocities say whether the
        estimate behind them counts: PX4 streams them whether it is valid or not (#20389),
        dead-reckoned and drifting once nothing aids it."""
        if self.bridge is None:
            return
        for kind in schedule.due(now):
            doc = cache.document(kind)
            if doc is None:
                continue
            if kind == "position":
                if "north_m" in doc:
                    doc["local_valid"] = vehicle.estimate_valid(EstimateNeed.LOCAL_POSITION, now)
                if "lat_deg" in doc:
                    doc["global_valid"] = vehicle.estimate_valid(EstimateNeed.GLOBAL_POSITION,
                                                                 now)
            elif kind == "velocity":
                doc["valid"] = vehicle.velocity_valid(global_frame=doc["frame"] == "global",
                                                      now=now)
            self.bridge.publish_telemetry(kind, doc)
