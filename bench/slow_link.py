"""The stream plan on a 57,600-baud link (issue 18): bytes/s each way on the sim's pty.

The sim serves its companion link on a pty that carries what a 57,600-baud UART (8N1)
carries, ~5,760 bytes/s each way, and drops the rest as a full UART does (sim/transports).
`offboardd`'s runtime (in this process, no MQTT) engages, arms and hovers at 20 Hz under
the sim's px4 load; over a window we count what crossed the line each way, what PX4
(the sim) had to drop, and how the setpoints arrived. Once with `[mavlink.streams]
plan = "px4"` (PX4's streams left alone), once with the default plan ("minimal").

    python -m bench.slow_link [--seconds 10] [--out bench/]   # writes slow-link-results.md
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.commander import plan_settled
from offboardd.config import config_from_dict
from offboardd.core.commands import CommanderHeartbeat, Engage
from offboardd.core.setpoints import PositionNed
from offboardd.runtime import Runtime
from offboardd.sim import SimConfig, SimServer

BAUD = 57600
_SETTLE_S = 2.0


async def _measure(plan: str, seconds: float) -> dict[str, Any]:
    sim_config = SimConfig(udp_bind=None, gcs_bind=None, pty=True, pty_baud=BAUD, profile="px4")
    async with SimServer(sim_config) as sim:
        config = config_from_dict({
            "mavlink": {"url": f"serial://{sim.pty_path}:{BAUD}", "signing_timestamp_file": "",
                        "streams": {"plan": plan}},
            "recorder": {"mode": "off"}}, {})
        runtime = Runtime(config, mqtt=False)
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        beats = itertools.count()

        async def lease() -> None:
            while True:
                runtime.submit(CommanderHeartbeat(f"hb{next(beats)}"))
                await asyncio.sleep(0.25)

        keeper = asyncio.create_task(lease())
        try:
            await asyncio.wait_for(runtime.running.wait(), 5)
            started = time.monotonic()
            for attempt in itertools.count():  # until the FC's parameters are read
                reply = await asyncio.wait_for(runtime.submit(
                    Engage(f"e{attempt}", PositionNed(0.0, 0.0, -3.0), arm=True)), 60)
                if reply.ok:
                    break
                assert time.monotonic() - started < 90, reply
                await asyncio.sleep(0.5)
            ready_s = time.monotonic() - started
            assert runtime.engine is not None
            # the window measures the hover, not the plan
            while not plan_settled(runtime.engine.snapshot(0.0).as_dict()):
                assert time.monotonic() - started < 120
                await asyncio.sleep(0.1)
            await asyncio.sleep(_SETTLE_S)
            pty = sim.pty
            assert pty is not None
            before = (pty.bytes_from_companion, pty.bytes_to_companion, pty.dropped_bytes)
            t0 = sim.now()
            await asyncio.sleep(seconds)
            t1 = sim.now()
            after = (pty.bytes_from_companion, pty.bytes_to_companion, pty.dropped_bytes)
            got = [s.time_s for s in sim.record.setpoints if t0 <= s.time_s <= t1]
            streams = sim.link("pty").streams  # what PX4's rate fitting left of each stream
            local_hz = streams.rates_hz.get("LOCAL_POSITION_NED", 0.0) * streams.rate_mult
            gaps = [b - a for a, b in itertools.pairwise(got)]
            window = t1 - t0
            return {
                "plan": plan,
                "start_to_engaged_s": round(ready_s, 1),
                "to_fc_bytes_s": round((after[0] - before[0]) / window),
                "from_fc_bytes_s": round((after[1] - before[1]) / window),
                "from_fc_dropped_bytes_s": round((after[2] - before[2]) / window),
                "line_bytes_s": BAUD / 10,
                "setpoints_per_s": round(len(got) / window, 2),
                "fc_rate_mult": round(streams.rate_mult, 3),
                "local_position_hz": round(local_hz, 1),
                "max_setpoint_gap_ms": round(1000 * max(gaps), 1) if gaps else None,
                "stream_plan": runtime.engine.snapshot(0.0).as_dict().get("stream_plan")
                if runtime.engine else None,
            }
        finally:
            keeper.cancel()
            stop.set()
            await asyncio.wait_for(task, 20)


def write(runs: list[dict[str, Any]], seconds: float, out: Path) -> None:
    (out / "slow-link-results.json").write_text(json.dumps(runs, indent=1) + "\n")
    lines = [
        "# The stream plan on a 57,600-baud link: measured",
        "",
        f"`python -m bench.slow_link --seconds {seconds:g}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: the sim's pty carrying "
        f"{BAUD / 10:.0f} bytes/s each way (8N1), px4 load fitted as PX4 fits it to a serial "
        f"link (streams scaled into baud/20 = {BAUD / 20:.0f} bytes/s, HEARTBEAT excepted), "
        "offboardd hovering in OFFBOARD at 20 Hz (no MQTT).",
        "",
        "| plan | to the FC bytes/s | from the FC bytes/s | dropped by the FC's UART bytes/s "
        "| setpoints/s at the FC | largest setpoint gap ms | start -> engaged s "
        "| PX4's rate multiplier | LOCAL_POSITION_NED /s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(f"| {r['plan']} | {r['to_fc_bytes_s']} | {r['from_fc_bytes_s']} "
                     f"| {r['from_fc_dropped_bytes_s']} | {r['setpoints_per_s']} "
                     f"| {r['max_setpoint_gap_ms']} | {r['start_to_engaged_s']} "
                     f"| {r['fc_rate_mult']} | {r['local_position_hz']} |")
    (out / "slow-link-results.md").write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.slow_link", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args(argv)
    runs = [asyncio.run(_measure(plan, args.seconds)) for plan in ("px4", "minimal")]
    write(runs, args.seconds, args.out)
    print(f"bench.slow_link: wrote {args.out / 'slow-link-results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
