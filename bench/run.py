"""`make bench` / `python -m bench`: run every workload side by side, write the results.

Starts a private mosquitto (one a round), then each workload in turn (a fresh sim and proxy
each: bench/workloads.py), and writes results.json, results.md and results.png into `--out`
(bench/ by default). With `--rounds N` every workload runs N times, the rounds in
turn, and each row is the workload's median round (bench/rounds.py). `run_benchmark` is
the same thing for the smoke test.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.procs import Children, free_tcp_port, mosquitto_binary
from bench.report import machine, write_reports
from bench.rounds import representative
from bench.workloads import Result, Workload, run_workload

PROFILES = ("px4", "heavy")
DAEMON_RATES_HZ = (20.0, 50.0, 100.0)
PEER_RATE_HZ = 20.0  # MAVSDK's Offboard plugin streams at a fixed 20 Hz; the loop matches it


def all_workloads() -> list[Workload]:
    out: list[Workload] = []
    for profile in PROFILES:
        out += [Workload("mavsdk", PEER_RATE_HZ, profile),
                Workload("pymavlink", PEER_RATE_HZ, profile)]  # fmt: skip
        out += [Workload("offboardd", rate, profile) for rate in DAEMON_RATES_HZ]
        if profile == "px4":  # issue 18: the same 20 Hz with PX4's streams left alone
            out.append(Workload("offboardd", PEER_RATE_HZ, profile, plan="px4"))
    return out


def start_broker(children: Children, workdir: Path) -> tuple[int, subprocess.Popen[str]]:
    """A private mosquitto on a free loopback port: (port, process), once it listens."""
    port = free_tcp_port()
    config = workdir / "mosquitto.conf"
    config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                      "set_tcp_nodelay true\nlog_type none\n")  # fmt: skip
    proc = children.start([mosquitto_binary(), "-c", str(config)])
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return port, proc
        time.sleep(0.05)
    raise RuntimeError("mosquitto did not listen within 10 s")


def run_benchmark(workloads: Sequence[Workload], seconds: float, out_dir: Path,
                  *, log: bool = True, workdir: Path | None = None,
                  daemon_settings: Sequence[str] = (),
                  daemon_tree: Path | None = None, rounds: int = 1) -> list[Result]:  # fmt: skip
    """Run `workloads` in order, `rounds` times; keep configs and raw captures in `workdir`
    if given (the last round's). Returns a row per workload: its median round."""
    done: list[list[Result]] = []
    info = machine()
    with tempfile.TemporaryDirectory(prefix="offboardd-bench-") as tmp:
        workdir = workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for n in range(rounds):
            done.append([])
            # a broker per round: a workload's vehicle id is its name, and a commander must
            # never take the retained state of the last round's daemon for this one's
            with Children() as children:
                broker_port, _ = start_broker(children, workdir)
                for w in workloads:
                    if log:
                        which = f", round {n + 1}/{rounds}" if rounds > 1 else ""
                        print(f"bench: {w.name} ({seconds:g} s{which})...", flush=True)
                    done[-1].append(run_workload(w, seconds, broker_port, workdir,
                                                 daemon_settings, daemon_tree))  # fmt: skip
    info["loadavg_after"] = machine()["loadavg"]
    results = representative(done)
    write_reports(results, info, seconds, out_dir, done)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="measurement window of each workload (default 10)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent,
                        help="where results.md/.json/.png go (default bench/)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="run every workload this many times, the rounds in turn; "
                        "each row is the workload's median round (default 3; 1 for a quick "
                        "look)")  # fmt: skip
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME",
                        help="run only workloads whose name contains one of these "
                        "(e.g. mavsdk 20hz-heavy)")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep daemon configs and raw proxy captures (*.capture.json) here")
    parser.add_argument("--daemon-set", action="append", default=[], metavar="SECTION.KEY=V",
                        help="an experiment: extra daemon setting, e.g. "
                        "'recorder.mode = \"off\"' (repeatable)")  # fmt: skip
    parser.add_argument("--daemon-tree", type=Path, default=None, metavar="DIR",
                        help="an experiment: run the daemon from DIR (a patched copy of the "
                        "repository, or of just its offboardd/ package)")  # fmt: skip
    args = parser.parse_args(argv)
    chosen = [w for w in all_workloads()
              if args.only is None or any(key in w.name for key in args.only)]  # fmt: skip
    if not chosen:
        parser.error("no workload matches --only")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    started = time.monotonic()
    run_benchmark(chosen, args.seconds, args.out, workdir=args.keep,
                  daemon_settings=args.daemon_set, daemon_tree=args.daemon_tree,
                  rounds=args.rounds)
    print(f"bench: done in {time.monotonic() - started:.0f} s; see {args.out}/results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
