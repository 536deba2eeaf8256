"""Real PX4: a terrain-altitude setpoint without PX4's terrain estimate.

PX4 drops SET_POSITION_TARGET_GLOBAL_INT in MAV_FRAME_GLOBAL_TERRAIN_ALT_INT while its
terrain estimate is invalid (mavlink_receiver.cpp returns before any proof of life), so
streaming one loses OFFBOARD to the loss failsafe (measured on v1.17.0 SIH with a bare
pymavlink peer: AUTO.RTL within 4 s). The daemon must refuse it (`estimate_missing`) while
PX4's ESTIMATOR_STATUS lacks POS_VERT_AGL, and, when the estimate goes while a terrain
setpoint streams, hold where the vehicle is instead of sending what PX4 would drop.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from offboardd.core.setpoints import AltitudeFrame, GlobalPosition
from offboardd.mqtt.client_types import CommandRefused
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.px4.tee import OFFBOARD

ALT_M = 5.0


async def test_a_terrain_setpoint_without_terrain_is_refused_and_offboard_kept(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.take_off(ALT_M)
        start_t = s.record.modes[-1][0]
        lat, lon, _ = s.record.global_position
        terrain = GlobalPosition(lat, lon, ALT_M, AltitudeFrame.TERRAIN)
        assert (await s.client.setpoint_confirmed(terrain)).ok  # PX4's terrain is valid
        for _ in range(20):
            await s.client.setpoint(terrain)
            await asyncio.sleep(0.1)
        # SIH's range finder out of range and range aiding off: EKF2's terrain estimate
        # goes invalid (ESTIMATOR_STATUS loses POS_VERT_AGL within 1-2 s). The commander
        # streams on: the daemon must hold rather than send what PX4 would drop.
        px4.param_set("SIH_DISTSNSR_MAX", 1.0)
        px4.param_set("EKF2_RNG_CTRL", 0)
        for _ in range(80):  # 8 s
            await s.client.setpoint(terrain)
            await asyncio.sleep(0.1)
        assert [m for t, m in s.record.modes if t > start_t] == [], "PX4 left OFFBOARD"
        assert "terrain estimate is invalid" in s.daemon.log_path.read_text(), (
            "no warning that the terrain setpoint is held")
        with pytest.raises(CommandRefused) as refused:
            await s.client.setpoint_confirmed(terrain)
        reply = refused.value.reply
        assert reply.extra.get("reason") == "estimate_missing", reply
        for _ in range(30):  # 3 s more: still held, still ours
            await s.client.heartbeat()
            await asyncio.sleep(0.1)
        assert [m for t, m in s.record.modes if t > start_t] == [], "PX4 left OFFBOARD"
        assert s.record.mode == OFFBOARD
        measured["terrain_refused"] = reply.message
