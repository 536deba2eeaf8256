"""An async Python client for mission scripts: commands, setpoints, state, and the lease.

    async with OffboardClient("127.0.0.1", 1883, "vehicle1") as c:
        await c.wait_for_state(lambda s: s.get("phase") == "idle", timeout_s=10)
        await c.engage(PositionNed(0, 0, -5), arm=True)    # heartbeat starts with the engage
        await c.setpoint(VelocityNed(1, 0, 0))             # high rate, QoS 0, no reply
        await c.land()                                     # heartbeat stops after a release

Every command waits for its reply (matched by id; MQTT 5 clients get it on their own
response topic with correlation data) and raises `CommandRefused` on `ok: false`. While the
script holds control a background task sends `heartbeat` every `heartbeat_period_s`
(0.25 s against the daemon's default 1 s lease), so a script that hangs or dies loses the
lease and the daemon holds, then applies its loss action. When control ends any other way
(a pilot, a GCS, a failsafe, a daemon restart), the next call raises `ControlLost` with
the reason, and `await c.control_lost()` completes: race it against the mission.

What the client reads (replies, state, availability, watch) lives in
`offboardd.mqtt.client_inbox`; this module sends.

This is the client side: it may import aiomqtt. It does not reconnect: if the broker goes
away the script's next call fails and the daemon's lease rules take over. A broker that
refuses the connection raises `ConnectFailed`, whose `failure` says why (credentials, TLS):

    tls = TlsSettings(ca_file="/etc/offboardd/ca.crt", cert_file="me.crt", key_file="me.key")
    OffboardClient("broker.lan", 8883, "vehicle1", username="commander", password=pw, tls=tls)
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Literal

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from offboardd.aio import raise_if_cancelling
from offboardd.core.commands import (
    Arm,
    Command,
    CommanderHeartbeat,
    Disarm,
    EmergencyStop,
    Engage,
    Hold,
    Land,
    Release,
    Rtl,
    SetSetpoint,
)
from offboardd.core.machine_table import TAKEN
from offboardd.core.motion_commands import (
    FACE_CENTER_YAW,
    KEEP_YAW,
    FollowPath,
    Goto,
    MotionCommand,
    Orbit,
    Place,
    Stop,
    Yaw,
    YawMode,
)
from offboardd.core.setpoints import Setpoint
from offboardd.mqtt.client_inbox import ClientInbox, StatePredicate
from offboardd.mqtt.client_motion import MotionAborted, MotionHandle
from offboardd.mqtt.client_types import (
    ClientError,
    CommandRefused,
    ConnectFailed,
    NoToken,
    Reply,
    ReplyTimeout,
    Watched,
)
from offboardd.mqtt.connection import PahoErrors, client_options, enter, explain
from offboardd.mqtt.control_watch import ControlLost
from offboardd.mqtt.rates import SAFETY_KINDS
from offboardd.mqtt.schema import encode_command, encode_stream_setpoint
from offboardd.mqtt.tls import TlsSettings
from offboardd.mqtt.topics import Topics
from offboardd.mqtt.wire import SCHEMA_VERSION, encode_document

__all__ = ["ClientError", "CommandRefused", "ConnectFailed", "ControlLost", "MotionAborted",
           "MotionHandle", "NoToken", "OffboardClient", "Reply", "ReplyTimeout", "TlsSettings",
           "Watched", "Yaw", "YawMode"]

# The daemon publishes `state` every second: this long without one while we fly, and the
# network or the broker has stalled (control_watch.on_silence).
STATE_SILENCE_S = 3.0
# Commands that stop or hand back the vehicle (the daemon's safety lane, and disarm): sent
# even after control was lost.
_ALWAYS_SENT = SAFETY_KINDS | {"disarm"}


# The phases in which arm / hold / land / rtl need the daemon's token: the table's own.
TAKEN_PHASES = frozenset(str(phase) for phase in TAKEN)


# The lease's heartbeat (as `ctl --keep-lease` and the README's shell loop send it).
HEARTBEAT_PERIOD_S = 0.25

class OffboardClient:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 1883,
        vehicle_id: str = "vehicle1",
        *,
        protocol: Literal["5", "3.1.1"] = "5",
        username: str | None = None,
        password: str | None = None,
        tls: TlsSettings | None = None,
        topic_root: str = "offboardd",
        reply_timeout_s: float = 5.0,
        engage_timeout_s: float = 20.0,
        heartbeat_period_s: float = HEARTBEAT_PERIOD_S,
        follow_state: bool = True,
        broker_timeout_s: float = 10.0,  # CONNACK, SUBACK and PUBACK waits
    ) -> None:
        self.topics = Topics.for_vehicle(vehicle_id, topic_root)
        self.client_id = f"offboardd-client-{secrets.token_hex(4)}"
        self.session = secrets.token_hex(6)  # the commander session for the replay guard
        self._v5 = protocol == "5"
        self._inbox = self.topics.reply_inbox(self.client_id) if self._v5 else self.topics.reply
        self._paho_errors = PahoErrors()
        self._mqtt = aiomqtt.Client(
            host, port, identifier=self.client_id, logger=self._paho_errors.logger,
            protocol=aiomqtt.ProtocolVersion.V5 if self._v5 else aiomqtt.ProtocolVersion.V311,
            clean_session=None if self._v5 else True, timeout=broker_timeout_s,
            **client_options(username=username, password=password, tls=tls),
        )
        self.reply_timeout_s = reply_timeout_s
        self.engage_timeout_s = engage_timeout_s
        self.heartbeat_period_s = heartbeat_period_s
        self._follow_state = follow_state
        # what we read: replies, state, availability, watch, control-loss signals
        self.inbox = ClientInbox(self.topics, self._inbox, self.session, self.client_id)
        self.control = self.inbox.control  # whether we still fly it (issue 15)
        self._seq = 0
        self._ids = 0
        self._holding_lease = False
        self._tasks: list[asyncio.Task[None]] = []
        self._final_sends: list[asyncio.Task[None]] = []  # given time to leave before close

    # what the inbox read, under the names scripts use
    @property
    def state(self) -> dict[str, Any] | None:
        return self.inbox.state

    @property
    def last_stream_error(self) -> Reply | None:
        return self.inbox.last_stream_error

    @property
    def heartbeat_failures(self) -> int:
        return self.inbox.heartbeat_failures

    @property
    def last_heartbeat_error(self) -> Reply | None:
        return self.inbox.last_heartbeat_error

    @property
    def watch_dropped(self) -> int:
        return self.inbox.watch_dropped

    # -- life cycle ---------------------------------------------------------------------
    async def __aenter__(self) -> OffboardClient:
        try:
            # (how the session ends is always read; an attempt that fails is closed, as a
            # stalled broker may answer it later: connection.py)
            await enter(self._mqtt)
        except aiomqtt.MqttError as exc:
            # Say why (refused credentials, unverifiable broker, no client certificate...)
            raise ConnectFailed(explain(exc, self._paho_errors.take())) from exc
        try:
            await self._mqtt.subscribe(self._inbox, 1)
            if self._follow_state:  # off for `watch`, which subscribes to what it shows
                await self._mqtt.subscribe(self.topics.state, 1)
                await self._mqtt.subscribe(self.topics.availability, 1)
                await self._mqtt.subscribe(self.topics.events, 1)  # motion_done / _aborted
            raise_if_cancelling()  # connect or subscribe may have swallowed it
        except BaseException:
            await self._mqtt.__aexit__(None, None, None)
            raise
        self._tasks = [asyncio.create_task(self.inbox.read(self._mqtt)),
                       asyncio.create_task(self._heartbeat_loop())]
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if sending := [task for task in self._final_sends if not task.done()]:
            await asyncio.wait(sending, timeout=1.0)  # a give-up must reach the daemon
        # Cancel until they end: a cancellation can be lost inside aiomqtt (offboardd.aio).
        self._tasks += self._final_sends
        while pending := [task for task in self._tasks if not task.done()]:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=1.0)
        await asyncio.gather(*self._tasks, return_exceptions=True)  # collect what they raised
        for future in self.inbox.pending.values():
            future.cancel()
        if self.inbox.lost is None:
            await self._mqtt.__aexit__(exc_type, exc, tb)
        else:  # already gone: closing must not raise over the error the script is handling
            with contextlib.suppress(aiomqtt.MqttError):
                await self._mqtt.__aexit__(exc_type, exc, tb)

    # -- commands -------------------------------------------------------------------------
    async def engage(self, setpoint: Setpoint | None = None, *, arm: bool = False) -> Reply:
        """Engage with a first setpoint (None: hold where the vehicle is); arm if asked.

        The heartbeat starts as the engage is sent: the lease runs through the warm-up.
        It quotes the daemon's token when one was read: after a pilot, a GCS or a failsafe
        took the vehicle, only an engage written since (quoting that phase's) is taken."""
        command = Engage(self.new_command_id(), setpoint=setpoint, arm=arm,
                         resume=self.inbox.resume_token)
        return await self._taking_control(self.send(command, timeout_s=self.engage_timeout_s),
                                          engage=True)

    async def setpoint(self, setpoint: Setpoint) -> None:
        """Publish a setpoint on the high-rate topic (QoS 0; refusals land in
        `last_stream_error`). It also renews the lease, as every accepted command does."""
        if self.inbox.lost is not None:  # a ClientError, as every call after it (review)
            raise self.inbox.lost
        if lost := self.control.take():
            raise lost
        self._seq += 1
        doc = encode_stream_setpoint(setpoint, session=self.session, seq=self._seq)
        await self._publish(self.topics.setpoint, encode_document(doc), qos=0,
                                 properties=self._request_properties(f"{self.session}:{self._seq}"))

    async def setpoint_confirmed(self, setpoint: Setpoint) -> Reply:
        """A setpoint sent as a command on `cmd`, waiting for its reply."""
        return await self.send(SetSetpoint(self.new_command_id(), setpoint))

    async def resume(self, setpoint: Setpoint) -> Reply:
        """Take control with `setpoint`, quoting the daemon's token: back from `holding`
        (our lease lapsed: a network hiccup, a stalled script), or over from another
        commander. Only a commander that read the token takes control, so a dead one's late
        backlog never does. Renews the lease from then on, as after an engage. Raises
        NoToken if nobody flies the vehicle (engage instead)."""
        command = SetSetpoint(self.new_command_id(), setpoint,
                              resume=await self._token_for(engage=False, resume=True))
        return await self._taking_control(self.send(command))

    async def release(self) -> Reply:
        return await self._stop(Release(self.new_command_id()))

    # hold, land, rtl and arm with `resume`: after a pilot, a GCS or a failsafe took the
    # vehicle, you act over them on purpose (see `_mode_token`).
    async def hold(self, *, resume: bool = False) -> Reply:
        return await self._asking(Hold, resume, self._stop)

    async def land(self, *, resume: bool = False) -> Reply:
        return await self._asking(Land, resume, self._stop)

    async def rtl(self, *, resume: bool = False) -> Reply:
        return await self._asking(Rtl, resume, self._stop)

    async def arm(self, *, resume: bool = False) -> Reply:
        """Arm. After a pilot, a GCS or a failsafe took (or disarmed) the vehicle, only
        with `resume` (see `hold`)."""
        return await self._asking(Arm, resume, self.send)

    async def _asking(self, kind: type[Hold | Land | Rtl | Arm], resume: bool,
                      send: Callable[[Command], Awaitable[Reply]]) -> Reply:
        """A hold, land, rtl or arm quoting `_mode_token`. With `resume`, a refusal
        `not_in_control` naming a token is tried once more with it: the vehicle was taken
        (again) between our read of the state and the command's arrival (an engage from
        `preempted` that failed goes back there, with a new token). That token came from
        the daemon just now, so it is still a live commander that quotes it."""
        token = await self._mode_token(resume)
        try:
            return await send(kind(self.new_command_id(), resume=token))
        except CommandRefused as exc:
            fresh = exc.current_token()
            if not (resume and fresh is not None and fresh != token):
                raise
        return await send(kind(self.new_command_id(), resume=fresh))

    async def _mode_token(self, resume: bool) -> str | None:
        """The token a hold, land, rtl or arm quotes. Without `resume`, none: after a pilot,
        a GCS or a failsafe took the vehicle it is refused `not_in_control`, so a script
        written as "goto, then land" that never noticed the takeover does not switch the
        pilot's vehicle (review: the client quoted the token for it). With `resume` (you
        know, and act over them on purpose), the daemon's while its state says so."""
        if not resume:
            return None
        await self.read_state()
        return self.taken_token()

    async def disarm(self, *, force: bool = False) -> Reply:
        return await self.send(Disarm(self.new_command_id(), force=force))

    async def emergency_stop(self, *, confirm: bool) -> Reply:
        return await self._stop(EmergencyStop(self.new_command_id(), confirm=confirm))

    # -- motions the daemon plans and flies (issue 16): answered once accepted ------------
    # `resume`: take control with this motion, quoting the daemon's token (see `resume`).
    async def goto(self, target: Place, *, speed_m_s: float = 2.0, yaw: Yaw = KEEP_YAW,
                   engage: bool = False, arm: bool = False, resume: bool = False
                   ) -> MotionHandle:
        """Fly to `target`; with `engage`, take control first (like `engage`)."""
        token = await self._token_for(engage=engage, resume=resume)
        return await self._motion(Goto(self.new_command_id(), target, speed_m_s, yaw,
                                       engage, arm, token))

    async def path(self, waypoints: Sequence[Place], *, speed_m_s: float = 2.0,
                   corner_radius_m: float = 1.0, yaw: Yaw = KEEP_YAW, engage: bool = False,
                   arm: bool = False, resume: bool = False) -> MotionHandle:
        token = await self._token_for(engage=engage, resume=resume)
        return await self._motion(FollowPath(self.new_command_id(), tuple(waypoints),
                                             speed_m_s, corner_radius_m, yaw, engage, arm, token))

    async def orbit(self, center: Place, radius_m: float, *, speed_m_s: float = 2.0,
                    turns: float = 1.0, clockwise: bool = True,
                    yaw: Yaw = FACE_CENTER_YAW, resume: bool = False) -> MotionHandle:
        return await self._motion(Orbit(self.new_command_id(), center, radius_m, speed_m_s,
                                        turns, clockwise, yaw,
                                        await self._token_for(engage=False, resume=resume)))

    async def stop(self, *, resume: bool = False) -> MotionHandle:
        """Stop smoothly where the vehicle is going, then hold there."""
        return await self._motion(Stop(self.new_command_id(),
                                       await self._token_for(engage=False, resume=resume)))

    async def _motion(self, command: MotionCommand) -> MotionHandle:
        engaging = getattr(command, "engage", False)
        end, warnings = self.inbox.motions.expect(command.command_id)
        sent = self.send(command, timeout_s=self.engage_timeout_s if engaging else None)
        try:
            if engaging or command.resume is not None:
                reply = await self._taking_control(sent, engage=engaging)
            else:
                reply = await sent
        except BaseException:
            self.inbox.motions.forget(command.command_id)
            raise
        return MotionHandle(command.command_id, reply, end, warnings)

    async def _taking_control(self, sent: Awaitable[Reply], *, engage: bool = False) -> Reply:
        """Send what takes control (an engage, a resume): the lease is renewed from the
        moment it goes out, and control is watched for once it is ours.

        Refused, nothing changed: the lease and its watch stay as they were (a refused
        second engage once stopped the heartbeats of the lease still held, and the watch
        with them: review). Cancelled or unanswered, its outcome is unknown: an engage is
        given up (a `release` follows it: one still warming up is dropped, one that went
        through is handed back to PX4; a cancelled engage once armed and climbed for
        nobody: review), and the lease is no longer renewed."""
        holding_before = self._holding_lease
        watch_before = self.control.engaging()  # control taken afresh: an old loss is behind
        self._holding_lease = True
        try:
            reply = await sent
        except CommandRefused:
            self.control.refused(watch_before)
            self._holding_lease = holding_before
            raise
        except BaseException:
            self._holding_lease = False
            if engage:
                self._final_sends.append(asyncio.create_task(self._give_up_engage()))
            raise
        self.control.engaged()
        return reply

    async def _give_up_engage(self) -> None:
        """Tell the daemon to drop an engage whose outcome we will not wait for."""
        command = Release(self.new_command_id())
        with contextlib.suppress(aiomqtt.MqttError):
            await self._publish(self.topics.cmd, encode_document(encode_command(command)),
                                qos=1, properties=self._request_properties(command.command_id))

    async def _token_for(self, *, engage: bool, resume: bool) -> str | None:
        """The token a command quotes. `resume`: the daemon's, waiting for the retained
        state if none was read yet (NoToken when there is none: nobody flies the vehicle).
        An engage: the one it knows, if any. Else none."""
        if not resume:
            return self.inbox.resume_token if engage else None
        if self.inbox.resume_token is None and self.inbox.state is None:  # not read yet
            await self.wait_for_state(lambda _: True, self.reply_timeout_s)
        token = self.inbox.resume_token
        if token is None:
            phase = (self.state or {}).get("phase")
            raise NoToken(f"no token to take control with (phase {phase}): engage instead")
        return token

    def taken_token(self) -> str | None:
        """The token an arm, a hold, a land or an rtl quotes: the daemon's, when its state
        says a pilot, a GCS or a failsafe took the vehicle (`failsafe`, `preempted`); else
        none, which is all a daemon before 2026-11-28 takes on them."""
        phase = (self.inbox.state or {}).get("phase")
        return self.inbox.resume_token if phase in TAKEN_PHASES else None

    async def read_state(self, timeout_s: float = 1.0) -> None:
        """Wait (at most `timeout_s`) for the daemon's retained state if none was read yet,
        so that what is sent next quotes the token it holds (a one-shot `ctl`). Without
        one, the command goes out as it is and the daemon decides."""
        if self.inbox.state is None:
            with contextlib.suppress(ReplyTimeout):
                await self.wait_for_state(lambda _: True, timeout_s)

    def keep_lease(self) -> None:
        """Renew the lease in the background from now on (as after an engage): for a
        commander that joins a vehicle already flying, e.g. `ctl goto --wait`; a loss of
        control is watched for from now on, as after an engage."""
        self._holding_lease = True
        self.control.engaged()

    async def control_lost(self) -> ControlLost:
        """Completes when this commander loses control (pilot, GCS, failsafe, lease lapse,
        daemon restart or offline, broker lost): race it against a mission."""
        return await self.control.wait()

    async def heartbeat(self) -> Reply:
        """A heartbeat that waits for its reply (a liveness check of the daemon)."""
        return await self.send(CommanderHeartbeat(self.new_command_id()))

    async def renew_lease(self) -> None:
        """Renew the lease as the background task does: QoS 0, no waiting (a lost one is
        replaced by the next); a refusal lands in `last_heartbeat_error`."""
        if self.inbox.lost is not None:
            raise self.inbox.lost
        doc = encode_command(CommanderHeartbeat(self.new_command_id(), ack=False))
        await self._publish(self.topics.cmd, encode_document(doc), qos=0,
                                 properties=self._request_properties(doc["id"]))

    async def send(self, command: Command, *, timeout_s: float | None = None,
                   check: bool = True) -> Reply:
        """Publish any command (QoS 1) and wait for its reply; `check` raises on ok=false."""
        reply = await self._request(encode_command(command, **self._sequence_for(command)),
                                    command.command_id, timeout_s)
        if check and not reply.ok:
            raise CommandRefused(reply)
        return reply

    async def send_document(self, doc: dict[str, Any], *, timeout_s: float | None = None
                            ) -> Reply:
        """Publish a raw command document (as `offboardd ctl` does); never raises on ok=false."""
        command_id = str(doc.get("id") or self.new_command_id())
        return await self._request({**doc, "id": command_id}, command_id, timeout_s)

    async def flights(self, limit: int = 20) -> list[dict[str, Any]]:
        """The daemon's recorded flights, newest first (the `flights` command): each the
        summary `offboardd log list` shows. Raises CommandRefused if refused."""
        reply = await self.send_document({"v": SCHEMA_VERSION, "cmd": "flights", "limit": limit})
        if not reply.ok:
            raise CommandRefused(reply)
        flights = reply.extra.get("flights")
        return list(flights) if isinstance(flights, list) else []

    async def watch(self, filters: Sequence[str] | None = None) -> AsyncIterator[Watched]:
        """Yield every message on `filters` (default: everything under the vehicle prefix).

        Bounded: when the consumer is slower than the broker, the newest messages are
        dropped (and counted in `watch_dropped`) rather than memory growing."""
        queue = self.inbox.start_watch()
        for topic_filter in filters or [self.topics.everything]:
            await self._mqtt.subscribe(topic_filter, 0)
            raise_if_cancelling()  # the subscribe may have swallowed it (offboardd.aio)
        while True:
            item = await queue.get()
            if item is None:
                raise self.inbox.lost or ClientError("connection to the broker lost")
            yield item

    async def wait_for_state(self, predicate: StatePredicate, timeout_s: float) -> dict[str, Any]:
        """Wait until the published state satisfies `predicate`; return that state."""
        return await self.inbox.wait_for_state(predicate, timeout_s)

    async def availability(self, timeout_s: float = 0.5) -> str | None:
        """The daemon's retained `online` / `offline` (None: nothing retained, so it has
        never run against this broker, or not within `timeout_s`). A `state` read while it
        is `offline` is the last the daemon published, not the vehicle now."""
        return await self.inbox.wait_for_availability(timeout_s)

    # -- internals -------------------------------------------------------------------------
    async def _stop(self, command: Command) -> Reply:
        watching = self.control.watching
        self.control.handing_back()  # what follows is ours, not a loss of control
        try:
            reply = await self.send(command)
        except BaseException:
            # refused or unanswered: control is as it was, and watched (a refused stop once
            # left the lease renewed with nobody watching for its loss: review)
            self.control.watching = watching
            raise
        self._holding_lease = False  # control handed back: stop renewing the lease
        return reply

    def new_command_id(self) -> str:
        """A command id unique to this client (its replies are matched on it)."""
        self._ids += 1
        return f"{self.client_id}-{self._ids}"

    def _sequence_for(self, command: Command) -> dict[str, Any]:
        if isinstance(command, Engage | SetSetpoint) and command.setpoint is not None:
            self._seq += 1
            return {"session": self.session, "seq": self._seq}
        return {}

    async def _publish(self, topic: str, payload: bytes, *, qos: int,
                       properties: Properties | None) -> None:
        await self._mqtt.publish(topic, payload, qos=qos, properties=properties)
        # aiomqtt's publish can return although the caller was cancelled meanwhile (Python
        # 3.11's wait_for, see offboardd.aio): a script's loop of setpoints must still end.
        raise_if_cancelling()

    def _request_properties(self, command_id: str) -> Properties | None:
        if not self._v5:
            return None
        props = Properties(PacketTypes.PUBLISH)  # type: ignore[no-untyped-call]
        props.ResponseTopic = self._inbox
        props.CorrelationData = command_id.encode()
        return props

    async def _request(self, doc: dict[str, Any], command_id: str,
                       timeout_s: float | None) -> Reply:
        if self.inbox.lost is not None:
            raise self.inbox.lost
        # A loss is raised by the next call, but never instead of a command that stops the
        # vehicle: an emergency stop after a loss was swallowed (review).
        if doc.get("cmd") not in _ALWAYS_SENT and (lost := self.control.take()):
            raise lost
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.inbox.pending[command_id] = future
        try:
            await self._publish(self.topics.cmd, encode_document(doc), qos=1,
                                     properties=self._request_properties(command_id))
            wait_s = self.reply_timeout_s if timeout_s is None else timeout_s
            try:
                async with asyncio.timeout(wait_s):  # not wait_for: see offboardd.aio
                    return await future
            except TimeoutError:
                given_up = ("; the engage is given up (released)"
                            if doc.get("cmd") == "engage" or doc.get("engage") is True
                            else "")
                raise ReplyTimeout(f"no reply to {doc.get('cmd')} {command_id} within "
                                   f"{wait_s} s (is offboardd running? is the timeout long "
                                   f"enough?){given_up}") from None
        finally:
            self.inbox.pending.pop(command_id, None)

    async def _heartbeat_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:  # renew_lease() re-raises a cancellation aiomqtt swallowed: this ends
            await asyncio.sleep(self.heartbeat_period_s)
            if not self._holding_lease or self.control.ended:
                continue  # not ours (any more): a refused heartbeat has told us so
            heard_s = self.inbox.state_received_s
            silent_s = 0.0 if heard_s is None else loop.time() - heard_s
            if self._follow_state and self.control.watching and silent_s > STATE_SILENCE_S:
                self.control.on_silence(silent_s)
                continue
            with contextlib.suppress(aiomqtt.MqttError):
                await self.renew_lease()
