"""The setpoint stream part: what we stream, when, and its envelope shaping.

Holds the commanded setpoint and the absolute-deadline clock (stream.StreamClock), and
sends each tick what the envelope lets through for it (EnvelopeGuard.shape), reporting
the first shaping per commanded setpoint, not every tick. The engine starts, replaces
and stops it; the stream never decides when, and never touches the lease or the phase.

A new setpoint goes out at once, but at most one such extra send per stream period: the
next tick carries the newest anyway, and a flood of setpoint commands (thousands a
second) must not become a flood of frames on a 57,600-baud link (issue 15).

Owns: the setpoint, the StreamClock. Must not: judge commands, move phases, or send
without a target (no FC heard: nothing goes out).
"""

from __future__ import annotations

import math

from offboardd.core.actions import SendSetpoint, Target
from offboardd.core.engine_fence import EnvelopeGuard
from offboardd.core.engine_outbox import Outbox
from offboardd.core.setpoints import Setpoint
from offboardd.core.stream import StreamClock
from offboardd.core.vehicle import VehicleState


class SetpointStream:
    def __init__(
        self, period_s: float, guard: EnvelopeGuard, vehicle: VehicleState, out: Outbox
    ) -> None:
        self.clock = StreamClock(period_s)
        self.setpoint: Setpoint | None = None  # as commanded (after the envelope's admission)
        self._guard = guard
        self._vehicle = vehicle
        self._out = out
        self._last_extra_s = -math.inf  # the last send_now that went out

    @property
    def running(self) -> bool:
        return self.clock.running

    def start(self, setpoint: Setpoint, target: Target, now: float) -> None:
        """A fresh schedule from `now`, the first setpoint sent at once."""
        self.setpoint = setpoint
        self._guard.new_setpoint()
        self.clock.start(now)
        self._out.emit(SendSetpoint(target, self._shaped(setpoint, now)))

    def send_now(self, setpoint: Setpoint, target: Target | None, now: float) -> None:
        """Replace the setpoint and send it at once (unless an extra send already went out
        this period: then the next tick carries it); the schedule carries on unchanged."""
        self.setpoint = setpoint
        self._guard.new_setpoint()
        if (target is not None and self.clock.running
                and now - self._last_extra_s >= self.clock.period_s):
            self._out.emit(SendSetpoint(target, self._shaped(setpoint, now)))
            self.clock.record_send(now)
            self._last_extra_s = now

    def tick(self, target: Target | None, now: float) -> None:
        """The scheduled send, if one is due (one send however late: no burst)."""
        if self.clock.tick_due(now) and self.setpoint is not None and target is not None:
            self._out.emit(SendSetpoint(target, self._shaped(self.setpoint, now)))
            self.clock.record_send(now)

    def deadline(self) -> float:
        """The next scheduled send (math.inf when not streaming)."""
        return self.clock.next_deadline()

    def steady_gap_s(self, now: float) -> float:
        """The worst gap between sends since the last restart of the window (an open
        one included): was the stream steady lately?"""
        return self.clock.window_gap_s(now)

    def restart_window(self, now: float) -> None:
        self.clock.reset_window(now)

    def stop(self) -> None:
        self.clock.stop()
        self.setpoint = None

    def _shaped(self, setpoint: Setpoint, now: float) -> Setpoint:
        return self._guard.shape(setpoint, self._vehicle, now)
