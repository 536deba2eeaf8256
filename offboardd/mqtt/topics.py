"""Every MQTT topic offboardd uses, in one place, under one per-vehicle prefix.

Layout (prefix `offboardd/<vehicle_id>/` by default):

    cmd                 in   commands, QoS 1; the command name is in the payload ("cmd")
    setpoint            in   high-rate setpoints, QoS 0 (a lost one is replaced by the next)
    reply               out  default reply topic (MQTT 5 clients may name their own;
                             offboardd.client uses reply/<client_id>)
    state               out  retained daemon/vehicle state, QoS 1
    availability        out  retained `online` / `offline`, also the last will (Home Assistant)
    telemetry/<kind>    out  position, velocity, attitude, battery, gps, home; QoS 0
    events              out  transitions, failsafes, FC STATUSTEXT; QoS 1, not retained
    mavlink/<MSGNAME>   out  optional relay of chosen MAVLink messages as JSON; QoS 0

One `cmd` topic (rather than `cmd/<name>`) keeps a command a single self-describing JSON
document, which is what gets logged, replied to and replayed in tests. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PREFIX_ROOT = "offboardd"

TELEMETRY_KINDS: frozenset[str] = frozenset(
    {"position", "velocity", "attitude", "battery", "gps", "home"}
)

# What a vehicle id may contain: it becomes one topic level, so no "/" "+" "#" and no
# leading "$" (brokers reserve $-topics). Kept to a conservative, shell-friendly set.
_VEHICLE_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# MAVLink message names are upper-case identifiers (e.g. EFI_STATUS, ESC_STATUS).
_MAVLINK_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")

AVAILABILITY_ONLINE = "online"
AVAILABILITY_OFFLINE = "offline"


def valid_vehicle_id(vehicle_id: str) -> bool:
    return bool(_VEHICLE_ID_RE.match(vehicle_id))


def valid_publish_topic(topic: str) -> bool:
    """A topic one may publish to: non-empty, no wildcards, no NUL (MQTT 3.1.1 §4.7)."""
    return bool(topic) and not any(c in topic for c in "+#\x00") and len(topic) <= 65535


@dataclass(frozen=True)
class Topics:
    """The topic names for one vehicle; build with `Topics.for_vehicle(...)`."""

    prefix: str  # always ends with "/"

    @classmethod
    def for_vehicle(cls, vehicle_id: str, root: str = DEFAULT_PREFIX_ROOT) -> Topics:
        if not valid_vehicle_id(vehicle_id):
            raise ValueError(
                f"vehicle_id {vehicle_id!r} must be 1-64 characters of A-Z a-z 0-9 _ . -"
            )
        root = root.strip("/")
        if not root or not valid_publish_topic(root):
            raise ValueError(f"topic root {root!r} must be non-empty and hold no wildcards")
        return cls(prefix=f"{root}/{vehicle_id}/")

    @property
    def cmd(self) -> str:
        return self.prefix + "cmd"

    @property
    def setpoint(self) -> str:
        return self.prefix + "setpoint"

    @property
    def reply(self) -> str:
        return self.prefix + "reply"

    def reply_inbox(self, client_id: str) -> str:
        """A client's private reply topic (its MQTT 5 response topic): `reply/<client_id>`."""
        if not valid_vehicle_id(client_id):
            raise ValueError(f"client id {client_id!r} cannot be a topic level")
        return f"{self.prefix}reply/{client_id}"

    @property
    def state(self) -> str:
        return self.prefix + "state"

    @property
    def availability(self) -> str:
        return self.prefix + "availability"

    @property
    def events(self) -> str:
        return self.prefix + "events"

    def telemetry(self, kind: str) -> str:
        if kind not in TELEMETRY_KINDS:
            raise ValueError(f"unknown telemetry kind {kind!r}; one of {sorted(TELEMETRY_KINDS)}")
        return f"{self.prefix}telemetry/{kind}"

    @property
    def telemetry_all(self) -> str:
        """Subscription filter for every telemetry kind."""
        return self.prefix + "telemetry/+"

    def mavlink(self, message_name: str) -> str:
        if not _MAVLINK_NAME_RE.match(message_name):
            raise ValueError(f"{message_name!r} is not a MAVLink message name (e.g. EFI_STATUS)")
        return f"{self.prefix}mavlink/{message_name}"

    @property
    def mavlink_all(self) -> str:
        return self.prefix + "mavlink/+"

    @property
    def everything(self) -> str:
        """Subscription filter for every topic of this vehicle (used by `ctl watch`)."""
        return self.prefix + "#"
