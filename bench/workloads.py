"""One workload: a peer streaming setpoints to a fresh sim through the measuring proxy.

A workload is (peer, rate_hz, telemetry profile; for the daemon, its stream plan).
`run_workload` starts the proxy and the sim, then the peer: `offboardd run` (its own
process, MQTT + lease + telemetry on, with bench/commander.py keeping the lease), MAVSDK or
the pymavlink loop. Once the peer holds OFFBOARD it measures CPU and peak RSS over a fixed
window, then stops everything and turns the proxy's capture into a `Result`. The caller
owns the broker.
"""

from __future__ import annotations

import asyncio
import compileall
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import commander
from bench.frames import is_offboard
from bench.procs import (
    Children,
    StealWatch,
    Usage,
    free_udp_port,
    peak_rss_mb,
)
from bench.stats import NS_PER_MS, NS_PER_S, command_latencies_ms, first_after, spread
from bench.stats import stream_timing as timing_of

PEERS = ("offboardd", "mavsdk", "pymavlink")
_SETTLE_S = 1.0  # after OFFBOARD: let the climb start and start-up allocations settle
_PROBE_S = 3.0  # latency probes after the window (60 at 20/s)
_PEER_MODULES = {"mavsdk": "bench.peers.mavsdk_peer", "pymavlink": "bench.peers.pymavlink_peer"}


@dataclass(frozen=True)
class Workload:
    peer: str
    rate_hz: float
    profile: str  # the sim's telemetry profile: "px4" (~400 msg/s) or "heavy" (~2,000)
    # offboardd's [mavlink.streams] plan: "minimal" (its default, what the daemon needs) or
    # "px4" (PX4's streams left alone: the plan off, issue 18's comparison row)
    plan: str = "minimal"

    @property
    def name(self) -> str:
        off = "" if self.plan == "minimal" else "-plan-off"
        return f"{self.peer}-{self.rate_hz:g}hz-{self.profile}{off}"

    def daemon_settings(self) -> tuple[str, ...]:
        """The config lines this workload adds to the daemon's (`commander.write_config`)."""
        return () if self.plan == "minimal" else (f'mavlink.streams = {{plan = "{self.plan}"}}',)


