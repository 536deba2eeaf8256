"""Reading recorded flights back: the list, a flight's journal, its tlog, its timeline.

Works on the companion and on a laptop with a copied folder: plain files, no daemon.
A flight cut off by a power loss or `kill -9` reads up to its last whole record (the
writer flushes at least once a second); its summary is folded from the journal then.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offboardd.mavlink.codec import MavlinkCodec, Message
from offboardd.mavlink.frame_layout import MAGIC_V1, MAGIC_V2, frame_shape
from offboardd.recorder.folders import flight_folders
from offboardd.recorder.summary import FlightSummary
from offboardd.recorder.writer import JOURNAL_NAME, SUMMARY_NAME, TLOG_NAME, TLOG_TIMESTAMP


@dataclass(frozen=True)
class Flight:
    folder: Path
    summary: FlightSummary

    @property
    def name(self) -> str:
        return self.folder.name


def list_flights(root: Path, limit: int | None = None) -> list[Flight]:
    """Newest first."""
    folders = flight_folders(root)[::-1]
    if limit is not None:
        folders = folders[:limit]
    return [Flight(folder, read_summary(folder)) for folder in folders]


def find_flight(root: Path, which: str) -> Flight:
    """A flight by folder name (or a unique prefix of one), by path, or "latest"/"-1"."""
    given = Path(which)
    if given.is_dir() and (given / JOURNAL_NAME).exists():
        return Flight(given, read_summary(given))
    folders = flight_folders(root)
    if not folders:
        raise LookupError(f"no flights in {root}")
    if which in ("latest", "last", "-1"):
        return Flight(folders[-1], read_summary(folders[-1]))
    matches = [f for f in folders if f.name == which] or [
        f for f in folders if f.name.startswith(which)]
    if len(matches) != 1:
        names = ", ".join(f.name for f in folders[-5:])
        raise LookupError(f"{'no' if not matches else 'more than one'} flight matches "
                          f"{which!r} in {root} (latest: {names})")
    return Flight(matches[0], read_summary(matches[0]))


def read_summary(folder: Path) -> FlightSummary:
    path = folder / SUMMARY_NAME
    if path.exists():
        try:
            return FlightSummary.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            pass  # fold the journal instead
    summary = FlightSummary(name=folder.name)
    for record in read_journal(folder):
        summary.add(record)
    return summary


def read_journal(folder: Path) -> Iterator[dict[str, Any]]:
    """Each whole JSON line; a line cut by a power loss ends the journal."""
    try:
        f = open(folder / JOURNAL_NAME, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return
    with f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                return
            if isinstance(record, dict):
                yield record


def read_tlog(folder: Path) -> Iterator[tuple[float, Message]]:
    """(Unix time s, message) for every frame the codec decodes, in file order; a cut
    last record ends the log."""
    path = folder / TLOG_NAME
    if not path.exists():
        return
    data = path.read_bytes()
    codec = MavlinkCodec(0, 0)
    pos, end = 0, len(data)
    while pos + 8 < end:
        (t_us,) = TLOG_TIMESTAMP.unpack_from(data, pos)
        start = pos + 8
        if data[start] not in (MAGIC_V1, MAGIC_V2):
            return  # not a record boundary: the file is damaged from here on
        length, _ = frame_shape(data, start, end)
        if length < 0 or start + length > end:
            return
        for msg in codec.decode(data[start:start + length]):
            yield t_us / 1e6, msg
        pos = start + length


def timeline(flight: Flight) -> Iterator[str]:
    """`log show`: commands, replies, phases, FC modes and failsafes, one line each."""
    start = flight.summary.start_unix_s
    for record in read_journal(flight.folder):
        line = _timeline_line(record)
        if line is None:
            continue
        t = record.get("t")
        offset = f"{float(t) - start:8.2f}s" if isinstance(t, int | float) and start else "        "
        yield f"{offset}  {line}"


def _timeline_line(r: dict[str, Any]) -> str | None:
    kind = r.get("kind")
    if kind == "command":
        cmd = r.get("command") or {}
        args = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}"
                         for k, v in cmd.items() if k not in ("id", "cmd"))
        return f"command  {cmd.get('cmd')} id={r.get('id')} from {r.get('commander')}" + (
            f" ({args})" if args else "")
    if kind == "reply":
        verdict = "ok" if r.get("ok") else f"REFUSED {r.get('code')}"
        return f"reply    {r.get('id')}: {verdict} {r.get('message') or ''}".rstrip()
    if kind == "notice":
        notice = r.get("notice")
        reason = f" ({r.get('reason')})" if r.get("reason") else ""  # (none: said nothing)
        if notice == "transition":
            return (f"phase    {r.get('previous_phase')} -> {r.get('phase')}{reason}: "
                    f"{r.get('message')}")
        label = "FAILSAFE" if notice == "failsafe" else str(notice)
        return f"{label:<8} {r.get('message')}{reason}"
    if kind == "fc":
        return (f"fc       mode {r.get('mode')}, {'armed' if r.get('armed') else 'disarmed'},"
                f" {r.get('landed')}")
    if kind == "flight":
        if r.get("event") == "end":
            return f"flight   end (batches dropped: {r.get('dropped_batches')})"
        return f"flight   start (run {r.get('run_id')}, recording {r.get('mode')})"
    return None
