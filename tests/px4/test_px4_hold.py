"""Real PX4: Hold (AUTO.LOITER) asked for at speed brakes onto a point ahead, judged by the
checks the sim's test uses (tests/sim/hold_flight.py: a differential test, the sim is held
to what this measures)."""

from __future__ import annotations

import pytest

from tests.px4.px4_process import Px4Sitl
from tests.sim.client import Peer
from tests.sim.hold_flight import CASES, HoldCase, check_hold, fly_hold


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_px4_hold_at_speed_brakes_onto_its_predicted_stop(
    px4: Px4Sitl, measured: dict[str, object], case: HoldCase
) -> None:
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    try:
        track = await fly_hold(peer, case)
    finally:
        peer.close()
    measured.update(case=case.name, **track.figures())
    check_hold(track, case)
