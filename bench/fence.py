"""What the geofence costs a tick: `python -m bench.fence` (`make bench-fence`).

The envelope's work per stream tick with a polygon fence, for polygons of 4 to 256 corners
(the most the config allows): one `shape` of the setpoint (a velocity or acceleration
setpoint is limited so the vehicle stops inside) and 1.5 breach checks (LOCAL_POSITION_NED
comes at 30/s, the ticks at 20/s), along flights sampled at 20 Hz. Pure Python in this
process, no I/O: the figures are CPU time per tick on this machine, hot (a daemon's tick
runs it cold, which costs more; bench/stream-plan.md). Writes bench/fence-results.md.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from offboardd.core.envelope import Envelope
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAttitude, FcHeartbeat, FcHomePosition, FcLocalPosition
from offboardd.core.modes import Px4Mode
from offboardd.core.setpoints import AccelerationNed, Setpoint, VelocityNed
from offboardd.core.vehicle import VehicleState

TICK_S = 0.05
RADIUS_M = 100.0
_FC = {"source_system": 1, "source_component": 1}
HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **_FC)
# (north m, east m, north m/s, east m/s) of the vehicle at each tick, and what it asks
Sample = tuple[float, float, float, float]
Flight = Callable[[int, int], Iterator[tuple[Sample, Setpoint]]]  # (ticks, corners)


def hover(ticks: int, corners: int) -> Iterator[tuple[Sample, Setpoint]]:
    for _ in range(ticks):
        yield (3.0, 4.0, 0.2, 0.0), VelocityNed(0.2, 0.0, 0.0)


def crossing(ticks: int, corners: int) -> Iterator[tuple[Sample, Setpoint]]:
    """5 m/s north through the middle, back and forth."""
    for k in range(ticks):
        n = -80.0 + (k * TICK_S * 5.0) % 160.0
        yield (n, 0.0, 5.0, 0.0), VelocityNed(5.0, 0.0, 0.0)


def along_the_line(ticks: int, corners: int) -> Iterator[tuple[Sample, Setpoint]]:
    """3 m/s on a circle 1.5 m inside the polygon's flats, pushing outwards: held at
    the line near the flats' middles."""
    r = RADIUS_M * math.cos(math.pi / corners) - 1.5  # 1.5 m inside the flats
    for k in range(ticks):
        a = k * TICK_S * 3.0 / r
        c, s = math.cos(a), math.sin(a)
        yield (r * c, r * s, -3.0 * s, 3.0 * c), VelocityNed(-3.0 * s + 0.5 * c,
                                                               3.0 * c + 0.5 * s, 0.0)


def held_at_the_line(ticks: int, corners: int) -> Iterator[tuple[Sample, Setpoint]]:
    """Pushing out at 2 m/s 0.2 m short of the stop line, sliding along it at 0.5 m/s:
    the stream holds a position on the line."""
    r = RADIUS_M * math.cos(math.pi / corners) - 1.2
    for k in range(ticks):
        a = k * TICK_S * 0.5 / r
        c, s = math.cos(a), math.sin(a)
        yield (r * c, r * s, -0.5 * s, 0.5 * c), VelocityNed(2.0 * c, 2.0 * s, 0.0)


def accelerating(ticks: int, corners: int) -> Iterator[tuple[Sample, Setpoint]]:
    """An acceleration setpoint, the vehicle crossing at 4 m/s."""
    for k in range(ticks):
        n = -80.0 + (k * TICK_S * 4.0) % 160.0
        yield (n, 0.0, 4.0, 0.0), AccelerationNed(1.0, 0.5, 0.0)


FLIGHTS: dict[str, Flight] = {"hover": hover, "crossing 5 m/s": crossing,
                              "along the stop line": along_the_line,
                              "held at the line": held_at_the_line,
                              "acceleration": accelerating}


def polygon(corners: int) -> tuple[tuple[float, float], ...]:
    return tuple((RADIUS_M * math.cos(2 * math.pi * k / corners),
                  RADIUS_M * math.sin(2 * math.pi * k / corners)) for k in range(corners))


def vehicle(sample: Sample) -> VehicleState:
    n, e, vn, ve = sample
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **_FC))
    vs.fold(FcLocalPosition(1000, n, e, -5.0, vn, ve, 0.0, **_FC), 1.0)
    vs.fold(FcAttitude(1000, 0.0, 0.0, 0.0, **_FC), 1.0)
    return vs


@dataclass(frozen=True)
class Row:
    corners: int
    flight: str
    mean_us: float
    p99_us: float
    limited: float  # share of ticks whose setpoint was changed


def measure(corners: int, flight: Flight, ticks: int) -> tuple[float, float, float]:
    env = Envelope(EnvelopeSettings(polygon=polygon(corners), stop_margin_m=1.0))
    env.set_home(HOME)
    costs, limited = [], 0
    for k, (sample, sp) in enumerate(flight(ticks, corners)):
        vs = vehicle(sample)
        n, e = sample[0], sample[1]
        t0 = time.thread_time_ns()
        _, why = env.shape(sp, vs, 1.0)
        for _ in range(1 + k % 2):  # 30 position reports a second to 20 ticks
            env.breach(n, e, -5.0)
        costs.append((time.thread_time_ns() - t0) / 1000.0)
        limited += why is not None
    costs.sort()
    return statistics.fmean(costs), costs[int(0.99 * (len(costs) - 1))], limited / len(costs)


def run(ticks: int) -> list[Row]:
    rows = []
    for corners in (4, 32, 256):
        for name, flight in FLIGHTS.items():
            mean, p99, limited = measure(corners, flight, ticks)
            rows.append(Row(corners, name, mean, p99, limited))
    return rows


def report(rows: list[Row], ticks: int) -> str:
    lines = [
        "# What the geofence costs a tick (`python -m bench.fence`)",
        "",
        f"{ticks} ticks per row at 20 Hz; per tick one `Envelope.shape` and 1.5 breach "
        f"checks; a regular polygon of radius {RADIUS_M:g} m; CPU time of this thread, "
        f"hot. {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}.",
        "",
        "| corners | flight | mean µs/tick | p99 µs/tick | ticks limited |",
        "|---:|---|---:|---:|---:|",
    ]
    lines += [f"| {r.corners} | {r.flight} | {r.mean_us:.1f} | {r.p99_us:.1f} | "
              f"{100 * r.limited:.0f} % |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "fence-results.md")
    args = parser.parse_args(argv)
    text = report(run(args.ticks), args.ticks)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
