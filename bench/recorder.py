"""The flight recorder's cost (issue 17): the same workload with recording off and on.

offboardd at 20 Hz under the sim's px4 load with PX4's streams left alone
(`[mavlink.streams] plan = "px4"`: ~400 msg/s reach the daemon, as on a link without the
stream plan), MQTT, lease and telemetry on (bench/workloads.py), alternating recording
off and on (`[recorder] mode = "link"`: every frame both ways, the whole window), `--rounds`
times. Per run: the daemon's CPU, the stream's interval deviation, missed ticks, peak RSS,
and for the recording runs what was written (bytes/s, batches dropped).

    python -m bench.recorder [--seconds 20] [--rounds 2] [--out bench/]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.procs import Children
from bench.report import machine
from bench.run import start_broker
from bench.workloads import Workload, run_workload
from offboardd.recorder.store import list_flights

WORKLOAD = Workload("offboardd", 20.0, "px4")
_COMMON = ('mavlink.streams = {plan = "px4"}',)


def _settings(recording: bool) -> list[str]:
    # (the flights go beside the workload's config: bench/commander.py)
    return [*_COMMON, f'recorder.mode = "{"link" if recording else "off"}"']


def _written(flights: Path, window_s: float) -> dict[str, Any]:
    found = list_flights(flights)
    if not found:
        return {"flights": 0}
    folder = found[0].folder
    tlog_bytes = (folder / "flight.tlog").stat().st_size
    journal_bytes = (folder / "journal.jsonl").stat().st_size
    s = found[0].summary
    return {"flights": len(found), "tlog_bytes": tlog_bytes, "journal_bytes": journal_bytes,
            "recorded_s": round(s.duration_s, 1),
            "tlog_kb_s": round(tlog_bytes / 1024 / max(s.duration_s, window_s), 1),
            "dropped_batches": s.dropped_batches, "complete": s.complete}


def run(seconds: float, rounds: int, workdir: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for n in range(rounds):
        for recording in (False, True):
            flights = workdir / "flights"
            shutil.rmtree(flights, ignore_errors=True)
            print(f"bench.recorder: round {n + 1}, recording {'on' if recording else 'off'}",
                  flush=True)
            # a broker per run: the workload's vehicle id is its name, and a commander
            # must never take the retained state of the previous run's daemon for this one's
            with Children() as children:
                broker_port, _ = start_broker(children, workdir)
                r = run_workload(WORKLOAD, seconds, broker_port, workdir,
                                 _settings(recording))
            runs.append({"round": n + 1, "recording": recording,
                         "load_msg_s": round(r.load_msg_s), "cpu_pct": 100 * r.cpu_per_s,
                         "rate_hz": r.rate_hz, "dev_p50_ms": r.dev_p50_ms,
                         "dev_p99_ms": r.dev_p99_ms, "dev_max_ms": r.dev_max_ms,
                         "missed_ticks": r.missed_ticks, "peak_rss_mb": r.peak_rss_mb,
                         "steal_pct": 100 * r.steal,
                         **(_written(flights, seconds) if recording else {})})
    return runs


def write(runs: list[dict[str, Any]], seconds: float, out: Path) -> None:
    info = machine()
    (out / "recorder-results.json").write_text(json.dumps(
        {"machine": info, "window_s": seconds, "runs": runs}, indent=1) + "\n")
    off = [r["cpu_pct"] for r in runs if not r["recording"]]
    on = [r["cpu_pct"] for r in runs if r["recording"]]
    lines = [
        "# The flight recorder's cost: measured",
        "",
        f"`python -m bench.recorder --seconds {seconds:g} --rounds {len(off)}` on "
        f"{info.get('cpu', '?')} ({info.get('cores', '?')} cores), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. offboardd at 20 Hz, the "
        "sim's px4 load with PX4's streams left alone (plan = \"px4\"), MQTT, lease and "
        "telemetry on; recording off vs `mode = \"link\"` (every frame both ways).",
        "",
        "| round | recording | msg/s in | CPU % | p50 dev ms | p99 dev ms | max dev ms "
        "| missed ticks | peak RSS MB | tlog KB/s | dropped batches | steal % |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r['round']} | {'on' if r['recording'] else 'off'} | {r['load_msg_s']} "
            f"| {r['cpu_pct']:.2f} | {r['dev_p50_ms']:.3f} | {r['dev_p99_ms']:.3f} "
            f"| {r['dev_max_ms']:.3f} | {r['missed_ticks']} | {r['peak_rss_mb']:.1f} "
            f"| {r.get('tlog_kb_s', '–')} | {r.get('dropped_batches', '–')} "
            f"| {r['steal_pct']:.1f} |")
    if off and on:
        lines += ["", f"Recording costs {statistics.mean(on) - statistics.mean(off):+.2f} % "
                  f"of a core on average (off {statistics.mean(off):.2f} %, on "
                  f"{statistics.mean(on):.2f} %; goal <= +0.5 %)."]
    (out / "recorder-results.md").write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recorder", description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="offboardd-bench-recorder-") as tmp:
        runs = run(args.seconds, args.rounds, Path(tmp))
        write(runs, args.seconds, args.out)
    print(f"bench.recorder: wrote {args.out / 'recorder-results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
