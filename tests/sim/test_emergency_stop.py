"""`emergency_stop` in flight on the sim, end to end (the daemon's runtime, a real
mosquitto, the sim over real UDP), judged by the checks the real-PX4 tier uses
(tests/sim/emergency_stop_flight.py, tests/px4/test_px4_emergency_stop.py)."""

from __future__ import annotations

import asyncio

import pytest

from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.test_e2e_sim import fc_ready, stack
from tests.sim.emergency_stop_flight import ALT_M, StopSeen, check_stop

pytestmark = pytest.mark.integration
MAV_CMD_COMPONENT_ARM_DISARM = 400


async def test_emergency_stop_in_flight_disarms_and_the_daemon_stays_stopped(
    mosquitto: Broker,
) -> None:
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0.0, 0.0, -ALT_M), arm=True)).ok
        vehicle, record = s.sim.vehicle, s.sim.record
        loop = asyncio.get_running_loop()
        await wait_until(lambda: abs(-vehicle.position_ned_m[2] - ALT_M) < 0.4, "up", 20)
        tried_t = loop.time()
        refused = await c.send_document({"v": 1, "cmd": "disarm"})
        asked_t = loop.time()
        reply = await c.emergency_stop(confirm=True)
        replied_t = loop.time()
        await wait_until(lambda: -vehicle.position_ned_m[2] < 0.3
                         and abs(vehicle.velocity_ned_m_s[2]) < 0.1, "on the ground", 10)
        on_ground_t = loop.time()
        await asyncio.sleep(3.0)
        state = await c.wait_for_state(lambda st: not st["armed"], 2)
        commands = [e for e in record.commands if e.command == MAV_CMD_COMPONENT_ARM_DISARM
                    and e.time_s >= tried_t]
        disarmed = [t for t, armed, _ in record.armed_changes if not armed and t >= asked_t]
        seen = StopSeen(
            disarm_refused=str(refused.extra.get("reason")),
            reply_ok=reply.ok, reply_message=reply.message, replied_s=replied_t - asked_t,
            disarm_params=[(e.params[0], e.params[1]) for e in commands],
            ack_results=[a.result for a in record.acks_for(MAV_CMD_COMPONENT_ARM_DISARM)
                         if a.time_s >= tried_t],
            disarmed_s=disarmed[0] - asked_t if disarmed else None,
            fell_s=on_ground_t - asked_t,
            setpoints_after_s=[e.time_s - asked_t for e in record.setpoints
                               if e.time_s > asked_t + 0.1],
            offboard_requests_after=len([t for t in record.offboard_requests if t > asked_t]),
            arm_requests_after=len([e for e in commands if e.params[0] == 1]),
            phase=str(state["phase"]), reason=str(state["reason"]),
            streaming=bool(state["streaming"]), armed_state=bool(state["armed"]),
            modes_after=[m.new_mode for m in record.mode_changes if m.time_s > asked_t])
    check_stop(seen)
