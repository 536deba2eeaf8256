"""Return as PX4 flies it (offboardd/sim/rtl.py): its altitude, its legs, where it lands.

The sim returned at the altitude it flew and descended over home; PX4 main climbs first
(to 60 m by default once more than 10 m out) and lands while it closes (tests/sim/
rtl_flight.py has what was measured). The cases are judged by the checks the real-PX4
tier uses (tests/px4/test_px4_rtl.py): over real UDP for one, on the model with injected
time for the rest.
"""

from __future__ import annotations

import math

import pytest

from offboardd.sim.params import ParamTable
from offboardd.sim.px4_versions import DEFAULT_VERSION, version_by_name
from offboardd.sim.rtl import return_altitude_m
from tests.sim.client import QUICK_TAKEOFF, SIM_RELEASES, d, position_sp, running_sim
from tests.sim.rtl_flight import (
    CASES,
    NEAR,
    ReturnCase,
    ReturnTrack,
    check_return,
    fly_return,
)
from tests.sim.test_model import Harness

RTL_MODE = (1, 4, 5)  # DO_SET_MODE: custom, AUTO, RTL


def _params(**values: float) -> ParamTable:
    return ParamTable(values, version_by_name(DEFAULT_VERSION))


@pytest.mark.parametrize(("distance_m", "above_home_m", "values", "expected_m"), [
    (6.0, 3.0, {}, 12.0),  # within NAV_ACC_RAD: 2 x the distance
    (2.0, 8.0, {}, 8.0),  # ... never below where it flies
    (15.0, 3.0, {}, 60.0),  # beyond RTL_MIN_DIST: RTL_RETURN_ALT
    (15.0, 70.0, {}, 70.0),  # ... or higher, where it flies
    (15.0, 3.0, {"RTL_RETURN_ALT": 15.0}, 15.0),  # the lowest beyond NAV_ACC_RAD is
    (15.0, 25.0, {"RTL_RETURN_ALT": 15.0}, 25.0),  # 2 x 10 m, capped by RTL_RETURN_ALT
    # within RTL_MIN_DIST, outside NAV_ACC_RAD: the cone, at least 2 x NAV_ACC_RAD
    (30.0, 3.0, {"RTL_MIN_DIST": 40.0}, 30.0),
    (30.0, 3.0, {"RTL_MIN_DIST": 40.0, "RTL_CONE_ANG": 65}, 20.0),
    (6.0, 3.0, {"RTL_CONE_ANG": 0}, 60.0),  # no cone: always RTL_RETURN_ALT
    (6.0, 3.0, {"NAV_ACC_RAD": 2.0}, 6.0),  # v1.16-1.17's 2 m: the cone, 6 / tan 45°
])  # fmt: skip
def test_return_altitude_is_px4s(distance_m: float, above_home_m: float,
                                 values: dict[str, float], expected_m: float) -> None:
    got = return_altitude_m(_params(**values), distance_m, above_home_m)
    assert got == pytest.approx(expected_m, abs=1e-6)


def test_nav_acc_rad_is_the_releases_multicopter_default() -> None:
    # rc.mc_defaults set 2 m until #27738 (release/1.18 and main: the parameter's 10 m)
    got = {v: ParamTable({}, version_by_name(v)).get_float("NAV_ACC_RAD") for v in SIM_RELEASES}
    assert got == {"1.16": 2.0, "1.17": 2.0, "1.18": 10.0, "main": 10.0}


def _returning(case: ReturnCase, px4_version: str = DEFAULT_VERSION, **params: float
               ) -> Harness:  # fmt: skip
    """The model hovering `case.away_m` north at `case.up_m`, just switched to AUTO.RTL."""
    h = Harness(params={**QUICK_TAKEOFF, **case.params, **params}, px4_version=px4_version)
    h.offboard_armed(lambda: position_sp(north=0.0, down=-case.up_m))
    h.run(10.0)
    h.stream = lambda: position_sp(north=case.away_m, down=-case.up_m)
    h.run(12.0)
    h.stream = None
    h.command(d.MAV_CMD_DO_SET_MODE, *RTL_MODE)
    assert h.v.mode_name == "AUTO.RTL"
    return h


def _fly_on_the_model(case: ReturnCase, px4_version: str) -> tuple[Harness, ReturnTrack]:
    h = _returning(case, px4_version)
    track = ReturnTrack(h.v.home.point.ned_m)
    t0 = h.t
    while h.v.armed and h.t - t0 < 120:
        h.run(0.1)
        n, e, down = h.v.position_ned_m
        track.samples.append((h.t - t0, n, e, down))
    return h, track


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("px4_version", sorted(SIM_RELEASES))
def test_return_on_the_model_flies_like_px4(case: ReturnCase, px4_version: str) -> None:
    h, track = _fly_on_the_model(case, px4_version)
    check_return(track, case, SIM_RELEASES[px4_version])
    assert not h.v.armed


def test_negative_land_delay_loiters_over_home_for_good() -> None:
    h = _returning(NEAR, RTL_DESCEND_ALT=8.0, RTL_LAND_DELAY=-1.0)
    h.run(60.0)
    n, e, down = h.v.position_ned_m
    assert h.v.armed and h.v.mode_name == "AUTO.RTL"
    assert math.hypot(n, e) < 0.5 and abs(-down - 8.0) < 0.3


async def test_return_over_udp_flies_like_px4() -> None:
    async with running_sim(params={**QUICK_TAKEOFF, **NEAR.params}) as (_sim, peer):
        track = await fly_return(peer, NEAR)
    check_return(track, NEAR, SIM_RELEASES[DEFAULT_VERSION])
