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


def _num(value: float, scale: float = 1.0, unknown: float | None = None) -> float | None:
    if unknown is not None and value == unknown:
        return None
    scaled = float(value) * scale
    return scaled if math.isfinite(scaled) else None


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

    def forget_local_position(self) -> None:
        """PX4 stops LOCAL_POSITION_NED when the estimate goes bad: stop reporting it too."""
        self._latest.pop("LOCAL_POSITION_NED", None)

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
                lat_deg=glob.lat * 1e-7,
                lon_deg=glob.lon * 1e-7,
                alt_amsl_m=glob.alt * 1e-3,
                alt_rel_m=glob.relative_alt * 1e-3,
                heading_deg=_num(glob.hdg, 0.01, unknown=65535),
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
            "north_m_s": glob.vx * 0.01, "east_m_s": glob.vy * 0.01,
            "down_m_s": glob.vz * 0.01, "frame": "global",
        }

    def _attitude(self) -> Document | None:
        att = self._latest.get("ATTITUDE")
        if att is None:
            return None
        return {
            "roll_rad": _num(att.roll), "pitch_rad": _num(att.pitch), "yaw_rad": _num(att.yaw),
            "roll_rate_rad_s": _num(att.rollspeed), "pitch_rate_rad_s": _num(att.pitchspeed),
            "yaw_rate_rad_s": _num(att.yawspeed),
        }

    def _battery(self) -> Document | None:
        bat, sys_status = self._latest.get("BATTERY_STATUS"), self._latest.get("SYS_STATUS")
        if bat is not None:
            cells = [v for v in bat.voltages if v not in (65535, 0)]
            return {
                "voltage_v": sum(cells) * 1e-3 if cells else None,
                "current_a": _num(bat.current_battery, 0.01, unknown=-1),
                "remaining_pct": None if bat.battery_remaining < 0 else bat.battery_remaining,
            }
        if sys_status is None:
            return None
        return {
            "voltage_v": _num(sys_status.voltage_battery, 1e-3, unknown=65535),
            "current_a": _num(sys_status.current_battery, 0.01, unknown=-1),
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
            "lat_deg": gps.lat * 1e-7, "lon_deg": gps.lon * 1e-7, "alt_amsl_m": gps.alt * 1e-3,
            "eph_m": _num(gps.eph, 0.01, unknown=65535),
            "epv_m": _num(gps.epv, 0.01, unknown=65535),
        }

    def _home(self) -> Document | None:
        home = self._latest.get("HOME_POSITION")
        if home is None:
            return None
        return {
            "lat_deg": home.latitude * 1e-7, "lon_deg": home.longitude * 1e-7,
            "alt_amsl_m": home.altitude * 1e-3,
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
