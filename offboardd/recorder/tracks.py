"""A recorded flight as time series: flown (LOCAL_POSITION_NED), commanded (the local
setpoints the daemon sent), the FC's mode and arming, the daemon's phases and failsafes.

What `log plot` draws and `log export` writes, built from the tlog (both directions) and
the journal. Times are Unix seconds, stamped as each read of the link returned (two
messages read together share one); `t_s` columns count from the flight's start, and
`fc_boot_s` is PX4's own stamp of the position (its time_boot_ms): the column to
differentiate.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from offboardd.core.modes import mode_name
from offboardd.mavlink.codec import Message
from offboardd.recorder.store import Flight, read_journal, read_tlog

# The companion shares the vehicle's system id (component 191 by default): the FC is
# told apart by (system, component), as the flight's first journal line names it.
_PX4_DEFAULT_IDS = (1, 1)  # MAV_SYS_ID and the autopilot component, when it does not
_IGNORE_POSITION = 0b111  # SET_POSITION_TARGET_LOCAL_NED type_mask: x, y, z ignored
_IGNORE_VELOCITY = 0b111000
_NAN = math.nan
_MAV_AUTOPILOT_INVALID = 8  # a GCS or companion heartbeat
_MAV_MODE_FLAG_SAFETY_ARMED = 128


@dataclass(frozen=True)
class Flown:
    t: float
    north_m: float
    east_m: float
    down_m: float
    north_m_s: float
    east_m_s: float
    down_m_s: float
    fc_boot_s: float  # PX4's time_boot_ms of the sample

    @property
    def speed_m_s(self) -> float:
        return math.sqrt(self.north_m_s ** 2 + self.east_m_s ** 2 + self.down_m_s ** 2)


@dataclass(frozen=True)
class Commanded:
    """A local-frame setpoint sent; NaN where its type_mask ignores the field."""

    t: float
    north_m: float
    east_m: float
    down_m: float
    speed_m_s: float
    type_mask: int


@dataclass
class Tracks:
    start_t: float
    flown: list[Flown] = field(default_factory=list)
    commanded: list[Commanded] = field(default_factory=list)
    modes: list[tuple[float, str, bool]] = field(default_factory=list)  # (t, mode, armed)
    phases: list[tuple[float, str]] = field(default_factory=list)  # (t, phase) on change
    failsafes: list[tuple[float, str]] = field(default_factory=list)  # (t, message)


def load_tracks(flight: Flight) -> Tracks:
    tracks = Tracks(start_t=flight.summary.start_unix_s or 0.0)
    journal = list(read_journal(flight.folder))  # read once: for the FC's ids and below
    fc = _fc_ids(journal)
    last_mode: tuple[str, bool] | None = None
    for t, msg in read_tlog(flight.folder):
        kind, source = msg.get_type(), (msg.get_srcSystem(), msg.get_srcComponent())
        if kind == "LOCAL_POSITION_NED" and source == fc:
            tracks.flown.append(Flown(t, msg.x, msg.y, msg.z, msg.vx, msg.vy, msg.vz,
                                      msg.time_boot_ms / 1000.0))
        elif kind == "SET_POSITION_TARGET_LOCAL_NED" and source != fc:
            tracks.commanded.append(_commanded(t, msg))
        elif kind == "HEARTBEAT" and source == fc and msg.autopilot != _MAV_AUTOPILOT_INVALID:
            armed = bool(msg.base_mode & _MAV_MODE_FLAG_SAFETY_ARMED)
            mode = (mode_name(msg.custom_mode), armed)
            if mode != last_mode:
                tracks.modes.append((t, *mode))
                last_mode = mode
    for record in journal:
        stamp = record.get("t")
        if not isinstance(stamp, int | float):
            continue
        kind, notice = record.get("kind"), record.get("notice")
        if (kind, notice) == ("notice", "transition") or (
                kind == "flight" and record.get("event") == "start"):
            tracks.phases.append((float(stamp), str(record.get("phase"))))
        elif (kind, notice) == ("notice", "failsafe"):
            tracks.failsafes.append((float(stamp), str(record.get("message"))))
    if tracks.flown and not tracks.start_t:
        tracks.start_t = tracks.flown[0].t
    return tracks


def _fc_ids(journal: list[dict[str, Any]]) -> tuple[int, int]:
    for record in journal:
        ids = record.get("fc_system_id"), record.get("fc_component_id")
        if record.get("kind") == "flight" and all(isinstance(i, int) for i in ids):
            return int(ids[0] or 0), int(ids[1] or 0)
    return _PX4_DEFAULT_IDS


def _commanded(t: float, msg: Message) -> Commanded:
    mask = int(msg.type_mask)
    position = mask & _IGNORE_POSITION != _IGNORE_POSITION
    velocity = mask & _IGNORE_VELOCITY != _IGNORE_VELOCITY
    vx, vy, vz = msg.vx, msg.vy, msg.vz
    return Commanded(
        t,
        msg.x if position else _NAN,
        msg.y if position else _NAN,
        msg.z if position else _NAN,
        math.sqrt(vx * vx + vy * vy + vz * vz) if velocity else _NAN,
        mask,
    )


CSV_COLUMNS = ("unix_s", "t_s", "north_m", "east_m", "down_m", "north_m_s", "east_m_s",
               "down_m_s", "speed_m_s", "sp_north_m", "sp_east_m", "sp_down_m", "sp_speed_m_s",
               "sp_type_mask", "mode", "armed", "phase", "fc_boot_s")


def csv_rows(tracks: Tracks) -> Iterator[tuple[object, ...]]:
    """One row per flown position, with the setpoint, mode and phase in force then."""
    commanded, modes, phases = tracks.commanded, tracks.modes, tracks.phases
    ci = mi = pi = 0
    for f in tracks.flown:
        while ci < len(commanded) and commanded[ci].t <= f.t:
            ci += 1
        while mi < len(modes) and modes[mi][0] <= f.t:
            mi += 1
        while pi < len(phases) and phases[pi][0] <= f.t:
            pi += 1
        sp = commanded[ci - 1] if ci else None
        mode = modes[mi - 1] if mi else None
        yield (
            f"{f.t:.6f}", f"{f.t - tracks.start_t:.3f}", *(f"{v:.3f}" for v in (
                f.north_m, f.east_m, f.down_m, f.north_m_s, f.east_m_s, f.down_m_s,
                f.speed_m_s)),
            *((f"{v:.3f}" if not math.isnan(v) else "") for v in (
                (sp.north_m, sp.east_m, sp.down_m, sp.speed_m_s) if sp else (_NAN,) * 4)),
            "" if sp is None else sp.type_mask,
            "" if mode is None else mode[1], "" if mode is None else int(mode[2]),
            phases[pi - 1][1] if pi else "",
            f"{f.fc_boot_s:.3f}",
        )
