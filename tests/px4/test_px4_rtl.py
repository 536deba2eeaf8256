"""Real PX4: Return (AUTO.RTL) from near home, from farther out below RTL_RETURN_ALT, and
from above it; flown over the onboard link and judged by the checks the sim's test uses
(tests/sim/rtl_flight.py: a differential test, the sim is held to what this measures).
"""

from __future__ import annotations

import pytest

from tests.px4.px4_process import Px4Sitl
from tests.px4.release import release_on_link
from tests.sim.client import Peer
from tests.sim.rtl_flight import CASES, ReturnCase, check_return, fly_return


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_px4_returns_climbing_first_and_lands_while_closing(
    px4: Px4Sitl, measured: dict[str, object], case: ReturnCase
) -> None:
    for name, value in case.params.items():
        px4.param_set(name, value)
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    try:
        release = await release_on_link(peer)
        track = await fly_return(peer, case)
    finally:
        peer.close()
    measured.update(case=case.name, **track.figures())
    check_return(track, case, release, real_px4=True)
