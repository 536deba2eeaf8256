"""Real PX4: `emergency_stop` in flight. The daemon stops its stream and force-disarms
(MAV_CMD_COMPONENT_ARM_DISARM, param2 21196); PX4 cuts the motors in the air (Commander's
disarm() skips its landed check only when forced) and the vehicle falls. The daemon never
streams or asks for anything again until a new explicit command. The sim is held to the
same checks (tests/sim/emergency_stop_flight.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.sim.emergency_stop_flight import ALT_M, StopSeen, check_stop

MAV_CMD_COMPONENT_ARM_DISARM = 400


async def test_emergency_stop_in_flight_disarms_px4_and_the_daemon_stays_stopped(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        r = s.record
        await s.take_off(ALT_M)
        loop = asyncio.get_running_loop()
        tried_t = loop.time()
        refused = await s.client.send_document({"v": 1, "cmd": "disarm"})
        asked_t = loop.time()
        reply = await s.client.emergency_stop(confirm=True)
        replied_t = loop.time()
        on_ground_t = await s.until(lambda rec: -rec.position_ned_m[2] < 0.3
                                    and abs(rec.velocity_ned_m_s[2]) < 0.1, 10, "on the ground")
        await asyncio.sleep(3.0)  # nothing more from the daemon while it lies there
        state = await s.client.wait_for_state(lambda st: not st["armed"], 2)
        disarms = [c for c in r.commands if c.fields["command"] == MAV_CMD_COMPONENT_ARM_DISARM
                   and c.t >= tried_t]
        acks = [a for a in r.acks if a.fields["command"] == MAV_CMD_COMPONENT_ARM_DISARM
                and a.t >= tried_t]
        disarmed = [t for t, armed in r.armed if not armed and t >= asked_t]
        seen = StopSeen(
            disarm_refused=str(refused.extra.get("reason")),
            reply_ok=reply.ok, reply_message=reply.message,
            replied_s=replied_t - asked_t,
            disarm_params=[(c.fields["param1"], c.fields["param2"]) for c in disarms],
            ack_results=[int(a.fields["result"]) for a in acks],
            disarmed_s=disarmed[0] - asked_t if disarmed else None,
            fell_s=on_ground_t - asked_t,
            setpoints_after_s=[sp.t - asked_t for sp in r.setpoints if sp.t > asked_t + 0.1],
            offboard_requests_after=len([q for q in r.offboard_requests() if q.t > asked_t]),
            arm_requests_after=len([c for c in disarms if c.fields["param1"] == 1]),
            phase=str(state.get("phase")), reason=str(state.get("reason")),
            streaming=bool(state.get("streaming")), armed_state=bool(state.get("armed")),
            modes_after=[hex(m) for t, m in r.modes if t > asked_t])
    measured.update(seen.figures())
    check_stop(seen)
