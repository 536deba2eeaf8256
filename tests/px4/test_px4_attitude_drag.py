"""Real PX4: attitude flight meets SIH's airframe drag (SIH_KDV), which nothing in PX4
feeds back in that flight. Pitched from a hover with a raw SET_ATTITUDE_TARGET and
judged by the check the sim's test uses (tests/sim/following.py).
"""

from __future__ import annotations

import asyncio

from tests.px4.px4_process import Px4Sitl
from tests.px4.raw_peer import hovering_peer
from tests.px4.release import release_on_link
from tests.sim import following as f
from tests.sim.client import d

_ATTITUDE_ONLY = 7  # body rates ignored


async def test_px4_attitude_flight_settles_at_sihs_drag(
    px4: Px4Sitl, measured: dict[str, object]
) -> None:
    peer = await hovering_peer(px4, f.ALT_M)
    to = (px4.system_id, 1)
    try:
        release = await release_on_link(peer)
        _, m = peer.of_type("LOCAL_POSITION_NED")[-1]
        start_n = float(m.x)
        t0 = asyncio.get_running_loop().time()
        peer.stream(lambda: d.MAVLink_set_attitude_target_message(
            0, to[0], to[1], _ATTITUDE_ONLY, list(f.pitch_quaternion(f.PITCH_DEG)), 0.0, 0.0,
            0.0, f.PITCH_THRUST))  # fmt: skip
        await asyncio.sleep(f.PITCH_FOR_S + 0.2)
        after = [m for t, m in peer.of_type("LOCAL_POSITION_NED", t0)
                 if t - t0 <= f.PITCH_FOR_S]  # fmt: skip
        distance, speed = float(after[-1].x) - start_n, float(after[-1].vx)
        peer.stream(lambda: d.MAVLink_set_attitude_target_message(
            0, to[0], to[1], _ATTITUDE_ONLY, [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0,
            f.PITCH_THRUST))  # level again before the vehicle is stopped
        await asyncio.sleep(0.5)
    finally:
        peer.close()
    measured.update(distance_m=round(distance, 2), speed_m_s=round(speed, 2))
    f.check_pitched(distance, speed, 0.15 if release >= (1, 18) else 0.25)
