"""The commander of the daemon workloads: engages over MQTT, keeps the lease, probes latency.

It uses `offboardd.client` as a mission script would, but renews the lease itself (every
0.25 s and as the client's own loop does: QoS 0, no waiting) so the moment of the last
renewal is known to the nanosecond. Phases: engage; settle (and the stream plan done);
the measurement window (heartbeats only: every setpoint the daemon sends is a scheduled
tick); latency probes
(setpoints on the stream topic at 20 Hz, each a hover at 3 m with a north offset that
differs from the previous one, stamped with the wall clock at publish: the proxy finds the
first MAVLink frame carrying it; the daemon sends a new setpoint at once, off its schedule);
then a zero-velocity setpoint, silence, and the lease lapses: the daemon holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.procs import Usage, peak_rss_mb
from offboardd.client import OffboardClient
from offboardd.core.setpoints import PositionNed, Setpoint, VelocityNed
from offboardd.mavlink.translate_out import type_mask

LEASE_S = 1.0  # engine.command_timeout_s (the default) in the config below
_HEARTBEAT_PERIOD_S = 0.25  # the client's default: 4 renewals per 1 s lease
_PROBE_PERIOD_S = 0.05
_PROBE_STEPS = 20  # north offsets 0.00..0.19 m: consecutive probes always differ
_HOVER_DOWN_M = -3.0
_FINAL = VelocityNed(0.0, 0.0, 0.0)
_READY_TIMEOUT_S = 30.0


@dataclass
class Drive:
    """What the commander saw and measured (wall-clock ns, like the proxy's stamps)."""

    t0_ns: int = 0
    t1_ns: int = 0
    cpu_per_s: float = 0.0
    peak_rss_mb: float = 0.0
    wakeups_per_s: float = 0.0
    probes: list[tuple[int, float]] = field(default_factory=list)  # (publish_ns, north_m)
    last_publish_ns: int = 0
    last_type_mask: int = type_mask(_FINAL)
    lease_s: float = LEASE_S


def write_config(path: Path, fc_port: int, broker_port: int, rate_hz: float,  # noqa: PLR0917
                 vehicle_id: str, extra: Sequence[str] = ()) -> Path:  # fmt: skip
    """A daemon config; `vehicle_id` is new per workload so no retained state of an
    earlier daemon on the same broker passes for this one's. `extra` holds settings,
    "section.key = TOML value" each (the workload's, then `python -m bench --daemon-set`'s):
    a key set again replaces what was there, as TOML itself would refuse a duplicate."""
    sections: dict[str, dict[str, str]] = {}
    base = (f'mavlink.url = "udpin://127.0.0.1:{fc_port}"',
            f"engine.setpoint_rate_hz = {rate_hz}", f"engine.command_timeout_s = {LEASE_S}",
            'mqtt.host = "127.0.0.1"', f"mqtt.port = {broker_port}",
            f'mqtt.vehicle_id = "{vehicle_id}"', 'log.level = "warning"', 'log.format = "json"',
            # the shipped default (recording flights) measured, written beside the config
            f'recorder.dir = "{path.parent / "flights"}"')  # fmt: skip
    for setting in (*base, *extra):
        section, _, assignment = setting.partition(".")
        key = assignment.partition("=")[0].strip()
        sections.setdefault(section.strip(), {})[key] = assignment.strip()
    path.write_text("".join(f"[{name}]\n" + "".join(f"{line}\n" for line in lines.values())
                            for name, lines in sections.items()))  # fmt: skip
    return path


def _fc_ready(state: dict[str, Any]) -> bool:
    return state.get("com_of_loss_t_s") is not None and bool(
        state.get("estimates", {}).get("local_position")
    )


def plan_settled(state: dict[str, Any]) -> bool:
    """The daemon's state says its stream plan is done (or that there is none)."""
    return int((state.get("stream_plan") or {}).get("pending", 0)) == 0


async def _publish(c: OffboardClient, sp: Setpoint, drive: Drive) -> int:
    sent_ns = time.time_ns()
    await c.setpoint(sp)
    drive.last_publish_ns = sent_ns
    return sent_ns


async def _heartbeats(c: OffboardClient, drive: Drive) -> None:
    while True:
        drive.last_publish_ns = time.time_ns()
        await c.renew_lease()
        await asyncio.sleep(_HEARTBEAT_PERIOD_S)


async def _probe(c: OffboardClient, drive: Drive, seconds: float) -> None:
    for k in range(max(2, round(seconds / _PROBE_PERIOD_S))):
        north_m = (k % _PROBE_STEPS) * 0.01
        sent_ns = await _publish(c, PositionNed(north_m, 0.0, _HOVER_DOWN_M), drive)
        drive.probes.append((sent_ns, north_m))
        await asyncio.sleep(_PROBE_PERIOD_S)


async def drive(pid: int, broker_port: int, vehicle_id: str,  # noqa: PLR0917
                settle_s: float, seconds: float, probe_s: float) -> Drive:  # fmt: skip
    """Engage, hover `settle_s`, measure the daemon `pid` for `seconds`, probe the command
    latency for `probe_s`, then let the lease lapse."""
    result = Drive()
    async with OffboardClient("127.0.0.1", broker_port, vehicle_id,
                              heartbeat_period_s=3600.0) as c:  # fmt: skip
        await c.wait_for_state(_fc_ready, timeout_s=_READY_TIMEOUT_S)
        beating = asyncio.create_task(_heartbeats(c, result))
        reply = await c.engage(PositionNed(0.0, 0.0, _HOVER_DOWN_M), arm=True)
        if not reply.ok:
            raise RuntimeError(f"the daemon refused to engage: {reply}")
        await asyncio.sleep(settle_s)
        # the window measures the hover, not the stream plan's first seconds (57 rows, one
        # a tick, while PX4 still sends everything)
        await c.wait_for_state(plan_settled, timeout_s=_READY_TIMEOUT_S)
        start = Usage.of(pid)
        await asyncio.sleep(seconds)
        end = Usage.of(pid)
        result.t0_ns, result.t1_ns = start.t_ns, end.t_ns
        result.cpu_per_s, result.wakeups_per_s = start.rates_until(end)
        result.peak_rss_mb = peak_rss_mb(pid)
        await _probe(c, result, probe_s)
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
        for _ in range(3):  # the last renewals: a setpoint the hold is told apart from
            await _publish(c, _FINAL, result)
            await asyncio.sleep(_PROBE_PERIOD_S)
    await asyncio.sleep(LEASE_S + 0.5)  # gone without a release: the lease lapses
    return result
