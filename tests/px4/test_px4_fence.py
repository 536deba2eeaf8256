"""Real PX4: the geofence stops a leg before it leaves, measured from PX4's home; a goto
checked whole against it flies to an end inside the stop margin without leaving."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.mqtt.client_motion import MotionAborted
from offboardd.mqtt.client_types import CommandRefused
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.px4.tee import OFFBOARD
from tests.sim.polygon_fence_flight import (
    LEG_EAST_M_S,
    LEG_EAST_S,
    LEG_NW_M_S,
    LEG_NW_S,
    NORTH_WEST_RAD,
    TIP_EAST_M,
    check_legs,
    dented_circle,
)

FENCE_M = 8.0
ALT_M = 5.0


async def test_geofence_stops_a_velocity_leg_and_refuses_a_point_outside(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    envelope = {"max_distance_m": FENCE_M, "stop_margin_m": 1.0}
    async with flying_stack(px4, mosquitto, tmp_path, {"envelope": envelope}) as s:
        await s.client.wait_for_state(lambda st: st["home_known"], 20)
        c, r = s.client, s.record
        await s.take_off(ALT_M)
        refused = None
        try:
            await c.setpoint_confirmed(PositionNed(FENCE_M + 4.0, 0, -ALT_M))
        except CommandRefused as exc:
            refused = exc.reply
        assert refused is not None and not refused.ok
        farthest_m = 0.0
        for _ in range(100):  # 10 s north at 3 m/s: would be 30 m without the fence
            await c.setpoint(VelocityNed(3.0, 0.0, 0.0))
            farthest_m = max(farthest_m, r.position_ned_m[0])
            await asyncio.sleep(0.1)
        assert farthest_m < FENCE_M, farthest_m
        state = c.state
        assert state is not None and state["envelope_limiting"] and r.mode == OFFBOARD
        # A goto to 0.4 m inside the fence (inside the 1 m stop margin): its path was
        # checked whole, so the stream no longer holds it at the margin (the sim's test
        # shows the difference); here, that PX4 flying it to its end does not overshoot
        # the fence (PX4 main: 7.18 m at motion_done, 7.46 m 1 s on, 7.45 m farthest;
        # held at the margin before: 7.04, 7.35).
        await (await c.goto(PositionNed(4.0, 0.0, -ALT_M))).done(30)
        end_m = FENCE_M - 0.4
        leg = await c.goto(PositionNed(end_m, 0.0, -ALT_M))
        goto_farthest_m = 0.0
        while not leg.finished:
            goto_farthest_m = max(goto_farthest_m, r.position_ned_m[0])
            await asyncio.sleep(0.05)
        assert (await leg.done(1))["kind"] == "motion_done"
        at_done_m = r.position_ned_m[0]
        for _ in range(20):
            goto_farthest_m = max(goto_farthest_m, r.position_ned_m[0])
            await asyncio.sleep(0.05)
        after_1s_m = r.position_ned_m[0]
        assert abs(after_1s_m - end_m) < 0.3, r.position_ned_m
        assert goto_farthest_m < FENCE_M and r.mode == OFFBOARD, goto_farthest_m
        # An orbit 0.5 m inside the fence, then "back to the centre": a straight stop
        # along the orbit's tangent would leave the fence (refused before); the goto
        # stops on the orbit's own path first, and PX4 flies it inside.
        orbit = await c.orbit(PositionNed(0.0, 0.0, -ALT_M), FENCE_M - 0.5, speed_m_s=4.0,
                              turns=3)
        t_orbit = r.track[-1][0]
        await asyncio.sleep(12.0)  # out on the circle, at speed
        assert not orbit.finished
        t_goto = r.track[-1][0]
        home = await c.goto(PositionNed(0.0, 0.0, -ALT_M), speed_m_s=3.0)
        with pytest.raises(MotionAborted, match="replaced by goto"):
            await orbit.done(1)
        await home.done(30)
        def farthest_from_home_m(t0: float, t1: float = math.inf) -> float:
            return max(math.hypot(p[0], p[1]) for t, p in r.track if t0 <= t < t1)

        orbit_farthest_m = farthest_from_home_m(t_orbit, t_goto)
        stop_farthest_m = farthest_from_home_m(t_goto)
        # PX4 tracks a 4 m/s orbit up to ~0.7 m outside its circle (main 8.07, v1.17.0
        # 8.17, v1.16.2 7.99 m): never a breach (breach_tolerance_m, 1 m by default), which
        # would have ended OFFBOARD
        assert max(orbit_farthest_m, stop_farthest_m) < FENCE_M + 1.0 and r.mode == OFFBOARD
        # motions are timed: at motion_done PX4 still trails the plan (v1.16.2: 1.03 m
        # short of the centre once); a second on it is there
        await asyncio.sleep(1.0)
        assert math.hypot(*r.position_ned_m[:2]) < 0.5, r.position_ned_m
        measured.update(fence_m=FENCE_M, farthest_north_m=round(farthest_m, 2),
                        refusal_code=refused.code, goto_end_m=end_m,
                        goto_at_done_m=round(at_done_m, 2),
                        goto_after_1s_m=round(after_1s_m, 2),
                        goto_farthest_m=round(goto_farthest_m, 2),
                        orbit_farthest_m=round(orbit_farthest_m, 2),
                        stop_then_goto_farthest_m=round(stop_farthest_m, 2))


async def test_a_many_cornered_concave_polygon_stops_legs_at_its_walls(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """A 128-corner polygon fence (the shaping uses only the edges near the vehicle,
    offboardd/core/polygon.py): a leg north-west at 3 m/s stops inside its round part,
    a leg due east short of the dent's tip, where two walls meet."""
    polygon = dented_circle()
    envelope = {"polygon": polygon, "polygon_frame": "local", "stop_margin_m": 1.0}
    async with flying_stack(px4, mosquitto, tmp_path, {"envelope": envelope}) as s:
        await s.client.wait_for_state(lambda st: st["home_known"], 20)
        c, r = s.client, s.record
        await s.take_off(ALT_M)
        heading, speed = NORTH_WEST_RAD, LEG_NW_M_S
        farthest_m = 0.0
        for _ in range(round(LEG_NW_S * 10)):  # 24 m without the fence
            await c.setpoint(VelocityNed(speed * math.cos(heading), speed * math.sin(heading),
                                         0.0))
            farthest_m = max(farthest_m, math.hypot(*r.position_ned_m[:2]))
            await asyncio.sleep(0.1)
        state = c.state
        assert state is not None and state["envelope_limiting"] and r.mode == OFFBOARD
        await (await c.goto(PositionNed(0.0, 0.0, -ALT_M))).done(30)
        farthest_east_m = -math.inf
        for _ in range(round(LEG_EAST_S * 10)):  # due east towards the dent's tip
            await c.setpoint(VelocityNed(0.0, LEG_EAST_M_S, 0.0))
            farthest_east_m = max(farthest_east_m, r.position_ned_m[1])
            await asyncio.sleep(0.1)
        assert r.mode == OFFBOARD
    measured.update(corners=len(polygon), farthest_north_west_m=round(farthest_m, 2),
                    tip_east_m=round(TIP_EAST_M, 2), farthest_east_m=round(farthest_east_m, 2))
    check_legs(farthest_m, farthest_east_m)
