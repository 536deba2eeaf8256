"""`offboardd log list | show | plot | export`: the recorded flights, on the companion or on
a laptop with the copied folder (`--dir`, or a flight folder's path as FLIGHT)."""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Collection
from pathlib import Path

from offboardd.config import load_config
from offboardd.errors import ConfigError
from offboardd.recorder.settings import RecorderSettings, flights_root
from offboardd.recorder.store import Flight, find_flight, list_flights, timeline
from offboardd.recorder.summary import FlightSummary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--dir", help="the flights directory (default: $STATE_DIRECTORY/"
                       "flights, else /var/lib/offboardd/flights)")
    where.add_argument("--config", help="take the flights directory from this config file")
    sub = parser.add_subparsers(dest="log_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="the recorded flights, newest first")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    flight_help = 'a folder name (or a unique prefix), a folder path, or "latest"'
    show = sub.add_parser("show", help="a flight's timeline: commands, phases, FC modes")
    show.add_argument("flight", nargs="?", default="latest", help=flight_help)
    plot = sub.add_parser("plot", help="a PNG: path, altitude, speed, phases, failsafes")
    plot.add_argument("flight", nargs="?", default="latest", help=flight_help)
    plot.add_argument("-o", "--output", help="PNG path (default: FLIGHT/flight.png)")
    export = sub.add_parser("export", help="CSV: flown vs commanded, mode and phase")
    export.add_argument("flight", nargs="?", default="latest", help=flight_help)
    export.add_argument("-o", "--output", help="CSV path (default: standard output)")


def main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except BrokenPipeError:  # `log list | head`, `log export latest | head`: a quiet end
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (Python flushes it at exit)
        return 0


def _main(args: argparse.Namespace) -> int:
    try:
        root = _root(args)
        if args.log_command == "list":
            return _list(root, args.limit, as_json=args.json)
        flight = find_flight(root, args.flight)
    except (ConfigError, LookupError) as exc:
        print(f"offboardd log: {exc}", file=sys.stderr)
        return 1
    if args.log_command == "show":
        _show(flight)
        return 0
    if args.log_command == "plot":
        return _plot(flight, Path(args.output) if args.output else flight.folder / "flight.png")
    return _export(flight, args.output)


def _root(args: argparse.Namespace) -> Path:
    if args.dir:
        root = Path(args.dir)
        if not root.is_dir():  # a mistyped --dir once read "no flights recorded" (review)
            raise LookupError(f"{root}: no such folder")
        return root
    if args.config:
        return flights_root(load_config(args.config).recorder)
    return flights_root(RecorderSettings())


def _list(root: Path, limit: int, *, as_json: bool) -> int:
    flights = list_flights(root, limit)
    # the daemon's open flight is written at least every second; one cut off a moment ago
    # looks the same from here: `ctl flights` asks the daemon, which knows
    fresh = {f.name for f in flights
             if not f.summary.complete and written_within(f.folder, _OPEN_WITHIN_S)}
    if as_json:
        print(json.dumps([f.summary.as_dict() for f in flights], indent=1))
        return 0
    if not flights:
        print(f"no flights recorded in {root}")
        return 0
    for line in flight_table([f.summary for f in flights], fresh):
        print(line)
    return 0


_OPEN_WITHIN_S = 5.0  # the writer syncs every flush_interval_s (at most 1 s)


def written_within(folder: Path, seconds: float) -> bool:
    """A file of the flight's folder was written in the last `seconds` (wall clock)."""
    try:
        newest = max(p.stat().st_mtime for p in folder.iterdir())
    except (OSError, ValueError):
        return False
    return time.time() - newest < seconds


def flight_table(summaries: list[FlightSummary], fresh: Collection[str] = ()) -> list[str]:
    """`log list` and `ctl flights`: a line per flight, under a header."""
    lines = [f"{'flight':<24} {'start (local)':<19} {'duration':>8} {'max alt':>8} "
             f"{'max spd':>8} {'failsafes':>9}  commanders"]
    for s in summaries:
        start = ("?" if s.start_unix_s is None else
                 time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.start_unix_s)))
        cut = ("" if s.complete else "  (recording)" if s.recording
               else "  (not closed: being recorded, or cut off just now)" if s.name in fresh
               else "  (cut off: not closed by the recorder)")
        lines.append(f"{s.name:<24} {start:<19} {s.duration_s:>7.1f}s "
                     f"{s.max_altitude_m:>7.1f}m {s.max_speed_m_s:>5.1f}m/s {s.failsafes:>9}  "
                     f"{', '.join(s.commanders) or '-'}{cut}")
    return lines


def _show(flight: Flight) -> None:
    s = flight.summary
    print(f"{flight.folder}: {s.duration_s:.1f} s, max altitude {s.max_altitude_m:.1f} m, "
          f"max speed {s.max_speed_m_s:.1f} m/s, {s.failsafes} failsafe(s), "
          f"{s.commands} command(s), {s.refused} refused")
    for line in timeline(flight):
        print(line)


def _plot(flight: Flight, output: Path) -> int:
    from offboardd.demo.plot import plotting_available  # noqa: PLC0415
    from offboardd.recorder.plot import INSTALL_HINT, write_flight_plot  # noqa: PLC0415

    if not plotting_available():
        print(f"offboardd log: {INSTALL_HINT}", file=sys.stderr)
        return 1
    print(write_flight_plot(flight, output))
    return 0


def _export(flight: Flight, output: str | None) -> int:
    from offboardd.recorder.tracks import CSV_COLUMNS, csv_rows, load_tracks  # noqa: PLC0415

    tracks = load_tracks(flight)
    out = open(output, "w", newline="", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
    try:
        writer = csv.writer(out)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(csv_rows(tracks))
    finally:
        if output:
            out.close()
    if output:
        print(f"{output}: {len(tracks.flown)} rows", file=sys.stderr)
    return 0
