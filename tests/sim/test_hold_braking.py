"""Hold entered at speed brakes onto the point ahead where PX4 predicts the vehicle stops
(offboardd/sim/smoothing.StopAhead), judged by the checks the real-PX4 tier uses
(tests/sim/hold_flight.py, tests/px4/test_px4_hold.py): over real UDP for one case, on the
model with injected time for the other, the same steps."""

from __future__ import annotations

import math

import pytest

from offboardd.sim.smoothing import StopAhead, braking_distance_m
from tests.sim.client import QUICK_TAKEOFF, d, position_sp, running_sim
from tests.sim.hold_flight import (
    CASES,
    VELOCITY_MASK,
    HoldTrack,
    check_hold,
    fly_hold,
    px4_braking_m,
)
from tests.sim.test_model import Harness

LOITER_MODE = (1, 4, 3)  # DO_SET_MODE: custom, AUTO, LOITER


async def test_hold_at_speed_over_udp_brakes_like_px4() -> None:
    async with running_sim(params=dict(QUICK_TAKEOFF)) as (_sim, peer):
        track = await fly_hold(peer, CASES[0])
    check_hold(track, CASES[0])


def test_hold_at_speed_on_the_model_brakes_like_px4() -> None:
    case = CASES[1]
    h = Harness(params=dict(QUICK_TAKEOFF))
    h.offboard_armed(lambda: position_sp(north=0.0, down=-3.0))
    h.run(6.0)
    h.stream = lambda: position_sp(mask=VELOCITY_MASK, vx=case.speed_m_s, down=0.0)
    while abs(h.v.velocity_ned_m_s[0] - case.speed_m_s) >= 0.05 * case.speed_m_s:  # fly_hold's
        h.run(0.05)
    h.run(1.0)
    n, e, _ = h.v.position_ned_m
    vn, ve, _ = h.v.velocity_ned_m_s
    h.stream = None
    h.command(d.MAV_CMD_DO_SET_MODE, *LOITER_MODE)
    assert h.v.mode_name == "AUTO.LOITER"
    track, t0 = HoldTrack((n, e), math.hypot(vn, ve)), h.t
    while h.t - t0 < 4.0:
        h.run(1 / 30)  # LOCAL_POSITION_NED's rate on PX4's onboard link
        pn, pe, _ = h.v.position_ned_m
        vn, ve, _ = h.v.velocity_ned_m_s
        track.samples.append((h.t - t0, pn, pe, vn, ve))
    check_hold(track, case)


def test_the_stop_point_is_pxs_prediction_along_the_course() -> None:
    assert braking_distance_m(4.0, 3.0) == pytest.approx(px4_braking_m(4.0))
    stop = StopAhead((10.0, 20.0), (0.0, -2.0), 4.0, 3.0)  # west at 2 m/s
    assert stop.stop_ne_m == pytest.approx((10.0, 20.0 - px4_braking_m(2.0)))
    hovering = StopAhead((1.0, 2.0), (0.0, 0.0), 4.0, 3.0)
    assert hovering.stop_ne_m == (1.0, 2.0)
    for _ in range(100):
        pos, vel, _acc = hovering.step(0.01)
    assert pos == (1.0, 2.0) and vel == (0.0, 0.0)


def test_the_trajectory_ends_at_rest_on_the_point_without_passing_it() -> None:
    stop = StopAhead((0.0, 0.0), (4.0, 0.0), 4.0, 3.0)
    furthest, t = 0.0, 0.0
    while t < 20.0:
        (n, _e), (vn, _ve), _acc = stop.step(0.004)
        furthest, t = max(furthest, n), t + 0.004
    assert furthest <= stop.length_m + 1e-9
    assert n == pytest.approx(stop.length_m, abs=0.01) and abs(vn) < 0.01
