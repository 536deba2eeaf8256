"""The commander lease: a deadline, and the commander it belongs to.

When it lapses the commander is presumed gone (hung app, lost network) and the engine
must stop flying its last setpoint (px4-offboard.md §6: MAVSDK's top complaint). Only
its holder renews it: the commander (MQTT reply route) that engaged or last sent what is
flown (a setpoint, a motion). A heartbeat from anyone else kept a dead commander's
setpoint flying once (found by review). Pure.
"""

from __future__ import annotations

import math

# Commanders remembered as gone after their lease lapsed (the oldest forgotten first).
_GONE_KEPT = 64


class Lease:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._expires_s: float | None = None
        self.holder: str | None = None  # who renews it (None: a caller that names no one)
        # Holders whose lease lapsed: presumed dead until they prove otherwise (a hold's
        # resume token, an engage). What a stalled network delivers from them later must
        # not fly, nor take the lease from a commander that resumed (found by review).
        self._gone: dict[str, None] = {}

    @property
    def held(self) -> bool:
        return self._expires_s is not None

    def grant(self, now: float, holder: str | None = None) -> None:
        """Start (or renew) the lease from `now`, for `holder`."""
        self._expires_s = now + self.timeout_s
        self.holder = holder

    def pass_to(self, who: str | None) -> None:
        """A held lease goes to `who` (it sent what is flown now); none is created."""
        if self._expires_s is not None:
            self.holder = who

    def holds(self, who: str | None) -> bool:
        return self._expires_s is not None and who == self.holder

    def grant_until(self, until_s: float) -> None:
        """Held until `until_s` (a motion allowed to finish unleased, engine_motion)."""
        self._expires_s = until_s

    def renew(self, now: float, who: str | None = None) -> None:
        """Renew only a lease that is held, and only for its holder: a command never
        creates one by itself."""
        if self.holds(who):
            self._expires_s = now + self.timeout_s

    def end(self) -> None:
        self._expires_s = None

    def lapse(self) -> None:
        """It lapsed: ended, and its holder remembered as gone."""
        self._expires_s = None
        if self.holder is not None:
            self._gone.pop(self.holder, None)
            self._gone[self.holder] = None
            if len(self._gone) > _GONE_KEPT:
                del self._gone[next(iter(self._gone))]

    def gone(self, who: str | None) -> bool:
        """Did `who`'s lease lapse, with no sign of life from it since?"""
        return who is not None and who in self._gone

    def back(self, who: str | None) -> None:
        """`who` proved it is alive (quoted a hold's token, engaged)."""
        if who is not None:
            self._gone.pop(who, None)

    def lapsed(self, now: float) -> bool:
        return self._expires_s is not None and now >= self._expires_s

    def deadline(self) -> float:
        return math.inf if self._expires_s is None else self._expires_s

    def remaining_s(self, now: float) -> float | None:
        return None if self._expires_s is None else max(0.0, self._expires_s - now)
