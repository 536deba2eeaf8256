"""The commander lease: a deadline, and the commander it belongs to.

When it lapses the commander is presumed gone (hung app, lost network) and the engine
must stop flying its last setpoint (px4-offboard.md §6: MAVSDK's top complaint). Only
its holder renews it, and only its holder flies: the commander (MQTT reply route) that
engaged, or that took control quoting the engine's token (resumed from HOLDING, took
over from another commander). A heartbeat from anyone else kept a dead commander's
setpoint flying once, and so did a dead commander's late backlog (found by review). Pure.
"""

from __future__ import annotations

import math

# The holder of a lease kept for a motion that finishes unleased: nobody (no commander's
# route ever equals it), so no one renews it; a live commander takes it with the token.
UNHELD = "\0unheld"


class Lease:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._expires_s: float | None = None
        self.holder: str | None = None  # who renews it (None: a caller that names no one)

    @property
    def held(self) -> bool:
        return self._expires_s is not None

    def grant(self, now: float, holder: str | None = None) -> None:
        """Start (or renew) the lease from `now`, for `holder`."""
        self._expires_s = now + self.timeout_s
        self.holder = holder

    def pass_to(self, who: str | None) -> None:
        """A held lease goes to `who` (it took control with the token); none is created."""
        if self._expires_s is not None:
            self.holder = who

    def holds(self, who: str | None) -> bool:
        return self._expires_s is not None and who == self.holder

    def grant_until(self, until_s: float) -> None:
        """Kept until `until_s` for nobody (a motion allowed to finish unleased,
        engine_motion): its lapsed holder renews nothing any more."""
        self._expires_s = until_s
        self.holder = UNHELD

    def renew(self, now: float, who: str | None = None) -> None:
        """Renew only a lease that is held, and only for its holder: a command never
        creates one by itself."""
        if self.holds(who):
            self._expires_s = now + self.timeout_s

    def end(self) -> None:
        self._expires_s = None

    def lapsed(self, now: float) -> bool:
        return self._expires_s is not None and now >= self._expires_s

    def deadline(self) -> float:
        return math.inf if self._expires_s is None else self._expires_s

    def remaining_s(self, now: float) -> float | None:
        return None if self._expires_s is None else max(0.0, self._expires_s - now)
