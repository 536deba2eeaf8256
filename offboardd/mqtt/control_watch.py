"""Whether a commander still flies the vehicle: the client's side of issue 15.

After an engage succeeds, the commander holds control until it hands it back itself
(release / hold / land / rtl). Anything else that ends it, the client must hear of at
once, not 30 s later: the daemon refusing its heartbeat or setpoint with `not_in_control`;
a `state` showing a phase in which nobody flies it (a pilot or GCS took over, a failsafe,
the lease lapsed); a new daemon `run_id` (the daemon restarted: no control survives
that); `availability` going `offline`; the broker connection lost. `ControlWatch` folds
those into one `ControlLost` with the reason: raised by the client's next call and
delivered to whoever awaits `lost()`.

No MQTT here: the client feeds it what it reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, NamedTuple

from offboardd.mqtt.client_types import ClientError, Reply
from offboardd.mqtt.topics import AVAILABILITY_OFFLINE

# phases in which the daemon flies for the commander (core.reasons.STREAMING_PHASES) and
# the hand-over it started itself; anything else means control ended
_FLYING_PHASES = frozenset({"warmup", "engaging", "arming", "active"})


class ControlLost(ClientError):
    """This commander no longer flies the vehicle; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"control lost: {reason}")
        self.reason = reason


class WatchBefore(NamedTuple):
    """The watch before an engage, for a refusal to restore."""

    watching: bool
    lost: ControlLost | None
    reported: ControlLost | None


class ControlWatch:
    def __init__(self) -> None:
        self.on_lost: list[Callable[[ControlLost], None]] = []  # told when control is lost
        self.watching = False
        self.lost: ControlLost | None = None
        self._confirmed = False  # a state showed us flying since the engage
        self._run_id: str | None = None
        self._event = asyncio.Event()
        self._reported: ControlLost | None = None  # what `wait()` returns

    def engaging(self) -> WatchBefore:
        """An engage is sent: control is taken afresh, an earlier loss is behind us (and the
        lease loop must run through the warm-up). Returns what `refused` puts back."""
        before = WatchBefore(self.watching, self.lost, self._reported)
        self.watching = False
        self.lost = self._reported = None
        self._event.clear()
        return before

    def refused(self, before: WatchBefore) -> None:
        """The engage was refused: nothing changed. (Only `watching` was put back: after a
        takeover a refused engage cleared the loss, and the heartbeats it had stopped went
        out again, each refused not_in_control, until the script ended: found by the GNSS
        cut test.)"""
        self.watching, self.lost, self._reported = before
        if self._reported is not None:
            self._event.set()

    def engaged(self) -> None:
        """An engage succeeded: control is ours until we hand it back."""
        self.watching, self._confirmed, self._run_id = True, False, None
        self.lost = self._reported = None
        self._event.clear()

    @property
    def ended(self) -> bool:
        """Control was lost since the last engage (reported or not)."""
        return self._reported is not None

    def handing_back(self) -> None:
        """We release it ourselves (release / hold / land / rtl / emergency stop)."""
        self.watching = False

    def take(self) -> ControlLost | None:
        """The loss not yet reported to a call, once: the next engage may start afresh."""
        lost, self.lost = self.lost, None
        return lost

    async def wait(self) -> ControlLost:
        """Until control is lost (for a script to race against its mission)."""
        await self._event.wait()
        assert self._reported is not None
        return self._reported

    def _lose(self, reason: str) -> None:
        if not self.watching:
            return
        self.watching = False
        self.lost = self._reported = ControlLost(reason)
        for listener in self.on_lost:
            listener(self._reported)
        self._event.set()

    def on_refusal(self, reply: Reply) -> None:
        if reply.code == "not_in_control":
            self._lose(reply.message or "not in control")

    def on_state(self, state: dict[str, Any]) -> None:
        if not self.watching:
            return
        run_id, phase = state.get("run_id"), state.get("phase")
        if self._run_id is None:
            self._run_id = run_id
        elif run_id is not None and run_id != self._run_id:
            self._lose("the daemon restarted (a new run_id)")
            return
        if phase in _FLYING_PHASES:
            self._confirmed = True  # states from before the engage no longer count
        elif self._confirmed:
            reason = state.get("reason") or "unknown"
            self._lose(f"phase {phase} ({reason})")

    def on_availability(self, payload: bytes) -> None:
        if payload.strip() == AVAILABILITY_OFFLINE.encode():
            self._lose("the daemon went offline")

    def on_broker_lost(self, why: str) -> None:
        self._lose(f"the broker connection was lost ({why})")

    def on_silence(self, age_s: float) -> None:
        """No `state` for `age_s` (the daemon publishes it every second): the network to
        the broker, or the broker, stalled without closing the connection (a silent drop
        went unreported for the MQTT keepalive's ~90 s: review)."""
        self._lose(f"no state from the daemon for {age_s:.1f} s (network or broker stalled)")
