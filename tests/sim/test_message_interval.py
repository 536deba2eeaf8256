"""GET_MESSAGE_INTERVAL on the sim's onboard link, judged by what PX4 main answers
(tests/sim/message_interval.py; the same check on PX4: tests/px4/test_px4_message_interval.py).
"""

from __future__ import annotations

import pytest

from tests.sim.client import SIM_RELEASES, running_sim
from tests.sim.message_interval import check_message_intervals


@pytest.mark.parametrize("px4_version", sorted(SIM_RELEASES))
async def test_the_sim_answers_get_message_interval_as_px4(px4_version: str) -> None:
    async with running_sim(px4_version=px4_version) as (_sim, peer):
        await check_message_intervals(peer, SIM_RELEASES[px4_version])
