"""A raw MAVLink peer on PX4's onboard link, hovering in OFFBOARD: for the tier's
differential tests that stream exactly the setpoint they judge, without the daemon."""

from __future__ import annotations

import asyncio

from tests.px4.px4_process import Px4Sitl
from tests.sim.client import Peer
from tests.sim.home_flight import is_local, offboard_at


async def hovering_peer(px4: Px4Sitl, alt_m: float, settle_s: float = 2.0) -> Peer:
    """Connected, armed in OFFBOARD and holding `alt_m` over the origin (close it)."""
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    await offboard_at(peer, 0.0, -alt_m)
    await peer.wait_for(lambda m: is_local(m) and abs(m.z + alt_m) < 0.2 and abs(m.vz) < 0.2,
                        30)  # fmt: skip
    await asyncio.sleep(settle_s)
    return peer
