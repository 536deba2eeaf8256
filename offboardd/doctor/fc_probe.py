"""Ask the flight controller who it is and how its offboard parameters are set.

Opens the configured link with the daemon's own parts (links, codec, translate_in, and
core.fc_link.FcChecks for what to request and when to re-ask), listens for PX4's
HEARTBEAT, then requests AUTOPILOT_VERSION and the offboard parameters until all are in
or the timeout passes. It sends a companion HEARTBEAT (so a udpout peer learns where to
answer), PARAM_REQUEST_READ and MAV_CMD_REQUEST_MESSAGE, and nothing else: it never sets a
parameter, a mode or a message interval. Judging the answers is fc_verdicts.py's job.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from offboardd.core.actions import RequestMessage, RequestParams, Target
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import (
    MAV_AUTOPILOT_INVALID,
    MAV_AUTOPILOT_PX4,
    FcAutopilotVersion,
    FcHeartbeat,
    FcParamValue,
)
from offboardd.core.fc_link import FcChecks
from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.links import LinkState, LinkUrl, open_link

# MAV_COMP_ID_ONBOARD_COMPUTER4: not the daemon's 191, so that a doctor run beside the
# service on a routed (mavlink-router) link is a separate component, not a clone.
DOCTOR_COMPONENT_ID = 194
_HEARTBEAT_PERIOD_S = 1.0  # MAVLink's companion heartbeat rate
_RETRY_S = 0.5  # re-ask unanswered requests this often (PX4 answers within ~10 ms)
_WANTED = frozenset({dialect.MAVLINK_MSG_ID_HEARTBEAT, dialect.MAVLINK_MSG_ID_PARAM_VALUE,
                     dialect.MAVLINK_MSG_ID_AUTOPILOT_VERSION})


@dataclass(frozen=True)
class FcProbe:
    """What the probe learned; every field may be empty when the FC never answered."""

    url: LinkUrl
    timeout_s: float
    link_detail: str  # the link's last words ("cannot open ...: Permission denied")
    bytes_in: int
    frames_ok: int
    garbage_bytes: int
    heartbeat: FcHeartbeat | None  # the PX4 autopilot's, if one was heard
    other_autopilots: tuple[int, ...]  # MAV_AUTOPILOT values heard that are not PX4
    version: FcAutopilotVersion | None
    params: dict[str, int | float] = field(default_factory=dict)
    version_warnings: tuple[str, ...] = ()
    param_warnings: tuple[str, ...] = ()  # FcChecks' surprises, once every param is in
    wanted: tuple[str, ...] = ()  # the parameters this PX4 release has that offboardd reads
    loss_action: str | None = None  # what PX4 does on offboard loss (core.px4_rules)


class _Listener:
    """The probe's mutable state while the link runs."""

    def __init__(self, fc_system_id: int, envelope: EnvelopeSettings | None) -> None:
        self.fc_system_id = fc_system_id
        self.codec = MavlinkCodec(1, DOCTOR_COMPONENT_ID, wanted_ids=_WANTED)
        self.translator = translate.InboundTranslator()
        self.checks = FcChecks(_RETRY_S, retries=1000, current_mode_interval_s=1.0,
                               envelope=envelope)
        self.heartbeat: FcHeartbeat | None = None
        self.target: Target | None = None
        self.others: set[int] = set()
        self.version_warnings: list[str] = []
        self.param_warnings: list[str] = []
        self.complete = asyncio.Event()

    def on_bytes(self, data: bytes, now: float) -> None:
        for msg in self.codec.decode(data):
            if self.fc_system_id and msg.get_srcSystem() != self.fc_system_id:
                continue
            for event in self.translator.events(msg, now):
                self._event(event, now)

    def _event(self, event: object, now: float) -> None:
        if isinstance(event, FcHeartbeat):
            if event.autopilot == MAV_AUTOPILOT_PX4 and self.target is None:
                self.heartbeat = event
                self.target = Target(event.source_system, event.source_component)
                self.codec.mav.srcSystem = event.source_system  # companion convention (§5)
                self.checks.start(now)
            elif event.autopilot not in (MAV_AUTOPILOT_PX4, MAV_AUTOPILOT_INVALID):
                self.others.add(event.autopilot)
            return
        target = self.target
        if target is None or (getattr(event, "source_system", None), getattr(
                event, "source_component", None)) != (target.system_id, target.component_id):
            return
        if isinstance(event, FcAutopilotVersion):
            self.version_warnings.extend(self.checks.on_version(event))
        elif isinstance(event, FcParamValue):
            self.param_warnings.extend(self.checks.on_param(event.name, event.value))
        self._judge_complete()

    def _judge_complete(self) -> None:
        if self.checks.version is not None and not self.checks.missing() and (
                self.checks.settled()):  # PX4's limits too, unless asking them gave up
            self.complete.set()

    def due_messages(self, now: float) -> list[object]:
        """Requests FcChecks wants sent now (its CURRENT_MODE interval request is dropped:
        the doctor changes nothing on the FC)."""
        if self.target is None:
            return []
        actions, _ = self.checks.poll(now, self.target)
        self._judge_complete()
        wanted = [a for a in actions if isinstance(a, RequestParams | RequestMessage)]
        return [m for a in wanted for m in translate.messages_for(a)]


async def probe_fc(url: LinkUrl, *, timeout_s: float, fc_system_id: int = 0,
                   envelope: EnvelopeSettings | None = None) -> FcProbe:
    """Listen on `url` for up to `timeout_s`; return early once everything is known
    (with `envelope`, PX4's own flight limits too, judged against it)."""
    loop = asyncio.get_running_loop()
    listener = _Listener(fc_system_id, envelope)
    link = open_link(url, lambda data: listener.on_bytes(data, loop.time()), _ignore_state)
    task = asyncio.create_task(link.run(), name="doctor-link")
    deadline = loop.time() + timeout_s
    next_heartbeat = loop.time()
    try:
        while not listener.complete.is_set() and loop.time() < deadline:
            now = loop.time()
            if now >= next_heartbeat:
                link.send(listener.codec.encode(translate.companion_heartbeat()))
                next_heartbeat = now + _HEARTBEAT_PERIOD_S
            for msg in listener.due_messages(now):
                link.send(listener.codec.encode(msg))
            if task.done():  # the link's own failure (a bug): surface it
                task.result()
            wait_s = max(0.0, min(deadline, next_heartbeat, now + _RETRY_S / 5) - loop.time())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await listener.complete.wait()
    finally:
        link_detail = link.state.detail  # before the close replaces it with "closed"
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return FcProbe(
        url=url, timeout_s=timeout_s, link_detail=link_detail,
        bytes_in=link.stats.bytes_in, frames_ok=listener.codec.stats.frames_ok,
        garbage_bytes=listener.codec.stats.garbage_bytes,
        heartbeat=listener.heartbeat, other_autopilots=tuple(sorted(listener.others)),
        version=listener.checks.version, params=dict(listener.checks.params),
        version_warnings=tuple(listener.version_warnings),
        param_warnings=tuple(listener.param_warnings),
        wanted=listener.checks.wanted(), loss_action=listener.checks.loss_action_name(),
    )


def _ignore_state(state: LinkState) -> None:
    """Transitions do not matter here: the link's last detail is read at the end."""
