"""How many MQTT commands one commander may send: a token bucket per commander, so that a
careless or hostile client cannot turn a flood of commands into work for the engine and
traffic on the FC link (issue 15: 20,000 `hold`s in 0.25 s). Over the rate a command is
refused with `rate_limited`; the refusals are themselves limited (one per `refusal_gap_s`
per commander), so a flood is not answered by a flood.

A commander is its reply route: MQTT 5 clients name their own response topic; clients
without one share the default reply topic. Each route has three buckets (`Lane`): the
high-rate `setpoint` topic's, the commands', and one for the commands that hand the
vehicle back or stop it, so that a flood of anything else from the same route (every
MQTT 3.1.1 client shares one) can never get a `land` refused (found by review: one in
three was). The inbound gate keeps a fourth (`REFUSED`) for the answers to what it
refuses before any bucket sees it (malformed JSON...): each one was a parse, a WARNING
line and a reply, and 50,000 of them in a burst flooded the journal. Pure: `now` comes in.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Lane(enum.Enum):
    SETPOINT = "setpoint"  # the setpoint topic
    CMD = "cmd"  # commands, heartbeats, setpoints sent on cmd
    SAFETY = "safety"  # hold, land, rtl, release, emergency_stop
    REFUSED = "refused"  # what the gate refuses (malformed, retained, stale): its answers


SAFETY_KINDS = frozenset({"hold", "land", "rtl", "release", "emergency_stop"})
CommanderKey = tuple[str, Lane]  # (reply topic, lane)


def lane_of(kind: str, *, on_setpoint_topic: bool) -> Lane:
    if kind in SAFETY_KINDS:
        return Lane.SAFETY
    return Lane.SETPOINT if on_setpoint_topic else Lane.CMD


class Admit(enum.Enum):
    ACCEPT = "accept"
    REFUSE = "refuse"  # over the rate: answer rate_limited
    DROP = "drop"  # over the rate, and refused too recently to say so again


@dataclass
class _Bucket:
    tokens: float
    stamp_s: float
    last_refusal_s: float = -1e18


@dataclass(frozen=True)
class RateSettings:
    # A commander renews its lease 4 times a second and sends a few commands: 20/s is
    # plenty; a mission script may stream setpoints at 50 Hz on the setpoint topic.
    cmd_rate_hz: float = 20.0
    cmd_burst: int = 40
    setpoint_rate_hz: float = 100.0
    setpoint_burst: int = 100
    refusal_gap_s: float = 0.25
    max_commanders: int = 256  # buckets kept (a route has up to 4); the least recent forgotten


# Every reply route at once: four commanders' worth, so that a fresh response topic per
# message does not multiply the rate (the runtime's commands, the gate's refusal answers).
ALL_ROUTES = "*"
ALL_ROUTES_RATES = RateSettings(cmd_rate_hz=80.0, cmd_burst=160, setpoint_rate_hz=400.0,
                                setpoint_burst=400)


class CommanderRates:
    def __init__(self, settings: RateSettings | None = None) -> None:
        self.settings = settings or RateSettings()
        self._buckets: dict[CommanderKey, _Bucket] = {}
        self.refused = 0
        self.dropped = 0

    def admit(self, key: CommanderKey, now: float) -> Admit:
        s = self.settings
        rate, burst = ((s.setpoint_rate_hz, s.setpoint_burst) if key[1] is Lane.SETPOINT
                       else (s.cmd_rate_hz, s.cmd_burst))
        bucket = self._buckets.pop(key, None)  # and put back last: the least recent goes
        if bucket is None:
            if len(self._buckets) >= s.max_commanders:
                self._buckets.pop(next(iter(self._buckets)))
            bucket = _Bucket(float(burst), now)
        self._buckets[key] = bucket
        bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.stamp_s) * rate)
        bucket.stamp_s = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return Admit.ACCEPT
        if now - bucket.last_refusal_s >= s.refusal_gap_s:
            bucket.last_refusal_s = now
            self.refused += 1
            return Admit.REFUSE
        self.dropped += 1
        return Admit.DROP
