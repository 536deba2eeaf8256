"""Bounded attempts with a confirm timeout and a back-off after a refusal.

Used for every request whose success the FC reports later (a mode, arming): the engine
says when the FC refused or accepted, this says when to try again and when to give up.
An attempt the FC accepted is never sent again: PX4 acts on what it accepts at once, so
a report to the contrary after it is someone else's choice (a disarm, a mode), which a
second request would undo. Pure.
"""

from __future__ import annotations

import math
from enum import Enum

# After ACCEPTED, how long the report is awaited at least: PX4's armed flag lags the ACK
# by ~0.55 s, and without CURRENT_MODE (PX4 v1.14, builds without the development dialect)
# only the 1 Hz HEARTBEAT reports a mode: one of them lost must not fail the engage, where
# asking again used to cover it (found by review).
ACCEPTED_REPORT_WAIT_S = 2.6


class RetryStep(Enum):
    SEND = "send"  # send the request (again) now
    EXHAUSTED = "exhausted"  # the last attempt failed: give up


class Retrier:
    def __init__(self, retries: int, confirm_timeout_s: float, backoff_s: float) -> None:
        self.max_attempts = 1 + retries
        self.confirm_timeout_s = confirm_timeout_s
        self.backoff_s = backoff_s
        self.attempts = 0
        self.refusals = 0
        self.last_refused = False  # did the last failed attempt fail by refusal (or timeout)?
        self.accepted_s: float | None = None  # when the FC accepted the attempt in flight
        self.sent_s: float | None = None  # when the last attempt went out
        self._send_at: float | None = None
        self._confirm_by: float | None = None

    def begin(self, now: float) -> None:
        """Ask for the first attempt at `now` (`poll(now)` then says SEND)."""
        self.attempts = 0
        self.refusals = 0
        self.last_refused = False
        self.accepted_s = self.sent_s = None
        self._send_at, self._confirm_by = now, None

    def refused(self, now: float) -> None:
        """The FC refused the attempt in flight: try again after the back-off. A second
        refusal of the same attempt (PX4 v1.16 answers DO_SET_MODE twice, §4) is ignored."""
        if self._confirm_by is None:
            return
        self.refusals += 1
        self.last_refused = True
        self.accepted_s = None  # (v1.16.2's second ACK: the last one counts, §4)
        self._confirm_by = None
        last = self.attempts >= self.max_attempts
        self._send_at = now if last else now + self.backoff_s

    def accepted(self, now: float) -> None:
        """The FC accepted the attempt in flight: it is not sent again. Its report is
        awaited for a confirm timeout from now, ACCEPTED_REPORT_WAIT_S at least; without
        one, the attempts are spent."""
        if self._confirm_by is None:
            return
        self.accepted_s = now
        self._confirm_by = now + max(self.confirm_timeout_s, ACCEPTED_REPORT_WAIT_S)

    def accepted_for(self, now: float, settle_s: float) -> bool:
        """Did the FC accept the attempt in flight `settle_s` or more before `now`?"""
        return self.accepted_s is not None and now >= self.accepted_s + settle_s

    def poll(self, now: float) -> RetryStep | None:
        if self._confirm_by is not None and now >= self._confirm_by:
            self._confirm_by = None
            self.last_refused = False
            if self.accepted_s is not None:  # accepted, never reported: not asked again
                return RetryStep.EXHAUSTED
            self._send_at = now  # timed out: the next attempt goes at once
        if self._send_at is not None and now >= self._send_at:
            if self.attempts >= self.max_attempts:
                self._send_at = None
                return RetryStep.EXHAUSTED
            self.attempts += 1
            self._send_at = None
            self.sent_s = now
            self._confirm_by = now + self.confirm_timeout_s
            return RetryStep.SEND
        return None

    def deadline(self) -> float:
        times = [t for t in (self._send_at, self._confirm_by) if t is not None]
        return min(times) if times else math.inf
