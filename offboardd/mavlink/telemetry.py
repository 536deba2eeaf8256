"""FC telemetry messages -> JSON-friendly documents for the MQTT telemetry topics.

The cache keeps only the newest message of each type (a reference, no copy), and builds a
document only when the runtime asks for one at its publishing rate: PX4 sends ATTITUDE at
100/s on the onboard link, and converting each one would be wasted work. Pure: no I/O.
Units are in every key; NaN/Inf (PX4's "unknown") become None so the JSON stays valid.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from offboardd.mavlink.codec import Message
from offboardd.mavlink.codec import slim_dialect as dialect

Document = dict[str, Any]

# Message types each telemetry kind is built from.
SOURCES: dict[str, tuple[str, ...]] = {
    "position": ("GLOBAL_POSITION_INT", "LOCAL_POSITION_NED"),
    "velocity": ("LOCAL_POSITION_NED", "GLOBAL_POSITION_INT"),
    "attitude": ("ATTITUDE",),
    "battery": ("BATTERY_STATUS", "SYS_STATUS"),
    "gps": ("GPS_RAW_INT",),
    "home": ("HOME_POSITION",),
}
WANTED_MESSAGE_IDS: frozenset[int] = frozenset(
    getattr(dialect, f"MAVLINK_MSG_ID_{name}") for names in SOURCES.values() for name in names
)


def decode_plan(
    rates_hz: Mapping[str, float],
    *,
    engine_ids: frozenset[int],
    engine_min_interval_s: Mapping[int, float],
    relay_ids: frozenset[int] = frozenset(),
) -> tuple[frozenset[int], dict[int, float]]:
    """What the daemon's codec decodes (`wanted_ids`) and how often at most (`min_interval_s`).

    The engine's messages are decoded at the engine's rates. A message only telemetry reads
    (SYS_STATUS, BATTERY_STATUS, GPS_RAW_INT: 5/s each from PX4) is decoded twice per
    publishing period of the fastest kind built from it, so each document is at most half
    a period old, and not at all when those kinds are off. Relayed messages are never
    thinned (the relay has its own rate)."""
    wanted = set(engine_ids | relay_ids)
    gaps_s = dict(engine_min_interval_s)
    for name in {name for names in SOURCES.values() for name in names}:
        msg_id: int = getattr(dialect, f"MAVLINK_MSG_ID_{name}")
        if msg_id in engine_ids:
            continue
        fastest_hz = max(rates_hz.get(kind, 0.0) for kind, names in SOURCES.items()
                         if name in names)
        if fastest_hz > 0:
            wanted.add(msg_id)
            gaps_s[msg_id] = 0.5 / fastest_hz
    for msg_id in relay_ids:
        gaps_s.pop(msg_id, None)
    return frozenset(wanted), gaps_s


# Telemetry carries what PX4's fields hold, not their binary noise: its float32 metres
# and m/s to the millimetre (5.251, not 5.250687599182129), radians to 0.0001 (0.006°),
# and integer fields divided to the shortest decimal they are (47.3977421, not
# 47.397742100000004): shorter JSON, and what a reader expects (found by review).
MM = 3
RAD = 4


def _num(value: float, scale: float = 1.0, unknown: float | None = None,
         digits: int = MM) -> float | None:
    if unknown is not None and value == unknown:
        return None
    scaled = float(value) * scale
    return round(scaled, digits) + 0.0 if math.isfinite(scaled) else None  # (-0.0 -> 0.0)


def _deg(value_e7: int) -> float:
    """A degE7 field in degrees (a division is rounded once: the shortest decimal)."""
    return value_e7 / 1e7


def _milli(value: int) -> float:
    return value / 1e3


class TelemetryCache:
    def __init__(self) -> None:
        self._latest: dict[str, Message] = {}
        self._builders: dict[str, Callable[[], Document | None]] = {
            "position": self._position,
            "velocity": self._velocity,
            "attitude": self._attitude,
            "battery": self._battery,
            "gps": self._gps,
            "home": self._home,
        }

    def update(self, msg: Message) -> None:
        self._latest[msg.get_type()] = msg

    def clear(self) -> None:
        """The FC is lost: what it last said is not telemetry any more."""
        self._latest.clear()

    def document(self, kind: str) -> Document | None:
        """The newest document for `kind`, or None when nothing has arrived for it yet."""
        return self._builders[kind]()

    def _position(self) -> Document | None:
        glob = self._latest.get("GLOBAL_POSITION_INT")
        local = self._latest.get("LOCAL_POSITION_NED")
        if glob is None and local is None:
            return None
        doc: Document = {}
        if glob is not None:
            doc.update(
                lat_deg=_deg(glob.lat),
                lon_deg=_deg(glob.lon),
                alt_amsl_m=_milli(glob.alt),
                alt_rel_m=_milli(glob.relative_alt),
                heading_deg=_num(glob.hdg, 0.01, unknown=65535, digits=2),
            )
        if local is not None:
            doc.update(
                north_m=_num(local.x), east_m=_num(local.y), down_m=_num(local.z),
            )
        return doc

    def _velocity(self) -> Document | None:
        local = self._latest.get("LOCAL_POSITION_NED")
        if local is not None:
            return {
                "north_m_s": _num(local.vx), "east_m_s": _num(local.vy),
                "down_m_s": _num(local.vz), "frame": "local_ned",
            }
        glob = self._latest.get("GLOBAL_POSITION_INT")
        if glob is None:
            return None
        return {
            "north_m_s": glob.vx / 100, "east_m_s": glob.vy / 100,
            "down_m_s": glob.vz / 100, "frame": "global",
        }

    def _attitude(self) -> Document | None:
        att = self._latest.get("ATTITUDE")
        if att is None:
            return None
        return {
            "roll_rad": _num(att.roll, digits=RAD), "pitch_rad": _num(att.pitch, digits=RAD),
            "yaw_rad": _num(att.yaw, digits=RAD),
            "roll_rate_rad_s": _num(att.rollspeed, digits=RAD),
            "pitch_rate_rad_s": _num(att.pitchspeed, digits=RAD),
            "yaw_rate_rad_s": _num(att.yawspeed, digits=RAD),
        }

    def _battery(self) -> Document | None:
        bat, sys_status = self._latest.get("BATTERY_STATUS"), self._latest.get("SYS_STATUS")
        if bat is not None:
            cells = [v for v in bat.voltages if v not in (65535, 0)]
            return {
                "voltage_v": _milli(sum(cells)) if cells else None,
                "current_a": _num(bat.current_battery, 0.01, unknown=-1, digits=2),
                "remaining_pct": None if bat.battery_remaining < 0 else bat.battery_remaining,
            }
        if sys_status is None:
            return None
        return {
            "voltage_v": _num(sys_status.voltage_battery, 1e-3, unknown=65535),
            "current_a": _num(sys_status.current_battery, 0.01, unknown=-1, digits=2),
            "remaining_pct": (
                None if sys_status.battery_remaining < 0 else sys_status.battery_remaining
            ),
        }

    def _gps(self) -> Document | None:
        gps = self._latest.get("GPS_RAW_INT")
        if gps is None:
            return None
        return {
            "fix_type": gps.fix_type,
            "satellites": None if gps.satellites_visible == 255 else gps.satellites_visible,
            "lat_deg": _deg(gps.lat), "lon_deg": _deg(gps.lon), "alt_amsl_m": _milli(gps.alt),
            "eph_m": _num(gps.eph, 0.01, unknown=65535, digits=2),
            "epv_m": _num(gps.epv, 0.01, unknown=65535, digits=2),
        }

    def _home(self) -> Document | None:
        home = self._latest.get("HOME_POSITION")
        if home is None:
            return None
        return {
            "lat_deg": _deg(home.latitude), "lon_deg": _deg(home.longitude),
            "alt_amsl_m": _milli(home.altitude),
            "north_m": _num(home.x), "east_m": _num(home.y), "down_m": _num(home.z),
        }


def message_document(msg: Message) -> Document:
    """Any decoded message as JSON-friendly fields (the optional MAVLink relay)."""
    doc: Document = {}
    for name in msg.get_fieldnames():
        value = getattr(msg, name)
        if isinstance(value, bytes | bytearray):
            value = value.decode("utf-8", errors="replace").rstrip("\0")
        elif isinstance(value, float) and not math.isfinite(value):
            value = None
        elif isinstance(value, list):
            value = [None if isinstance(v, float) and not math.isfinite(v) else v for v in value]
        doc[name] = value
    return doc
