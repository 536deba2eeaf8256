"""The setpoint stream part: what we stream, when, and its envelope shaping.

Holds the commanded setpoint and the absolute-deadline clock (stream.StreamClock), and
sends each tick what the envelope lets through for it (EnvelopeGuard.shape), reporting
the first shaping per commanded setpoint, not every tick. The engine starts, replaces
and stops it; the stream never decides when, and never touches the lease or the phase.

A new setpoint goes out at once, but at most one such extra send per stream period: a
flood of setpoint commands (thousands a second) must not become a flood of frames on a
57,600-baud link (issue 15). One that comes sooner goes out as soon as a period has
passed since the last extra send, or with the next tick if that comes first (a commander
streaming at the stream's own rate, whose messages MQTT delivers a little unevenly, would
otherwise see one in a few dozen wait up to a whole period: the bench's 20 Hz probes).

A planned motion (core/motion.py) takes the setpoint's place: each send streams its
setpoint for that instant. It ends with MOTION_DONE (the stream then rests on its last
setpoint) or MOTION_ABORTED with the reason, when a setpoint, another motion or the end
of streaming replaces it; both name the motion's command.

Owns: the setpoint, the running motion (and the finished one it rests on: the next motion
starts from its end), the StreamClock. Must not: judge commands, move
phases, or send without a target (no FC heard: nothing goes out).
"""

from __future__ import annotations

import math

from offboardd.core.actions import NoticeKind, SendSetpoint, Target
from offboardd.core.engine_fence import EnvelopeGuard
from offboardd.core.engine_outbox import Outbox
from offboardd.core.motion import Motion
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import Setpoint
from offboardd.core.stream import StreamClock
from offboardd.core.vehicle import VehicleState

_EPSILON_S = 1e-9  # float slack: a wake-up exactly at a deferred send's turn is not early
WAITING_NOTICE_S = 5.0  # PX4's default take-off ramp trails for ~3 s: that is not news


