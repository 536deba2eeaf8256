"""Home is PX4's, not the local origin: set again at arming and take-off, followed by
GLOBAL_POSITION_INT.relative_alt and RTL, moved by MAV_CMD_DO_SET_HOME; over real UDP.

PX4 main (HomePosition.cpp, Commander.cpp) moves home where the vehicle arms, takes off,
or sits disarmed more than a metre away; [SITL main 2026-11-27] landed 10.4 m north and
armed again, HOME_POSITION moved there. The sim kept home at its local origin.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from tests.sim.client import (
    LAND,
    LOITER,
    NAN,
    QUICK_TAKEOFF,
    Peer,
    climb,
    d,
    position_sp,
    running_sim,
)
from tests.sim.home_flight import (
    check_home_flight,
    check_set_home_on_the_ground,
    fly_home_flight,
    home_now,
    local_ned,
    set_home_on_the_ground,
)

SET_HOME = d.MAV_CMD_DO_SET_HOME
ARM = d.MAV_CMD_COMPONENT_ARM_DISARM


async def test_home_moves_where_the_vehicle_lands_and_arms_and_rtl_returns_there() -> None:
    short_return = {"RTL_RETURN_ALT": 3.0, "RTL_DESCEND_ALT": 3.0}  # as on PX4's test
    async with running_sim(params={**QUICK_TAKEOFF, **short_return}) as (_sim, peer):
        flight = await fly_home_flight(peer, away_m=6.0)
    check_home_flight(flight, away_m=6.0)


def _relative_alt_m(peer: Peer) -> float:
    return float(peer.of_type("GLOBAL_POSITION_INT")[-1][1].relative_alt) * 1e-3


async def test_do_set_home_here_then_at_a_point_moves_relative_alt_and_survives_arming(
) -> None:  # fmt: skip
    # Commander.cpp VEHICLE_CMD_DO_SET_HOME: param1 1 -> setHomePosition(force) here;
    # param1 0 -> setManually(lat, lon, alt): manual_home, which setHomePosition(false)
    # (arming, take-off, a disarmed vehicle away from it) leaves alone. relative_alt is
    # GLOBAL_POSITION_INT's gpos.alt - home.alt. The sim answered UNSUPPORTED.
    async with running_sim(params=QUICK_TAKEOFF) as (sim, peer):
        cfg = sim.config  # where it booted: the local origin
        await climb(sim, peer, down=-5.0, tol_m=0.1)
        assert abs(_relative_alt_m(peer) - 5.0) < 0.2
        peer.command(SET_HOME, 1)
        assert (await peer.ack(SET_HOME)).result == d.MAV_RESULT_ACCEPTED
        here = await home_now(peer)
        assert abs(here.ned_m[2] + 5.0) < 0.2 and abs(here.alt_m - cfg.home_alt_m - 5.0) < 0.2
        await asyncio.sleep(0.3)
        assert abs(_relative_alt_m(peer)) < 0.2  # at home's height

        # COMMAND_INT: degE7 (COMMAND_LONG's float32 param5 is ~0.4 m coarse at 47 deg)
        peer.send(d.MAVLink_command_int_message(
            1, 1, d.MAV_FRAME_GLOBAL, SET_HOME, 0, 0, 0, 0, 0, NAN,
            round(cfg.home_lat_deg * 1e7), round(cfg.home_lon_deg * 1e7), cfg.home_alt_m + 2))
        assert (await peer.ack(SET_HOME)).result == d.MAV_RESULT_ACCEPTED
        manual = await home_now(peer)
        assert max(abs(manual.ned_m[0]), abs(manual.ned_m[1])) < 0.01, manual
        assert abs(manual.ned_m[2] + 2.0) < 0.01 and abs(manual.alt_m - cfg.home_alt_m - 2) < 0.01
        await asyncio.sleep(0.3)
        assert abs(_relative_alt_m(peer) - 3.0) < 0.2

        peer.stream(lambda: position_sp(north=3.0, down=-5.0))  # land 3 m away, arm there
        assert await sim.wait_until(lambda: abs(sim.vehicle.position_ned_m[0] - 3.0) < 0.2, 8)
        peer.set_mode(LAND)
        peer.stop_stream()
        assert await sim.wait_until(lambda: not sim.vehicle.armed, 20)
        peer.set_mode(LOITER)
        peer.arm()
        assert (await peer.ack(ARM)).result == d.MAV_RESULT_ACCEPTED
        assert await home_now(peer) == replace(manual, vehicle_ned_m=local_ned(peer))
        assert abs(_relative_alt_m(peer) + 2.0) < 0.2  # on the ground, 2 m below home

        peer.command(SET_HOME, 0, 0, 0, 0, NAN, cfg.home_lon_deg, cfg.home_alt_m)
        assert (await peer.ack(SET_HOME)).result == d.MAV_RESULT_DENIED  # lat not finite
        peer.command(SET_HOME, 1)  # here again: automatic from now on
        assert (await peer.ack(SET_HOME)).result == d.MAV_RESULT_ACCEPTED
        assert abs((await home_now(peer)).ned_m[0] - 3.0) < 0.2


async def test_do_set_home_is_denied_and_arming_keeps_home_with_com_home_en_0() -> None:
    async with running_sim(params={**QUICK_TAKEOFF, "COM_HOME_EN": 0}) as (sim, peer):
        peer.command(SET_HOME, 1)
        assert (await peer.ack(SET_HOME)).result == d.MAV_RESULT_DENIED
        await climb(sim, peer, down=-2.0)
        assert (await home_now(peer)).time_usec == 0  # the boot home, never set again


async def test_do_set_home_on_the_ground_as_px4_answers_it() -> None:
    # the steps tests/px4/test_px4_home.py flies on PX4 SIH main, with the same checks
    async with running_sim() as (_sim, peer):
        steps = await set_home_on_the_ground(peer)
    check_set_home_on_the_ground(steps)
