"""Where the sim disagreed with real PX4: one test per difference, over real UDP.

Each was found by running the same pymavlink steps against PX4 SIH (main "v1.19.0-dev",
v1.16.2, v1.17.0) and against `offboardd sim`, and comparing what came back (review of
2026-11-27). The figures quoted are the PX4 measurements; real PX4 is the oracle.
"""

from __future__ import annotations

import asyncio

from tests.sim.client import LOITER, OFFBOARD, d, offboard_and_arm, position_sp, running_sim

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


async def test_statustext_only_to_links_that_sent_a_gcs_heartbeat() -> None:
    # [SITL main, v1.17.0, v1.16.2] a companion link (ONBOARD_CONTROLLER heartbeat) got no
    # STATUSTEXT while PX4 dropped 20/s invalid setpoints (type_mask 4095, frame 7) and
    # while it failed safe on offboard loss; after a GCS heartbeat on the same link: one
    # "SET_POSITION_TARGET_LOCAL_NED invalid" per message, "Failsafe activated". The sim
    # sent them all to every link.
    async with running_sim() as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        peer.stream(lambda: position_sp(down=-1.0, mask=4095))
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "AUTO.RTL", 2.5)
        assert sim.record.statustexts  # PX4 said it, on its GCS links
        assert not peer.of_type("STATUSTEXT")
        peer.heartbeat(d.MAV_TYPE_GCS)
        await asyncio.sleep(0.05)
        since = asyncio.get_running_loop().time()
        await asyncio.sleep(0.3)
        texts = [str(m.text) for _, m in peer.of_type("STATUSTEXT", since)]
        assert len(texts) >= 4 and set(texts) == {"SET_POSITION_TARGET_LOCAL_NED invalid"}
