"""The onboard-motion figures (issue 16): tracking, limits, planning time and CPU.

`offboardd run` (its own process, 50 Hz, MQTT and telemetry on) against the built-in sim
(in this process, `--profile px4`: ~400 msg/s of PX4-like telemetry) through a private
mosquitto; a commander (OffboardClient) in this process.

- tracking: a 20 m square `path` with 3 m corner radii and an `orbit` of radius 8 m, both
  at 3 m/s: the largest distance from the sim's true position (sampled at 50 Hz) to the
  streamed setpoints' polyline (what the daemon sent, from the sim's record);
- limits: the largest speed and acceleration feed-forward in the streamed setpoints
  against the command's speed and [envelope] max_acceleration_m_s2;
- planning: the time to plan (and fence-check) a 500-waypoint path, in the daemon's code;
- CPU: the daemon's CPU over alternating windows, hovering on a fixed setpoint vs flying
  a long orbit (same rate, same load), twice each.

    python -m bench.motion [--window-s 15] [--out bench/]   # writes motion-results.md/.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.procs import Children, cpu_s, free_udp_port, machine_cpu_ticks, steal_fraction
from bench.run import start_broker
from bench.tracking import percentile, tracking_errors_m
from offboardd.client import OffboardClient
from offboardd.core.envelope import Envelope
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcHomePosition
from offboardd.core.motion import Start, plan
from offboardd.core.motion_commands import FollowPath
from offboardd.core.motion_fence import first_point_outside
from offboardd.core.motion_settings import MotionSettings
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.sim import SimConfig, SimServer

VEHICLE = "motion"
RATE_HZ = 50.0
SPEED_M_S = 3.0
ALT_M = -5.0


def _planning_ms() -> dict[str, float]:
    """Plan a 500-waypoint zig-zag (about 2.5 km), then check it against a 10-edge polygon
    fence, as the daemon does (ms each, the mean of 5)."""
    waypoints = tuple(PositionNed(5.0 * (i % 2), 5.0 * i, ALT_M) for i in range(500))
    cmd = FollowPath("bench", waypoints, speed_m_s=SPEED_M_S, corner_radius_m=1.0)
    limits = MotionSettings().limits(EnvelopeSettings(), SPEED_M_S)
    start = Start((0.0, -5.0, ALT_M), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)
    ring = tuple((200.0 * math.cos(k / 10 * 2 * math.pi),
                  1600.0 * math.sin(k / 10 * 2 * math.pi) + 1250.0) for k in range(10))
    envelope = Envelope(EnvelopeSettings(polygon=ring))
    envelope.set_home(FcHomePosition(47.4, 8.5, 488.0, 0.0, 0.0, 0.0))
    t0 = time.perf_counter()
    for _ in range(5):
        motion = plan(cmd, start, limits, None)
    t1 = time.perf_counter()
    for _ in range(5):
        assert first_point_outside(motion, envelope) is None  # all of it checked
    t2 = time.perf_counter()
    return {"plan_500_waypoints_ms": (t1 - t0) / 5 * 1000,
            "fence_check_500_waypoints_ms": (t2 - t1) / 5 * 1000}


async def _fly_and_track(sim: SimServer, name: str, start_motion: Any,
                         tracks: dict[str, Any]) -> None:
    """Fly one motion, keeping the sim's truth (50 Hz) and what was streamed meanwhile;
    judged after the flight (`_judge`), so the sim in this loop is never held up."""
    first = len(sim.record.setpoints)
    flown: list[tuple[float, tuple[float, float, float]]] = []
    loop = asyncio.get_running_loop()
    handle = await start_motion()
    while not handle.finished:
        n, e, d = (float(x) for x in sim.vehicle.position_ned_m)
        flown.append((loop.time(), (n, e, d)))
        await asyncio.sleep(1 / 50)
    await handle.done()
    sent = [(s.time_s, s.local_ned) for s in sim.record.setpoints[first:]
            if s.local_ned is not None]
    tracks[name] = (flown, sent)


def _judge(name: str, flown: list[tuple[float, tuple[float, float, float]]],
           sent: list[tuple[float, tuple[float, ...]]]) -> dict[str, float]:
    errors = tracking_errors_m(flown[10:],  # from 0.2 s in: the vehicle was there at first
                               [(t, (x[0], x[1], x[2])) for t, x in sent])
    speeds = [math.sqrt(x[3] ** 2 + x[4] ** 2 + x[5] ** 2) for _, x in sent]
    accels = [math.sqrt(x[6] ** 2 + x[7] ** 2 + x[8] ** 2) for _, x in sent]
    return {f"{name}_max_error_m": errors[-1], f"{name}_p95_error_m": percentile(errors, 0.95),
            f"{name}_max_speed_m_s": max(speeds), f"{name}_max_accel_m_s2": max(accels),
            f"{name}_setpoints": float(len(sent))}


async def _cpu_window(pid: int, seconds: float) -> float:
    c0, t0 = cpu_s(pid), time.monotonic()
    await asyncio.sleep(seconds)
    return (cpu_s(pid) - c0) / (time.monotonic() - t0) * 100


async def run(window_s: float, workdir: Path, scale: float = 1.0) -> dict[str, Any]:
    """`scale` < 1 shrinks the flights (the smoke test: numbers come out, never judged)."""
    out: dict[str, Any] = dict(_planning_ms())
    port = free_udp_port()
    with Children() as children:
        broker_port, _ = start_broker(children, workdir)
        config = workdir / "offboardd.toml"
        config.write_text(f'[mavlink]\nurl = "udpin://127.0.0.1:{port}"\n'
                          f"[engine]\nsetpoint_rate_hz = {RATE_HZ}\nhold_s = 30.0\n"
                          f'[mqtt]\nhost = "127.0.0.1"\nport = {broker_port}\n'
                          f'vehicle_id = "{VEHICLE}"\n[log]\nlevel = "warning"\n')
        daemon = children.start([sys.executable, "-m", "offboardd", "run", "--config",
                                 str(config)])
        sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                               gcs_bind=None, profile="px4")
        async with SimServer(sim_config) as sim, OffboardClient(
                "127.0.0.1", broker_port, VEHICLE) as c:
            await c.wait_for_state(lambda s: s.get("com_of_loss_t_s") is not None and bool(
                s.get("estimates", {}).get("local_position")), 30)
            steal0 = machine_cpu_ticks()
            await (await c.goto(PositionNed(0, 0, ALT_M), engage=True, arm=True)).done(60)
            side, radius = 20.0 * scale, 8.0 * scale
            square = [PositionNed(side, 0, ALT_M), PositionNed(side, side, ALT_M),
                      PositionNed(0, side, ALT_M), PositionNed(0, 0, ALT_M)]
            tracks: dict[str, Any] = {}
            await _fly_and_track(sim, "path", lambda: c.path(
                square, speed_m_s=SPEED_M_S, corner_radius_m=3.0), tracks)
            await _fly_and_track(sim, "orbit", lambda: c.orbit(
                PositionNed(radius, 0, ALT_M), radius, speed_m_s=SPEED_M_S, turns=1.0), tracks)
            await (await c.goto(PositionNed(0, 0, ALT_M))).done(30)
            hover, cruise, flying = [], [], []
            for _ in range(2):
                await asyncio.sleep(2.0)
                hover.append(await _cpu_window(daemon.pid, window_s))
                # moving too, on one fixed setpoint: what telemetry of a moving vehicle costs
                await c.setpoint_confirmed(VelocityNed(0.0, SPEED_M_S, 0.0))
                await asyncio.sleep(2.0)
                cruise.append(await _cpu_window(daemon.pid, window_s))
                await (await c.goto(PositionNed(0, 0, ALT_M), speed_m_s=2 * SPEED_M_S)).done(90)
                orbit = await c.orbit(PositionNed(0, radius, ALT_M), radius,
                                      speed_m_s=SPEED_M_S, turns=10.0)
                await asyncio.sleep(2.0)
                flying.append(await _cpu_window(daemon.pid, window_s))
                assert not orbit.finished  # ten turns: still flying at the window's end
                await c.stop()
                await (await c.goto(PositionNed(0, 0, ALT_M))).done(60)
            out["cpu_hover_pct"] = hover
            out["cpu_cruise_pct"] = cruise
            out["cpu_orbit_pct"] = flying
            out["cpu_delta_pct"] = sum(flying) / len(flying) - sum(hover) / len(hover)
            out["cpu_delta_vs_cruise_pct"] = sum(flying) / len(flying) - sum(cruise) / len(cruise)
            out["steal"] = steal_fraction(steal0, machine_cpu_ticks())
            await c.land()
    for name, (flown, sent) in tracks.items():
        out.update(_judge(name, flown, sent))
    return out


def report(r: dict[str, Any], window_s: float) -> str:
    lines = [
        "# Onboard motion: measured (`python -m bench.motion`)", "",
        f"Machine: {platform.node()}, Python {platform.python_version()}; CPU steal during "
        f"the run {r['steal']:.1%}. offboardd at {RATE_HZ:g} Hz against the built-in sim "
        "(px4 profile, ~400 msg/s), MQTT and telemetry on.", "",
        "| figure | measured | goal |", "|---|---|---|",
        f"| tracking, 20 m square path (3 m corners) at 3 m/s: max / p95 distance flown to "
        f"planned | {r['path_max_error_m']:.3f} / {r['path_p95_error_m']:.3f} m | <= 0.3 m |",
        f"| tracking, orbit r 8 m at 3 m/s: max / p95 | {r['orbit_max_error_m']:.3f} / "
        f"{r['orbit_p95_error_m']:.3f} m | <= 0.3 m |",
        f"| largest streamed speed (path / orbit) | {r['path_max_speed_m_s']:.3f} / "
        f"{r['orbit_max_speed_m_s']:.3f} m/s | <= 3 m/s (the command) |",
        f"| largest streamed acceleration feed-forward (path / orbit) | "
        f"{r['path_max_accel_m_s2']:.3f} / {r['orbit_max_accel_m_s2']:.3f} m/s² | <= 3 m/s² "
        "(max_acceleration_m_s2) |",
        f"| plan a 500-waypoint path (2.5 km) / check it against a 10-edge polygon fence | "
        f"{r['plan_500_waypoints_ms']:.1f} / {r['fence_check_500_waypoints_ms']:.1f} ms | "
        "(once per command, on the daemon's loop) |",
        f"| CPU hovering on a fixed setpoint ({window_s:g} s windows) | "
        + ", ".join(f"{x:.2f} %" for x in r["cpu_hover_pct"]) + " | |",
        "| CPU cruising on a fixed velocity setpoint (moving: telemetry changes) | "
        + ", ".join(f"{x:.2f} %" for x in r["cpu_cruise_pct"]) + " | |",
        "| CPU flying an orbit | " + ", ".join(f"{x:.2f} %" for x in r["cpu_orbit_pct"])
        + " | |",
        f"| CPU cost of a running motion vs hovering on a fixed setpoint | "
        f"{r['cpu_delta_pct']:+.2f} % of a core | < +0.5 % |",
        f"| ... vs cruising on a fixed velocity setpoint | "
        f"{r['cpu_delta_vs_cruise_pct']:+.2f} % of a core | |",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.motion", description=__doc__)
    parser.add_argument("--window-s", type=float, default=15.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="shrink the flights (the test suite's smoke run: 0.3)")
    args = parser.parse_args(argv)
    workdir = args.out / "motion-work"
    workdir.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(run(args.window_s, workdir, args.scale))
    text = report(result, args.window_s)
    (args.out / "motion-results.md").write_text(text)
    (args.out / "motion-results.json").write_text(json.dumps(result, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
