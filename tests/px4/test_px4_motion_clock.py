"""Real PX4: a motion's clock waits for the vehicle (core/motion_clock.py).

From the ground, at PX4's default MPC_TKO_RAMP_T, an engaging goto must not report
motion_done before the vehicle is there (it did: PX4 first climbs ~3 s after arming). In
the air, a fast goto must be flown as planned: the clock is not slowed by PX4's ordinary
following, and it ends with the vehicle near its end. The planned point's lead and the
clock's rate (state.motion, 10/s) are measured and reported."""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path
from typing import Any

from offboardd.core.setpoints import PositionNed
from offboardd.mqtt.client_motion import MotionHandle
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import Stack, flying_stack
from tests.px4.tee import OFFBOARD

ALT_M = 5.0


async def _flown(s: Stack, handle: MotionHandle, timeout_s: float) -> dict[str, Any]:
    """Wait for the motion's end, sampling state.motion meanwhile."""
    leads: list[float] = []
    rates: list[float] = []

    async def sample() -> None:
        while True:
            shown = (s.client.state or {}).get("motion") or {}
            if shown.get("kind") == "goto" and shown.get("started"):
                if shown.get("lead_m") is not None:
                    leads.append(float(shown["lead_m"]))
                rates.append(float(shown["clock_rate"]))
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    t0 = asyncio.get_running_loop().time()
    try:
        await handle.done(timeout_s=timeout_s)
    finally:
        sampler.cancel()
    planned = re.search(r"in ([0-9.]+) s", handle.reply.message)
    return {"planned_s": float(planned.group(1)) if planned else None,
            "took_s": round(asyncio.get_running_loop().time() - t0, 2),
            "max_lead_m": round(max(leads, default=math.nan), 2),
            "min_clock_rate": round(min(rates, default=math.nan), 3),
            "samples": len(rates)}


def _trailing_warnings(s: Stack) -> list[str]:
    return [str(e["message"]) for e in s.daemon.events()
            if e.get("event") == "engine_warning" and e.get("reason") == "vehicle_trailing"]


async def test_an_engaging_goto_from_the_ground_ends_with_the_vehicle_there(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    target = (0.0, 0.0, -ALT_M)
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.fc_ready()
        handle = await s.client.goto(PositionNed(*target), speed_m_s=2.0, engage=True, arm=True)
        fig = await _flown(s, handle, timeout_s=40)
        at_done = s.record.position_ned_m
        off_m = math.dist(at_done, target)
        measured.update({f"takeoff_{k}": v for k, v in fig.items()})
        measured["takeoff_off_target_at_done_m"] = round(off_m, 2)
        assert s.record.mode == OFFBOARD and s.record.is_armed
        # within half of max_lead_m (2 m) as the daemon judged it, from an estimate
        # ~33 ms old: the tee's view may differ by a little
        assert off_m <= 1.3, measured
        assert fig["min_clock_rate"] < 0.9, measured  # it did wait for the take-off
        await s.client.land()


async def test_a_fast_goto_in_the_air_is_flown_as_planned(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.take_off(ALT_M)
        for speed_m_s in (3.0, 10.0):
            north_m = 40.0 if speed_m_s > 5 else -20.0
            start = s.record.position_ned_m
            target = (start[0] + north_m, start[1], -ALT_M)
            handle = await s.client.goto(PositionNed(*target), speed_m_s=speed_m_s)
            fig = await _flown(s, handle, timeout_s=40)
            off_m = math.dist(s.record.position_ned_m, target)
            tag = f"goto_{speed_m_s:g}_m_s"
            measured.update({f"{tag}_{k}": v for k, v in fig.items()})
            measured[f"{tag}_off_target_at_done_m"] = round(off_m, 2)
            assert off_m <= 1.3, measured
            # PX4 follows ~0.45 s behind: paced by it, not held back (<= 1.5x planned)
            assert fig["took_s"] <= 1.5 * fig["planned_s"] + 1.0, measured
        assert s.record.mode == OFFBOARD and s.record.is_armed
        measured["trailing_warnings"] = len(_trailing_warnings(s))
        assert not _trailing_warnings(s), _trailing_warnings(s)
        await s.client.land()
