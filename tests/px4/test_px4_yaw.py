"""Real PX4: a 90° yaw step in an offboard hover, turned by the attitude loop (not at
MPC_YAWRAUTO_MAX, the limit of PX4's own modes); judged by the check the sim's test uses
(tests/sim/following.py).
"""

from __future__ import annotations

import asyncio
import math

from tests.px4.px4_process import Px4Sitl
from tests.px4.raw_peer import hovering_peer
from tests.sim import following as f
from tests.sim.client import position_sp


async def test_px4_turns_a_yaw_step_at_its_attitude_loops_pace(
    px4: Px4Sitl, measured: dict[str, object]
) -> None:
    peer = await hovering_peer(px4, f.ALT_M)
    to = (px4.system_id, 1)
    try:
        t0 = asyncio.get_running_loop().time()
        peer.stream(lambda: position_sp(down=-f.ALT_M, yaw=math.radians(f.YAW_STEP_DEG),
                                        target=to))  # fmt: skip
        await asyncio.sleep(2.0)
        track = [(t - t0, math.degrees(m.yaw), math.degrees(m.yawspeed))
                 for t, m in peer.of_type("ATTITUDE", t0)]  # fmt: skip
    finally:
        peer.close()
    measured.update(
        at_80_deg_s=round(next(t for t, yaw, _ in track if yaw >= 80.0), 2),
        peak_deg_s=round(max(rate for _, _, rate in track), 1),
        overshoot_deg=round(max(yaw for _, yaw, _ in track) - f.YAW_STEP_DEG, 1),
    )
    f.check_yaw_step(track)
