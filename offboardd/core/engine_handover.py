"""The hand-over part: asking the FC for a mode other than OFFBOARD, escalating on refusal.

Release, hold / land / rtl, the commander-loss action and the fence's breach action all
hand the vehicle to a PX4 mode the same way: ask for the chain's first mode with bounded
retries, step to the next one when the FC refuses (hold -> land, settings.ESCALATION),
keep streaming (if we were) until the FC reports the mode, so PX4 never sees an offboard
loss meanwhile. `report` and `poll` say what happened; the engine asks the table what
it means.

Owns: the hand-over in progress (at most one). Must not: stream, reply or move phases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Reason
from offboardd.core.retry import Retrier, RetryStep
from offboardd.core.settings import EngineSettings
from offboardd.core.vehicle import VehicleState

MAX_JOINED = 16  # repeats kept to answer with a hand-over's outcome


@dataclass
class Handover:
    """Asking the FC for a mode other than OFFBOARD, escalating along `chain` on refusal."""

    chain: tuple[Px4Mode, ...]
    retrier: Retrier
    streaming: bool  # keep the stream alive until the FC reports the mode
    reason: Reason  # what the move recorded; the success keeps it
    failsafe: bool  # a failsafe's (loss action, fence breach), not an operator command's
    # Asked while the vehicle was taken (a failsafe's, one after the lease lapsed, a plain
    # request from failsafe or preempted, the end of an engage made from there, or
    # superseding one of these: engine_failsafe.start_handover): a request superseding it
    # quotes the token, and its success leaves the vehicle taken.
    taken: bool
    command_id: str | None
    start_custom_mode: int | None  # the mode when we started: not a takeover if it stays
    index: int = 0
    joined: list[str] = field(default_factory=list)  # repeats, answered with this one
    # A HEARTBEAT or CURRENT_MODE came since it began. Before that, the mode the vehicle
    # is known in is the one it had before our request: from ENGAGING, its mode at the
    # engage, while PX4 may be in OFFBOARD unseen. Taken for "reached" when it was the
    # mode asked for, it stopped the stream at once (a release while ENGAGING, from Hold).
    heard: bool = False

    @property
    def command_ids(self) -> list[str]:
        """Every command waiting for this hand-over's outcome."""
        return ([] if self.command_id is None else [self.command_id]) + self.joined

    @property
    def target_mode(self) -> Px4Mode:
        return self.chain[self.index]


class Step(Enum):
    REACHED = "reached"  # the FC reports the mode asked for
    TAKEN = "taken"  # the FC reports a mode nobody asked for
    SEND = "send"  # ask (again) now
    REFUSED = "refused"  # this mode's attempts are spent; a fallback is left
    EXHAUSTED = "exhausted"  # ... and none is left


class Handovers:
    def __init__(self, settings: EngineSettings) -> None:
        self._settings = settings
        self.current: Handover | None = None

    @property
    def failsafe(self) -> bool:
        return self.current is not None and self.current.failsafe

    @property
    def taken(self) -> bool:
        return self.current is not None and self.current.taken

    def start(
        self,
        chain: tuple[Px4Mode, ...],
        command_id: str | None,
        reason: Reason,
        *,
        failsafe: bool,
        taken: bool,
        streaming: bool,
        start_custom_mode: int | None,
        now: float,
    ) -> None:
        if not streaming:
            # Not flying it ourselves: ask for exactly the mode requested, no escalation.
            chain = chain[:1]
        retrier = self._retrier()
        retrier.begin(now)
        self.current = Handover(
            chain, retrier, streaming, reason, failsafe, taken, command_id, start_custom_mode
        )

    def join(self, command_id: str) -> bool:
        """A repeat of the pending request: answered with it; nothing new to the FC. False
        when MAX_JOINED wait already: a flood of repeats (from other commanders too) once
        grew the list without bound, and answered all at once it pushed the operator's own
        reply out of the reply queue (found by review)."""
        assert self.current is not None
        if len(self.current.joined) >= MAX_JOINED:
            return False
        self.current.joined.append(command_id)
        return True

    def _retrier(self) -> Retrier:
        s = self._settings
        return Retrier(s.mode_retries, s.mode_confirm_timeout_s, s.retry_backoff_s)

    def report(self, vehicle: VehicleState, *, fresh: bool = False) -> Step | None:
        """What the FC's mode means for the hand-over: REACHED, TAKEN (a mode nobody
        asked for: whether that matters is the table's call), or nothing yet. `fresh`: a
        mode report just came; REACHED needs one since the hand-over began."""
        h = self.current
        if h is None:
            return None
        h.heard = h.heard or fresh
        reported = vehicle.mode  # the target, or an earlier ask honoured late
        if (h.heard and reported is not None
                and any(reported.honours(m) for m in h.chain[: h.index + 1])):
            return Step.REACHED
        # Any other mode is somebody else's choice, a later mode of the chain too (a GCS
        # pressing Land while we ask for Hold): asking on would pull the vehicle out of it.
        allowed = {h.start_custom_mode, Px4Mode.OFFBOARD.custom_mode}
        if vehicle.custom_mode is not None and vehicle.custom_mode not in allowed:
            return Step.TAKEN
        return None

    def poll(self, now: float) -> Step | None:
        """The retrier's turn: SEND, REFUSED (a fallback is left), EXHAUSTED, or nothing."""
        h = self.current
        if h is None:
            return None
        step = h.retrier.poll(now)
        if step is RetryStep.SEND:
            return Step.SEND
        if step is RetryStep.EXHAUSTED:
            return Step.REFUSED if h.index + 1 < len(h.chain) else Step.EXHAUSTED
        return None

    def escalate(self, now: float) -> Px4Mode:
        """On to the next mode of the chain (after Step.REFUSED); returns the refused one."""
        h = self.current
        assert h is not None
        refused = h.target_mode
        h.index += 1
        h.retrier = self._retrier()
        h.retrier.begin(now)
        return refused

    def refused(self, now: float) -> None:
        """An ACK refused the mode: the retrier backs off."""
        if self.current is not None:
            self.current.retrier.refused(now)

    def take(self) -> Handover | None:
        """End the hand-over (done, failed or cancelled); the caller answers its command."""
        h, self.current = self.current, None
        return h

    def deadline(self) -> float:
        return math.inf if self.current is None else self.current.retrier.deadline()
