"""A raw MAVLink peer on PX4's onboard link, hovering in OFFBOARD: for the tier's
differential tests that stream exactly the setpoint they judge, without the daemon."""

from __future__ import annotations

import asyncio

from offboardd.mavlink.codec import Message
from tests.px4.px4_process import Px4Sitl
from tests.sim.client import OFFBOARD, Peer, d, position_sp


def is_local(m: Message) -> bool:
    return bool(m.get_type() == "LOCAL_POSITION_NED")


async def hovering_peer(px4: Px4Sitl, alt_m: float, settle_s: float = 2.0) -> Peer:
    """Connected, armed in OFFBOARD and holding `alt_m` over the origin (close it)."""
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    to = (px4.system_id, 1)
    peer.stream(lambda: position_sp(down=-alt_m, target=to))
    await asyncio.sleep(0.5)
    peer.set_mode(OFFBOARD)
    await peer.ack(d.MAV_CMD_DO_SET_MODE)
    peer.arm()
    await peer.ack(d.MAV_CMD_COMPONENT_ARM_DISARM)
    await peer.wait_for(lambda m: is_local(m) and abs(m.z + alt_m) < 0.2 and abs(m.vz) < 0.2,
                        30)  # fmt: skip
    await asyncio.sleep(settle_s)
    return peer