class SetpointStream:
    def __init__(
        self, period_s: float, guard: EnvelopeGuard, vehicle: VehicleState, out: Outbox
    ) -> None:
        self.clock = StreamClock(period_s)
        self.setpoint: Setpoint | None = None  # as commanded (after the envelope's admission)
        self.motion: Motion | None = None  # a planned motion, streamed instead of `setpoint`
        self.rests_on: Motion | None = None  # a finished motion whose end is streamed still
        self._stopped_motion: Motion | None = None  # stopped with the stream, not yet reported
        self._guard = guard
        self._vehicle = vehicle
        self._out = out
        self._last_extra_s = -math.inf  # the last send_now that went out
        self._deferred = False  # a new setpoint waits for the next extra send's turn

    @property
    def running(self) -> bool:
        return self.clock.running

    def start(self, setpoint: Setpoint | Motion, target: Target, now: float) -> None:
        """A fresh schedule from `now`, the first setpoint sent at once."""
        self._replace(setpoint, now)
        self._deferred = False
        self.clock.start(now)
        self._out.emit(SendSetpoint(target, self._shaped(self._current(now), now)))

    def send_now(self, setpoint: Setpoint | Motion, target: Target | None, now: float) -> None:
        """Replace the setpoint (or motion) and send it at once, unless an extra send went
        out less than a period ago: then when the period is up (`deadline`), or with the
        next tick if that comes first. The schedule carries on unchanged."""
        self._replace(setpoint, now)
        if target is None or not self.clock.running:
            return
        if now - self._last_extra_s >= self.clock.period_s:
            self._send_extra(target, now)
        else:
            self._deferred = True

    def send_last(self, setpoint: Setpoint, target: Target, now: float) -> None:
        """Send `setpoint` once, now, whatever the extra-send budget: the stream's last word
        before it stops (one frame). What the stream holds is left alone, so a running
        motion is reported stopped with the stop's reason, not as replaced."""
        self._out.emit(SendSetpoint(target, self._shaped(setpoint, now)))

    def tick(self, target: Target | None, now: float) -> None:
        """The scheduled send, if one is due (one send however late: no burst); else a
        deferred new setpoint whose turn has come."""
        if self.clock.tick_due(now):
            self._deferred = False  # the tick carries the newest
            if self.setpoint is not None and target is not None:
                self._send(target, now)
        elif self._deferred and now + _EPSILON_S >= self._extra_turn_s():
            self._deferred = False
            if self.setpoint is not None and target is not None:
                self._send_extra(target, now)

    def _send(self, target: Target, now: float) -> None:
        self._out.emit(SendSetpoint(target, self._shaped(self._current(now), now)))
        self.clock.record_send(now)

    def _send_extra(self, target: Target, now: float) -> None:
        self._send(target, now)
        self._last_extra_s = now

    def _extra_turn_s(self) -> float:
        return self._last_extra_s + self.clock.period_s

    # -- a planned motion ----------------------------------------------------------------

    def _replace(self, new: Setpoint | Motion, now: float) -> None:
        what = new.kind if isinstance(new, Motion) else f"a {new.kind.value} setpoint"
        # A motion's first setpoint before anything is replaced: if it cannot give one, it
        # raises here and the stream goes on with what it had, never with a motion it cannot fly.
        first = new.setpoint_at(now) if isinstance(new, Motion) else new
        self.abort_motion(Reason.REPLACED, f"replaced by {what}")
        self.motion = new if isinstance(new, Motion) else None
        self.rests_on = None
        self.setpoint = first
        self._guard.new_setpoint()

    def _current(self, now: float) -> Setpoint:
        motion = self.motion
        if motion is not None:
            motion.follow(now, self._vehicle.local_position_now_ned(now))
            self.setpoint = motion.setpoint_at(now)
            self._tell_waiting(motion, now)
        assert self.setpoint is not None
        return self.setpoint

    def _tell_waiting(self, motion: Motion, now: float) -> None:
        """Once a motion has waited WAITING_NOTICE_S for a vehicle that trails it: say so
        (a stalled clock with no word looks like a hung motion)."""
        clock = motion.clock
        if (motion.waiting_told or motion.internal or clock.lead_m is None
                or clock.waiting_s(now) < WAITING_NOTICE_S):
            return
        motion.waiting_told = True
        self._out.notice(
            NoticeKind.WARNING,
            f"{motion.kind} waits for the vehicle: it trails the planned point by "
            f"{clock.lead_m:.1f} m (PX4 follows slower than planned: its take-off ramp, its "
            "own speed limits, wind, or a place it cannot reach)",
            Reason.VEHICLE_TRAILING, command_id=motion.command_id)

    def begin_motion(self, now: float) -> None:
        """Start the motion's clock (the engine calls this once the vehicle is ours)."""
        if self.motion is not None:
            self.motion.begin(now)

    def finish_motion(self, now: float) -> None:
        """A motion at its end: MOTION_DONE; the stream rests on its last setpoint."""
        motion = self.motion
        if motion is not None and motion.done(now):
            self.setpoint = motion.setpoint_at(now)
            self.motion, self.rests_on = None, motion
            if not motion.internal:
                self._out.notice(NoticeKind.MOTION_DONE, f"{motion.kind} done", None,
                                 command_id=motion.command_id)

    def abort_motion(self, reason: Reason, message: str) -> Motion | None:
        """End the running motion early (MOTION_ABORTED, with why); it is returned."""
        motion, self.motion = self.motion, None
        if motion is not None and not motion.internal:
            self._out.notice(NoticeKind.MOTION_ABORTED, f"{motion.kind} aborted: {message}",
                             reason, command_id=motion.command_id)
        return motion

    def deadline(self) -> float:
        """The next scheduled send, or a deferred new setpoint's turn if sooner (math.inf
        when not streaming)."""
        scheduled = self.clock.next_deadline()
        return min(scheduled, self._extra_turn_s()) if self._deferred else scheduled

    def steady_gap_s(self, now: float) -> float:
        """The worst gap between sends since the last restart of the window (an open
        one included): was the stream steady lately?"""
        return self.clock.window_gap_s(now)

    def restart_window(self, now: float) -> None:
        self.clock.reset_window(now)

    def stop(self) -> None:
        """Stop streaming; a running motion is reported aborted by `report_stopped`, once
        the engine knows why (the phase move that follows)."""
        if self.motion is not None:
            self._stopped_motion, self.motion = self.motion, None
        self.clock.stop()
        self.setpoint = None
        self.rests_on = None
        self._deferred = False

    def report_stopped(self, reason: Reason | None, message: str) -> None:
        motion, self._stopped_motion = self._stopped_motion, None
        if motion is not None:
            self.motion = motion
            self.abort_motion(reason or Reason.CANCELLED, message)

    def _shaped(self, setpoint: Setpoint, now: float) -> Setpoint:
        motion = self.motion
        checked = motion is not None and motion.fence_checked
        return self._guard.shape(setpoint, self._vehicle, now, path_checked=checked)
