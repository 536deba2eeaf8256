"""The asyncio shell around the pure engine: one TaskGroup, one clock, one timer.

Data flows one way each (design.md): FC bytes -> link -> FcInput (codec, translate_in,
telemetry cache: fc_input.py) -> engine -> actions -> translate_out -> codec -> link;
MQTT -> bridge -> engine -> replies / state / events (outputs.py) -> bridge. The clock
(`loop.time()`, monotonic) is read once per wake-up and passed in as `now`; the engine
says when it next needs waking and a single `call_at` timer is re-armed from that after
every batch, so a new setpoint goes out at once and the stream keeps its absolute
schedule. Each wake-up of that timer is one cycle: the UDP link's pending datagrams (a
polled link: never one wake-up per datagram), the stream tick, then the telemetry due.
The systemd watchdog is fed from that same timer, so a stalled event loop stops feeding
it whether idle or flying.

This module must not decide anything about flying: every decision is the engine's.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import structlog

from offboardd import heap
from offboardd.config import DaemonConfig
from offboardd.core.actions import Action, Notice, NoticeKind, Reply, SendCompanionHeartbeat
from offboardd.core.commands import Command, Release, SetSetpoint
from offboardd.core.events import Event, FcLinkDown, FcLinkUp
from offboardd.core.offboard import OffboardEngine
from offboardd.core.reasons import STREAMING_PHASES, Phase
from offboardd.fc_codec import fc_codec
from offboardd.fc_input import FcInput
from offboardd.mavlink import translate
from offboardd.mavlink.budget import FcSendBudget
from offboardd.mavlink.codec import Message
from offboardd.mavlink.link_noise import NoiseWatch
from offboardd.mavlink.links import Link, LinkState, open_link
from offboardd.mavlink.links.unsent import UnsentWatch
from offboardd.mavlink.signing import refusal_hint
from offboardd.mqtt.bridge import InboundCommand, MqttBridge
from offboardd.mqtt.queries import FlightsQuery
from offboardd.mqtt.rates import (
    ALL_ROUTES,
    ALL_ROUTES_RATES,
    Admit,
    CommanderRates,
    Lane,
    lane_of,
)
from offboardd.mqtt.schema import encode_command
from offboardd.mqtt.telemetry_schedule import TelemetrySchedule
from offboardd.mqtt.wire import MqttErrorCode, Rejection
from offboardd.outputs import Outputs
from offboardd.recorder.queries import FlightsQueries
from offboardd.recorder.recorder import Recorder
from offboardd.recorder.settings import RecordMode, flights_root
from offboardd.replies import ReplySink, commander_of
from offboardd.systemd import SystemdNotifier
from offboardd.wake_timer import WakeTimer, wake_timer

log = structlog.get_logger("offboardd")

# The phases in which setpoints go out (releasing: until PX4 confirms the hand-over).
_STREAMS = STREAMING_PHASES | {Phase.RELEASING}
_MAX_TIMER_SLEEP_S = 0.5  # wake at least this often: watchdog and state stay fresh
# asyncio's selector waits in whole milliseconds, rounded up, so its timer fires up to 1 ms
# late. Where there is no timerfd (wake_timer.py), the timer is set this much early and a
# short precise sleep finishes the wait: the stream's p50 interval deviation goes from
# ~0.3 ms to ~0.1 ms (bench/README.md).
_TIMER_EARLY_S = 0.0015
_NOT_HELD: AbstractContextManager[None] = contextlib.nullcontext()
_STATE_PERIOD_S = 1.0  # retained state is re-published this often even when unchanged
_SHUTDOWN_RELEASE_S = 5.0  # SIGTERM while flying: time allowed to hand the vehicle back


class Runtime:
    """Owns the link, the codec, the engine and (optionally) the MQTT bridge."""

    def __init__(
        self,
        config: DaemonConfig,
        *,
        mqtt: bool = True,
        notifier: SystemdNotifier | None = None,
        freeze_start_up: bool = False,
    ) -> None:
        """`freeze_start_up`: the daemon's process (`offboardd run`) keeps what start-up
        left out of the collector's later walks (heap.py); not for a Runtime in a process
        that does other things too (the tests')."""
        self.config = config
        self._freeze_start_up = freeze_start_up
        self.notifier = notifier if notifier is not None else SystemdNotifier()
        fc = fc_codec(config, mqtt=mqtt)
        self.codec, self.signing = fc.codec, fc.signing
        self.link: Link = open_link(
            config.mavlink.url, self._on_bytes, self._on_link_state, confirm_peers=True,
            polled=True,  # UDP: read by _wake once per cycle, not once per datagram
        )
        self.bridge: MqttBridge | None = (
            MqttBridge(config.mqtt, self._on_inbound) if mqtt else None
        )
        relay = self.bridge if self.bridge is not None and fc.relay_ids else None
        self.fc_input = FcInput(self.codec, config.mavlink.fc_system_id, relay,
                                self._on_message_error, whole_frames=self.link.whole_frames)
        self.engine: OffboardEngine | None = None
        self._telemetry_schedule = TelemetrySchedule({}, 0.0)  # set when run() starts
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: WakeTimer | None = None  # made in run(), on the running loop
        self._timer_armed = False
        self._timer_due_s = 0.0  # the deadline the pending timer stands for
        self._timer_precise = False  # the deadline is the engine's (a stream tick...)
        self._waking = False  # inside _wake, which re-arms once at its end
        self.run_id = secrets.token_hex(6)  # this run of the daemon, in every `state`
        self.fc_budget = FcSendBudget()
        self.unsent = UnsentWatch()  # a peer that stopped taking our bytes (unsent.py)
        self._noise = NoiseWatch(str(config.mavlink.url))  # bytes but no MAVLink (baud)
        self._fc_messages = translate.SetpointMessages()  # a held setpoint: built once
        self.rates = CommanderRates()
        self.all_rates = CommanderRates(ALL_ROUTES_RATES)  # every route at once
        self.outputs = Outputs(self.bridge, self.notifier,
                               self._link_hint)
        # The flight recorder (recorder/): it sees every frame both ways and every word
        # of the engine's, and writes from its own thread.
        self.recorder: Recorder | None = (
            Recorder(config.recorder, self.codec, self.run_id)
            if config.recorder.mode is not RecordMode.OFF else None)
        if self.recorder is not None:
            self.outputs.journal = self.recorder.journal
        recorder = self.recorder
        self.queries = (None if self.bridge is None else FlightsQueries(
            flights_root(config.recorder), recorder is not None, self.bridge.reply,
            (lambda: recorder.open_flight) if recorder is not None else lambda: None))
        self._last_watchdog_s = -1e9
        self._replayed_seen = 0  # signed frames refused as replays, as last looked at
        self._next_bootstrap_s = -1e9  # _signing_bootstrap's next heartbeat, at the soonest
        self._last_wake_s = 0.0  # set when run() starts; caps the timer's sleep
        self.internal_errors = 0
        self.running = asyncio.Event()

    # -- life cycle --------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Serve until `stop` is set (or SIGTERM/SIGINT/SIGHUP when `stop` is None); release."""
        loop = self._loop = asyncio.get_running_loop()
        stop = stop if stop is not None else _signal_event(loop)
        self.engine = OffboardEngine(self.config.engine, loop.time())
        if self.bridge is not None:
            self._telemetry_schedule = TelemetrySchedule(
                self.config.mqtt.telemetry_rates_hz, loop.time())
        self._last_wake_s = loop.time()
        timer = self._timer = wake_timer(loop, self._wake, early_s=_TIMER_EARLY_S)
        log.info("starting", link=str(self.config.mavlink.url), mqtt=self.bridge is not None)
        if self.recorder is not None:
            self.recorder.start()
        link_task = loop.create_task(self.link.run(), name="link")
        tasks = [link_task]
        if self.bridge is not None:
            tasks.append(loop.create_task(self.bridge.run(), name="mqtt"))
        stopping = loop.create_task(stop.wait(), name="stop")
        failed: BaseException | None = None
        try:
            if self._freeze_start_up:
                frozen = heap.freeze_start_up()
                log.info("heap_frozen", objects=frozen.objects,
                         collect_ms=round(frozen.collect_ms, 1))
            self._rearm()
            # READY as soon as the loops run: never wait for the FC or the broker.
            self.notifier.ready("waiting for the flight controller")
            self.running.set()
            done, _ = await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
            ended = [task for task in tasks if task in done]
            for task in ended:  # (neither returns: a bug, or an error it does not handle)
                error = None if task.cancelled() else task.exception()
                failed = error or RuntimeError(f"the {task.get_name()} task ended")
                log.error("task_failed", task=task.get_name(), error=repr(failed))
            # A task failing once took the stream down with no hand-back (a TaskGroup
            # cancelled the rest at once): the vehicle is released first, as on a stop,
            # unless it was the FC link that failed (nothing can reach the FC then).
            if link_task not in ended:
                await self._release_for_shutdown()
                self._restore_streams()
        finally:
            every: list[asyncio.Task[Any]] = [stopping, *tasks]
            for pending in every:
                pending.cancel()
            await asyncio.gather(*every, return_exceptions=True)
            timer.close()
            self._signing_tick(final=True)
            if self.recorder is not None:
                self.recorder.close()  # the open flight is closed and its summary written
            self.notifier.stopping()
            log.info("stopped")
        if failed is not None:  # exit non-zero: systemd restarts us
            raise failed

    def _restore_streams(self) -> None:
        """[mavlink.streams] restore_on_exit: PX4's default rates back for what the plan
        set (interval 0), sent once, unanswered: the daemon is going."""
        engine = self._engine()
        target = engine.vehicle.target
        if not self.config.mavlink.streams.restore_on_exit or target is None or not engine.fc_up:
            return
        actions = engine.streams.restore(target)
        log.info("stream_plan_restored", messages=len(actions))
        for action in actions:
            for msg in translate.messages_for(action):
                self._send(msg)

    async def _release_for_shutdown(self) -> None:
        engine, loop = self._engine(), self._loop
        assert loop is not None
        self.notifier.stopping("releasing the vehicle")
        phase = Phase(engine.phase)
        if phase is Phase.RELEASING:  # a hand-over under way (release, land, loss action):
            log.info("shutdown_awaits_handover")  # it is what was asked for; see it through
        elif phase not in STREAMING_PHASES:
            return
        else:
            log.info("shutdown_release")
            reply = self.submit(Release(command_id="shutdown"))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_SHUTDOWN_RELEASE_S):
                    await asyncio.shield(reply)
        deadline = loop.time() + _SHUTDOWN_RELEASE_S
        while Phase(engine.phase) in _STREAMS:
            if loop.time() > deadline:
                log.warning("shutdown_release_unconfirmed", phase=engine.phase.value)
                break
            await asyncio.sleep(0.05)

    # -- inputs ------------------------------------------------------------------------

    def submit(self, command: Command) -> asyncio.Future[Reply]:
        """Hand a command to the engine; the future resolves with its reply."""
        assert self._loop is not None
        future: asyncio.Future[Reply] = self._loop.create_future()
        self._feed_command(command, future)
        return future

    def _on_inbound(self, inbound: InboundCommand) -> None:
        route, command = inbound.route, inbound.command
        kind = "flights" if isinstance(command, FlightsQuery) else command.kind.value
        lane = lane_of(kind, on_setpoint_topic=isinstance(command, SetSetpoint)
                       and not route.reply_on_success)  # (the setpoint topic's are not replied)
        now = self._now()
        verdict = self.rates.admit((route.topic, lane), now)
        engine = self.engine
        holder = engine.lease.holder if engine is not None else None
        if verdict is Admit.ACCEPT and lane is not Lane.SAFETY and route.topic != holder:
            # All routes together, but the lease holder's and the safety commands: a new
            # response topic per request (a flood, or a common request/response habit)
            # once made 20,000 commands work for the engine at once (review).
            verdict = self.all_rates.admit((ALL_ROUTES, lane), now)
        if verdict is Admit.ACCEPT:
            if isinstance(command, FlightsQuery):
                if self.queries is not None:
                    self.queries.answer(command, route)
            else:
                self._feed_command(command, route, inbound.stale)
        elif verdict is Admit.REFUSE and self.bridge is not None:
            self.bridge.reply(route, ok=False, code=MqttErrorCode.RATE_LIMITED.value,
                              message="more commands than one commander may send "
                              f"({self.rates.settings.cmd_rate_hz:g}/s on cmd, "
                              f"{self.rates.settings.setpoint_rate_hz:g}/s on setpoint)")

    def _feed_command(self, command: Command, sink: ReplySink,
                      stale: Rejection | None = None) -> None:
        replies = self.outputs.replies
        if replies.repeats_pending(command, sink):
            log.info("command_repeated", command=command.kind.value, id=command.command_id)
            return  # (its reply, when it comes, answers the repeat too)
        answered = replies.answered_before(command, sink, self._now())
        if answered is not None:  # (so never a future's)
            assert not isinstance(sink, asyncio.Future)
            log.info("command_repeated", command=command.kind.value, id=command.command_id,
                     answered=True)
            self.outputs.reply_again(answered, sink)
            return
        if stale is not None:  # its session and seq passed once, and it is no repeat
            assert not isinstance(sink, asyncio.Future)
            log.info("command_refused", id=command.command_id, code=stale.code,
                     message=stale.message)
            if self.bridge is not None:
                self.bridge.reply(sink, ok=False, code=stale.code, message=stale.message)
            return
        token = replies.tokenize(command, sink)
        if command.kind.value not in ("setpoint", "heartbeat"):  # high rate: not logged
            log.info("command", command=command.kind.value, id=command.command_id)
            if self.recorder is not None:  # (their refusals are journaled: outputs.py)
                self.recorder.journal("command", id=command.command_id,
                                      commander=commander_of(sink),
                                      command=encode_command(command))
                self.outputs.journaled.add(token.command_id)
        try:
            self._handle([token], self._now(), commander=commander_of(sink))
        except Exception:  # answered internal_error by the gate (or raised to submit's caller)
            replies.drop(token.command_id)
            raise

    def _on_bytes(self, data: bytes) -> None:
        try:
            if self.fc_input.decode(data, self._now()):  # one clock read for the whole chunk
                self.link.confirm_sender()
            if self.recorder is not None:
                self.recorder.frames_in()
            if not self.link.polled:  # a polled link's reach the engine once per poll
                self._handle_fc_events()
        except Exception:  # a bug: logged and counted like one in a cycle. Raised into a
            # serial or TCP link's reader, it would end the link task and the daemon with it.
            self.internal_errors += 1
            log.exception("internal_error", where="fc_bytes")

    def _on_message_error(self, msg: Message) -> None:
        self.internal_errors += 1
        log.exception("internal_error", message_type=msg.get_type())

    def _handle_fc_events(self) -> None:
        now = self._now()
        if events := self.fc_input.take(now):
            self._handle(events, now)

    def _link_hint(self) -> str | None:
        """Why the FC may be unknown: the link cannot open (a device absent, busy, not
        ours to open), or frames are refused for their signatures."""
        state = self.link.state
        if state.open_failed:
            return f"FC link down: {state.detail}"
        if self.fc_input.unfollowed:
            return self._unfollowed_text(min(self.fc_input.unfollowed), False)
        return refusal_hint(self.codec.stats) or self._noise.hint

    def _unfollowed_text(self, system_id: int, following: bool) -> str:
        wanted = self.config.mavlink.fc_system_id
        if following:
            return (f"another autopilot (system {system_id}) on the link: following system "
                    f"{wanted} only (mavlink.fc_system_id)")
        return (f"an autopilot of system {system_id} is heard on the link, but "
                f"mavlink.fc_system_id = {wanted}: not followed (set it to {system_id}, or "
                "to 0 for the first PX4 heard)")

    def _on_link_state(self, state: LinkState) -> None:
        if state.open_failed:  # still down; a new reason, said once (not once per retry)
            log.warning("fc_link_waiting", detail=state.detail)
            return
        log.info("fc_link", up=state.up, detail=state.detail)
        self._handle_fc_events()  # what arrived before the link changed comes first
        self.codec.reset()
        if self.engine is not None:
            event = FcLinkUp() if state.up else FcLinkDown(detail=state.detail)
            self._handle([event], self._now())

    # -- the engine and its actions ----------------------------------------------------

    def _engine(self) -> OffboardEngine:
        assert self.engine is not None, "Runtime.run() has not started"
        return self.engine

    def _mqtt_writes(self) -> AbstractContextManager[None]:
        return _NOT_HELD if self.bridge is None else self.bridge.writes_held()

    def _now(self) -> float:
        assert self._loop is not None
        return self._loop.time()

    def _handle(self, events: Sequence[Event], now: float, *, cycle: bool = False,
                commander: str | None = None) -> None:
        """`cycle`: the timer's cycle (`OffboardEngine.step`: the events, then the timers
        once); otherwise events as they come (`handle_all`: the timers before them too)."""
        engine = self.engine
        if engine is None:
            return
        vehicle = engine.vehicle
        before = (vehicle.custom_mode, vehicle.armed, vehicle.landed_state,
                  engine.out.warnings, engine.fc_up, engine.resume_token)
        streamed = engine.phase in _STREAMS
        actions = (engine.step(events, now) if cycle
                   else engine.handle_all(events, now, commander=commander))
        if streamed and engine.phase not in _STREAMS:
            # What has not left by now is stale (a tty's queue behind a stuck line): a
            # burst of it later would take PX4 back into OFFBOARD (links/unsent.py).
            self.link.drop_unsent()
        # Whose frames vouch for a UDP sender (fc_input.py): the FC we follow, else (lost)
        # the PX4 we followed before, the only one adopted again (vehicle.py).
        source = vehicle.target or vehicle.px4
        self.fc_input.fc_target = (None if source is None
                                   else (source.system_id, source.component_id))
        self._dispatch(actions, now)
        if (vehicle.custom_mode, vehicle.armed, vehicle.landed_state,
                engine.out.warnings, engine.fc_up, engine.resume_token) != before:
            # Subscribers see the FC's mode, arming and landing at once, not a second
            # later; the warnings, which a GCS's PARAM_SET in flight may change; the FC
            # link lost or back, and a new resume token (it was up to a second late:
            # `fc_link: up` 0.85 s after the FC was lost, review).
            self._publish_state(now)
        self._rearm()

    def _wake(self) -> None:
        """The one timer: stream ticks, timeouts, heartbeats, watchdog, periodic state."""
        self._timer_armed = False
        self._waking = True
        try:
            # what the cycle publishes (telemetry above all) reaches the broker in one write
            with self._mqtt_writes():
                self._cycle()
        except Exception:  # a bug: logged and counted, and the next cycle still comes; if
            # it repeats, the watchdog (fed after the tick) starves and systemd restarts us.
            self.internal_errors += 1
            log.exception("internal_error", where="cycle")
        finally:
            self._waking = False
        self._rearm()

    def _cycle(self) -> None:
        # A polled link is read first, inside the timer's early margin, and what it held
        # reaches the engine with the timers (`step`: its events, then the timers once): the
        # engine judges timeouts and flies the tick on the freshest FC state. (Read after
        # the tick, a daemon frozen for a second by its host found its position estimate
        # stale and took the loss action instead of holding: seen in CI.) A link that is
        # not polled has handed its messages over as they came.
        self.link.poll()
        early_s = self._timer_due_s - self._now()
        if self._timer_precise and 0.0 < early_s <= _TIMER_EARLY_S:  # (never with a timerfd)
            time.sleep(early_s)  # at most 1.5 ms, once per deadline: precision for the stream
        now = self._last_wake_s = self._now()
        engine = self._engine()
        self._handle(self.fc_input.take(now), now, cycle=True)
        self._send_budgeted(now)
        if abandoned := self.unsent.check(self.link, now, engine.checks.loss_timeout_s or 1.0):
            log.warning("fc_link_stalled", unsent_bytes=abandoned, link=str(self.link.url))
        if self.recorder is not None:
            self.recorder.cycle(engine, now)
        if engine.fc_up:
            self.outputs.telemetry(self._telemetry_schedule, self.fc_input.telemetry,
                                   engine.vehicle, now)
        else:  # no telemetry from a lost FC: its last words went on repeating (review)
            self.fc_input.telemetry.clear()
        if noise := self._noise.check(self.codec.stats, engine.fc_up, now):
            self.outputs.notice(Notice(NoticeKind.WARNING, noise, engine.out.phase))
        if self.fc_input.unfollowed_new:
            for system_id in self.fc_input.take_unfollowed():
                self.outputs.notice(Notice(NoticeKind.WARNING, self._unfollowed_text(
                    system_id, engine.fc_up), engine.out.phase))
        if stale_text := self.fc_input.flush_stale(now):  # chunked STATUSTEXTs never finished
            self._dispatch(engine.handle_all(stale_text, now), now)
        period_s = self.notifier.watchdog_period_s
        if period_s is not None and now - self._last_watchdog_s >= period_s / 2:
            self.notifier.watchdog()
            self._last_watchdog_s = now
        # while a planned motion runs, [mqtt] motion_state_interval_s: its planned point
        # (state.motion) is what a script plots the flown path against (scenario/planned.py)
        period_s = (self.config.mqtt.motion_state_interval_s if engine.feed.motion is not None
                    else _STATE_PERIOD_S)
        if now - self.outputs.last_state_s >= period_s:
            self._publish_state(now)
        self._signing_tick()
        self._signing_bootstrap(now)

    def _signing_bootstrap(self, now: float) -> None:
        """No PX4 heard yet, and frames signed with our key refused as replays (a new
        stream more than a minute behind our timestamp): a PX4 v1.17 signs from the
        timestamp stored at provisioning, and takes a newer one only from a signed frame
        it accepts (the MAVLink library does). Until it hears one it is never heard, and
        the engine says nothing to an FC it has not heard (review: over a UART the daemon
        never heard a PX4 provisioned an hour before). So a signed companion heartbeat
        goes out, at most once a second, while such refusals come; a link whose peer is
        not known yet (udpin) drops it. (Once a PX4 was followed, the engine's own
        heartbeat goes on while it is lost.)"""
        engine = self._engine()
        replayed = self.codec.stats.replayed
        if (self.signing is None or engine.fc_up or engine.vehicle.px4 is not None
                or replayed == self._replayed_seen or now < self._next_bootstrap_s):
            return
        self._replayed_seen, self._next_bootstrap_s = replayed, now + 1.0
        heartbeat = SendCompanionHeartbeat(self.codec.system_id,
                                           self.config.engine.companion_component_id)
        for msg in self._fc_messages.messages_for(heartbeat):
            self._send(msg)

    def _signing_tick(self, *, final: bool = False) -> None:
        """The signing timestamp follows the wall clock (a second clock, read for signing
        only) and is saved now and then and at exit."""
        if self.signing is not None:
            for warning in self.signing.tick(self.codec, time.time(), final=final):
                log.warning("mavlink_signing", problem=warning)

    def _rearm(self) -> None:
        timer = self._timer
        if timer is None or self._waking:
            return
        # The caps are anchored to the last wake-up, not to now: every inbound message
        # re-arms, and a cap that slid forward with them would never fire.
        cap_s = self.config.mavlink.read_period_s if self.link.polled else _MAX_TIMER_SLEEP_S
        engine_deadline = self._engine().next_deadline()
        deadline = min(engine_deadline, self._last_wake_s + cap_s, self.fc_budget.next_due_s())
        telemetry_due_s = self._telemetry_schedule.next_due_s()
        if telemetry_due_s is not None and not self.link.polled:
            # (a polled link's cycles come often enough: telemetry rides on them, batched)
            deadline = min(deadline, telemetry_due_s)
        period_s = self.notifier.watchdog_period_s
        if period_s is not None:  # a WatchdogSec shorter than 1 s still gets its pings
            deadline = min(deadline, self._last_watchdog_s + period_s / 2)
        if self._timer_armed and self._timer_due_s == deadline:
            return
        self._timer_due_s = deadline
        self._timer_precise = deadline == engine_deadline and not timer.exact
        self._timer_armed = True
        timer.arm(deadline)

    def _dispatch(self, actions: list[Action], now: float) -> None:
        transition = False
        for action in actions:
            if isinstance(action, Reply):
                self.outputs.reply(action, now)
            elif isinstance(action, Notice):
                transition |= action.kind is NoticeKind.TRANSITION
                self.outputs.notice(action)
            else:
                if isinstance(action, SendCompanionHeartbeat):
                    self.codec.mav.srcSystem = action.system_id
                for msg in self._fc_messages.messages_for(action):
                    if self.fc_budget.offer(msg, now, action):  # else it waits its turn
                        self._send(msg)
        if transition:
            self._publish_state(now)

    def _send_budgeted(self, now: float) -> None:
        """Commands that waited for the FC link's budget, as it allows, if the engine
        still stands by them (a mode or arm request may have gone stale meanwhile)."""
        withdrawn = self.fc_budget.withdrawn
        for msg in self.fc_budget.due(now, self._engine().still_wants):
            self._send(msg)
        if self.fc_budget.withdrawn != withdrawn:
            log.info("fc_requests_withdrawn", count=self.fc_budget.withdrawn - withdrawn)

    def _send(self, msg: Message) -> None:
        frame = self.codec.encode(msg)
        self.link.send(frame)
        if self.recorder is not None:
            self.recorder.frame_out(frame)

    def _publish_state(self, now: float) -> None:
        """On every transition, and every _STATE_PERIOD_S for the figures that move
        continuously (lease, stream rate...)."""
        state = self._engine().snapshot(now).as_dict()
        state["run_id"] = self.run_id  # a new one after a restart: control did not survive it
        state["asyncio_tasks"] = len(asyncio.all_tasks())  # the soak run watches it stay flat
        if self.recorder is not None:
            state["recorder"] = self.recorder.status()
        self.outputs.state(state, now)


# SIGHUP too: `offboardd run` by hand in an SSH session that drops gets SIGHUP, whose default
# action killed the daemon on the spot, mid-flight, with no hand-back (PX4's offboard-loss
# action instead of release_mode); systemd never sends it (SendSIGHUP=no).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _signal_event(loop: asyncio.AbstractEventLoop) -> asyncio.Event:
    stop = asyncio.Event()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    return stop
