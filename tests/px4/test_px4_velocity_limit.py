"""Real PX4: MPC_XY_VEL_MAX cuts the velocity setpoint keeping the position error's part
first (PositionControl -> ControlMath::constrainXY). Flown over the onboard link with
raw setpoints and judged by the check the sim's test uses (tests/sim/following.py).
"""

from __future__ import annotations

import asyncio

from tests.px4.px4_process import Px4Sitl
from tests.px4.raw_peer import hovering_peer
from tests.sim import following as f
from tests.sim.client import position_sp

_POS_VEL = 2496  # position and velocity: acceleration and yaw rate ignored


async def test_px4_keeps_the_position_part_at_mpc_xy_vel_max(
    px4: Px4Sitl, measured: dict[str, object]
) -> None:
    px4.param_set("MPC_XY_VEL_MAX", f.PRIORITY_LIMIT_M_S)
    peer = await hovering_peer(px4, f.ALT_M)
    to = (px4.system_id, 1)
    try:
        _, m = peer.of_type("LOCAL_POSITION_NED")[-1]
        start = (float(m.x), float(m.y))
        t0 = asyncio.get_running_loop().time()
        peer.stream(lambda: position_sp(east=f.PRIORITY_EAST_M, down=-f.ALT_M, mask=_POS_VEL,
                                        vx=f.PRIORITY_FF_NORTH_M_S, target=to))
        await asyncio.sleep(f.PRIORITY_AFTER_S + 0.2)
        after = [m for t, m in peer.of_type("LOCAL_POSITION_NED", t0)
                 if t - t0 <= f.PRIORITY_AFTER_S]  # fmt: skip
        end = (float(after[-1].x), float(after[-1].y))
    finally:
        peer.close()
    measured.update(north_m=round(end[0] - start[0], 2), east_m=round(end[1] - start[1], 2))
    f.check_position_first(start, end)
