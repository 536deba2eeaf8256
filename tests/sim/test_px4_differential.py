"""Where the sim disagreed with real PX4: one test per difference, over real UDP.

Each was found by running the same pymavlink steps against PX4 SIH (main "v1.19.0-dev",
v1.16.2, v1.17.0) and against `offboardd sim`, and comparing what came back (review of
2026-11-27). The figures quoted are the PX4 measurements; real PX4 is the oracle.
"""

from __future__ import annotations

from tests.sim.client import LOITER, OFFBOARD, d, offboard_and_arm, running_sim

_ARMED = d.MAV_MODE_FLAG_SAFETY_ARMED


async def test_offboard_heartbeat_base_mode_has_no_guided_or_auto_flags() -> None:
    # [SITL main and v1.16.2] HEARTBEAT.base_mode in OFFBOARD: 145 armed (SAFETY_ARMED |
    # STABILIZE | CUSTOM_MODE), 17 disarmed; AUTO.LOITER 157 armed / 29 disarmed. The sim
    # sent 157 / 29 in OFFBOARD too (GUIDED and AUTO set).
    async with running_sim() as (sim, peer):
        hb = await peer.heartbeat_mode(LOITER)
        assert hb.base_mode == 29
        await offboard_and_arm(sim, peer)
        hb = await peer.wait_for(lambda m: m.get_type() == "HEARTBEAT"
                                 and m.custom_mode == OFFBOARD and m.base_mode & _ARMED)
        assert hb.base_mode == 145
        peer.arm(False, force=True)
        hb = await peer.wait_for(lambda m: m.get_type() == "HEARTBEAT"
                                 and not m.base_mode & _ARMED)
        assert (hb.custom_mode, hb.base_mode) == (OFFBOARD, 17)
