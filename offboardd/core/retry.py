"""Bounded attempts with a confirm timeout and a back-off after a refusal.

Used for every request whose success the FC reports later (a mode, arming): the engine
says when the FC refused, this says when to try again and when to give up. Pure.
"""

from __future__ import annotations

import math
from enum import Enum


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
        self._send_at: float | None = None
        self._confirm_by: float | None = None

    def begin(self, now: float) -> None:
        """Ask for the first attempt at `now` (`poll(now)` then says SEND)."""
        self.attempts = 0
        self.refusals = 0
        self.last_refused = False
        self._send_at, self._confirm_by = now, None

    def refused(self, now: float) -> None:
        """The FC refused the attempt in flight: try again after the back-off. A second
        refusal of the same attempt (PX4 v1.16 answers DO_SET_MODE twice, §4) is ignored."""
        if self._confirm_by is None:
            return
        self.refusals += 1
        self.last_refused = True
        self._confirm_by = None
        last = self.attempts >= self.max_attempts
        self._send_at = now if last else now + self.backoff_s

    def poll(self, now: float) -> RetryStep | None:
        if self._confirm_by is not None and now >= self._confirm_by:
            self._confirm_by = None
            self.last_refused = False
            self._send_at = now  # timed out: the next attempt goes at once
        if self._send_at is not None and now >= self._send_at:
            if self.attempts >= self.max_attempts:
                self._send_at = None
                return RetryStep.EXHAUSTED
            self.attempts += 1
            self._send_at = None
            self._confirm_by = now + self.confirm_timeout_s
            return RetryStep.SEND
        return None

    def deadline(self) -> float:
        times = [t for t in (self._send_at, self._confirm_by) if t is not None]
        return min(times) if times else math.inf
