"""Real PX4 against the built-in sim: how each follows the daemon's moving plans.

The same motions, streamed by the same daemon through the same tee, are flown by PX4 SIH
and by `offboardd sim`: straight gotos at 3 and 10 m/s, a rounded corner and an orbit at
3 m/s, with the motion clock's pacing off (`max_lead_m = 0`), so the plan runs on time and
what is measured is the vehicle's own following: the lag at cruise in time and distance,
the planned point's largest lead (the 10 m/s acceleration), the worst distance from the
streamed path (the corner's overshoot) and the orbit's radial error. The sim must follow
the way PX4 does (bench/motion-results.md; offboardd/sim/dynamics.py), within ~30 %.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from bench.following import (
    Following,
    Planned,
    corner_errors_m,
    radial_errors_m,
    straight_figures,
)
from bench.tracking import percentile
from offboardd.core.setpoints import PositionNed
from offboardd.mqtt.client_motion import MotionHandle
from offboardd.sim import SimServer
from offboardd.sim.config import SimConfig
from tests.conftest import Broker, free_port
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import Stack, flying_stack
from tests.px4.tee import OFFBOARD

ALT_M = 5.0
PACING_OFF = {"motion": {"max_lead_m": 0.0}}
SETTLE_S = 4.0  # after a timed plan ends the vehicle still closes in on its end


def _following(s: Stack, t0: float, t1: float) -> Following:
    plan = [Planned(x.t, (x.fields["x"], x.fields["y"], x.fields["z"]),
                    (x.fields["vx"], x.fields["vy"], x.fields["vz"]))
            for x in s.record.setpoints
            if x.name == "SET_POSITION_TARGET_LOCAL_NED" and t0 <= x.t <= t1]
    return Following(plan, [(t, p) for t, p in s.record.track if t0 <= t <= t1])


def _dump(path: Path, f: Following) -> None:
    path.write_text(json.dumps({"plan": [(p.t_s, p.pos_ned_m, p.vel_ned_m_s) for p in f.plan],
                                "flown": f.flown}))


async def _fly(command: Awaitable[MotionHandle]) -> tuple[float, float]:
    """Send a motion, wait for its end and the vehicle's settling: (start, end) times."""
    t0 = time.monotonic()
    await (await command).done(timeout_s=60)
    await asyncio.sleep(SETTLE_S)
    return t0, time.monotonic()


async def fly_the_motions(s: Stack, dump: Path | None = None) -> dict[str, float]:
    """The scenario, on whichever vehicle `s` flies: its following figures (and, to
    `dump`, what was streamed and flown, as JSON, to look at)."""
    await s.take_off(ALT_M)
    await asyncio.sleep(2.0)
    c, fig = s.client, dict[str, float]()
    n0, e0, _ = s.record.position_ned_m
    for speed_m_s, north_m in ((3.0, 20.0), (10.0, -70.0)):
        target = PositionNed(n0 + north_m, e0, -ALT_M)
        t0, t1 = await _fly(c.goto(target, speed_m_s=speed_m_s))
        found = straight_figures(_following(s, t0, t1), speed_m_s)
        fig.update({f"goto_{speed_m_s:g}_{k}": v for k, v in found.items()})
        n0 += north_m
    corner = [PositionNed(n0 + 16.0, e0, -ALT_M), PositionNed(n0 + 16.0, e0 + 16.0, -ALT_M)]
    t0, t1 = await _fly(c.path(corner, speed_m_s=3.0, corner_radius_m=3.0))
    errors = corner_errors_m(_following(s, t0, t1), (n0 + 16.0, e0, -ALT_M))
    fig["corner_max_error_m"] = round(errors[-1], 3)
    fig["corner_median_error_m"] = round(percentile(errors, 0.5), 3)
    centre = (n0 + 16.0, e0 + 10.0, -ALT_M)
    t0, t1 = await _fly(c.orbit(PositionNed(*centre), 6.0, speed_m_s=3.0))
    f = _following(s, t0, t1)
    fig.update({f"orbit_{k}": v for k, v in radial_errors_m(f, centre, 6.0, 3.0).items()})
    lags = [x for t, p in f.cruise(3.0) if (x := f.time_lag_s(t, p)) is not None]
    fig["orbit_lag_s"] = round(sorted(lags)[len(lags) // 2], 3) if lags else math.nan
    assert s.record.mode == OFFBOARD and s.record.is_armed
    if dump is not None:
        _dump(dump, _following(s, 0.0, math.inf))
    await c.land()
    return fig


@dataclass
class _SimAsPx4:
    """What flying_stack asks of a Px4Sitl, for the built-in sim on its own ports."""

    companion_port: int
    px4_port: int
    gcs_port: int
    system_id: int = 1

    def log_text(self) -> str:
        return ""


async def fly_on_the_sim(mosquitto: Broker, tmp_path: Path) -> dict[str, float]:
    vehicle = _SimAsPx4(companion_port=free_port(), px4_port=free_port(), gcs_port=free_port())
    config = SimConfig(udp_bind=("127.0.0.1", vehicle.px4_port),
                       udp_remote=("127.0.0.1", vehicle.companion_port), gcs_bind=None)
    async with SimServer(config), flying_stack(cast(Px4Sitl, vehicle), mosquitto,
                                               tmp_path, PACING_OFF) as s:  # fmt: skip
        return await fly_the_motions(s, tmp_path / "sim-following.json")


# (figure, how far the sim's may be from PX4's: a share of PX4's, or metres / seconds)
# The worst corner is one corner's luck against PX4's own timing: PX4 itself read 0.948
# and 0.383 m in two runs of v1.17.0 (0.732 and 0.946 on v1.16.2, 0.619 and 0.624 on
# main) while the sim, deterministic, reads 0.651.
COMPARED = {
    "goto_3_cruise_lag_s": (0.3, 0.0), "goto_3_cruise_lag_m": (0.3, 0.0),
    "goto_10_cruise_lag_s": (0.3, 0.0), "goto_10_cruise_lag_m": (0.3, 0.0),
    "goto_10_max_lead_m": (0.3, 0.0),
    "corner_max_error_m": (0.6, 0.1), "orbit_radial_median_m": (0.3, 0.1),
    "orbit_lag_s": (0.3, 0.0),
}


@pytest.mark.timeout(420)  # two flights of ~1.5 min each, and PX4's boot
async def test_the_sim_follows_a_moving_plan_as_px4_does(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    sim_dir = tmp_path / "sim"
    sim_dir.mkdir()
    on_sim = await fly_on_the_sim(mosquitto, sim_dir)
    measured.update({f"sim_{k}": v for k, v in on_sim.items()})
    mosquitto.start()  # forget the sim's retained state: the next client must wait for PX4
    async with flying_stack(px4, mosquitto, tmp_path, PACING_OFF) as s:
        on_px4 = await fly_the_motions(s, tmp_path / "px4-following.json")
    measured.update({f"px4_{k}": v for k, v in on_px4.items()})
    far = {k: (on_sim[k], on_px4[k]) for k, (share, slack) in COMPARED.items()
           if not abs(on_sim[k] - on_px4[k]) <= share * abs(on_px4[k]) + slack}
    assert not far, far
