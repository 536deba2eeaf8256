"""Real PX4: the geofence stops a leg before it leaves, measured from PX4's home."""

from __future__ import annotations

import asyncio
from pathlib import Path

from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.mqtt.client_types import CommandRefused
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.px4.tee import OFFBOARD

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
        measured.update(fence_m=FENCE_M, farthest_north_m=round(farthest_m, 2),
                        refusal_code=refused.code)