@dataclass(frozen=True)
class Result:
    workload: Workload
    window_s: float
    load_msg_s: float  # frames/s the sim sent the peer during the window
    rate_hz: float
    dev_p50_ms: float
    dev_p99_ms: float
    dev_max_ms: float
    missed_ticks: int
    cpu_per_s: float  # CPU seconds per wall second (1.0 = one core)
    peak_rss_mb: float
    stream_to_offboard_ms: float | None  # first setpoint at the FC -> FC reports OFFBOARD
    latency: dict[str, float] | None  # MQTT publish -> MAVLink frame at the FC (count, p50...)
    lease_lapse_ms: float | None  # lease deadline -> first hold setpoint at the FC
    steal: float = 0.0  # fraction of the machine's CPU time its host took during the workload
    steal_peak: float = 0.0  # the same over its worst 0.2 s
    wakeups_per_s: float = 0.0  # the peer's threads' voluntary context switches per second

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _python(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _measure_window(pid: int, seconds: float) -> tuple[int, int, float, float, float]:
    start = Usage.of(pid)
    time.sleep(seconds)
    end = Usage.of(pid)
    cpu, wakes = start.rates_until(end)
    return start.t_ns, end.t_ns, cpu, peak_rss_mb(pid), wakes


def _compile(daemon_tree: Path | None) -> None:
    """Byte-compile the daemon's package first, as `pip install` does: a daemon run from a
    source tree with PYTHONDONTWRITEBYTECODE set compiles every module at start, and the
    compiler's transient memory (~9 MB for the generated slim dialect) would count in its
    peak RSS although no installed daemon pays it."""
    root = daemon_tree if daemon_tree is not None else Path(__file__).resolve().parents[1]
    compileall.compile_dir(root / "offboardd", quiet=1)


def run_workload(w: Workload, seconds: float, broker_port: int, workdir: Path,  # noqa: PLR0917
                 daemon_settings: Sequence[str] = (), daemon_tree: Path | None = None
                 ) -> Result:  # fmt: skip
    """`daemon_tree`: run `python -m offboardd run` from that directory, so a patched copy
    of the package is measured (an experiment) while everything else stays as it is."""
    proxy_port, sim_port, peer_port = free_udp_port(), free_udp_port(), free_udp_port()
    capture_path = workdir / f"{w.name}.capture.json"
    with StealWatch() as steal, Children() as children:
        proxy_argv = _python("bench.proxy", str(proxy_port), str(sim_port), str(peer_port),
                             str(capture_path))  # fmt: skip
        proxy = children.start(proxy_argv, ready="ready")
        children.start(_python("offboardd", "sim", "--bind", f"127.0.0.1:{sim_port}",
                               "--remote", f"127.0.0.1:{proxy_port}", "--gcs-bind", "none",
                               "--profile", w.profile), ready="serving")  # fmt: skip
        drive: commander.Drive | None = None
        if w.peer == "offboardd":
            vehicle_id = w.name.replace(".", "_")
            config = commander.write_config(workdir / f"{w.name}.toml", peer_port,
                                            broker_port, w.rate_hz, vehicle_id,
                                            (*w.daemon_settings(), *daemon_settings))  # fmt: skip
            _compile(daemon_tree)
            daemon = children.start(_python("offboardd", "run", "--config", str(config)),
                                    cwd=daemon_tree)
            drive = asyncio.run(commander.drive(daemon.pid, broker_port, vehicle_id,
                                                _SETTLE_S, seconds, min(seconds, _PROBE_S)))
            t0_ns, t1_ns, cpu, rss = drive.t0_ns, drive.t1_ns, drive.cpu_per_s, drive.peak_rss_mb
            wakes = drive.wakeups_per_s
            children.stop(daemon)
        else:
            peer = children.start(_python(_PEER_MODULES[w.peer], str(peer_port)),
                                  ready="engaged", timeout_s=40.0)  # fmt: skip
            time.sleep(_SETTLE_S)
            t0_ns, t1_ns, cpu, rss, wakes = _measure_window(peer.pid, seconds)
            children.stop(peer)
        children.stop(proxy)  # writes the capture
    cap = json.loads(capture_path.read_text())
    if drive is not None:  # with the capture, enough to re-analyse a run offline
        (workdir / f"{w.name}.drive.json").write_text(json.dumps(asdict(drive)))
    return dataclasses.replace(_result(w, cap, (t0_ns, t1_ns), (cpu, rss), drive),
                               steal=steal.average, steal_peak=steal.peak, wakeups_per_s=wakes)


def _result(w: Workload, cap: dict[str, Any], window_ns: tuple[int, int],
            cost: tuple[float, float], drive: commander.Drive | None) -> Result:  # fmt: skip
    (t0_ns, t1_ns), (cpu, rss) = window_ns, cost
    setpoints: list[list[Any]] = cap["setpoints"]
    in_window = [int(s[0]) for s in setpoints if t0_ns <= s[0] <= t1_ns]
    timing = timing_of(in_window, 1.0 / w.rate_hz)
    window_s = (t1_ns - t0_ns) / NS_PER_S
    load = sum(n for t, n in cap["sim_datagrams"] if t0_ns <= t <= t1_ns) / window_s
    stream_start = int(setpoints[0][0]) if setpoints else None
    offboard_ns = next((int(t) for t, mode in cap["modes"] if is_offboard(int(mode))), None)
    to_offboard = (None if stream_start is None or offboard_ns is None
                   else (offboard_ns - stream_start) / NS_PER_MS)  # fmt: skip
    latency = lapse = None
    if drive is not None:
        seen = [(int(s[0]), float(s[2])) for s in setpoints]
        lat = spread(command_latencies_ms(drive.probes, seen))
        latency = {"count": lat.count, "p50_ms": lat.p50_ms, "p99_ms": lat.p99_ms,
                   "max_ms": lat.max_ms}  # fmt: skip
        lapse = _lapse_ms(setpoints, drive)
    return Result(w, window_s, load, timing.rate_hz, timing.dev_p50_ms, timing.dev_p99_ms,
                  timing.dev_max_ms, timing.missed_ticks, cpu, rss, to_offboard, latency,
                  lapse)  # fmt: skip


def _lapse_ms(setpoints: list[list[Any]], drive: commander.Drive) -> float | None:
    """Lease deadline (last lease-renewing publish + the lease) -> the first setpoint
    at the FC whose type_mask is no longer the commander's last one (the hold)."""
    deadline_ns = drive.last_publish_ns + int(drive.lease_s * NS_PER_S)
    held = [int(s[0]) for s in setpoints
            if s[0] >= drive.last_publish_ns and int(s[3]) != drive.last_type_mask]  # fmt: skip
    first = first_after(held, drive.last_publish_ns)
    return None if first is None else (first - deadline_ns) / NS_PER_MS
