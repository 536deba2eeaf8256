"""Real PX4: MAV_CMD_GET_MESSAGE_INTERVAL on the onboard link, judged by the check the sim's
test uses (tests/sim/message_interval.py: a differential test)."""

from __future__ import annotations

from tests.px4.px4_process import Px4Sitl
from tests.px4.release import release_on_link
from tests.sim.client import Peer
from tests.sim.message_interval import check_message_intervals


async def test_px4_answers_get_message_interval_with_the_links_intervals(
    px4: Px4Sitl, measured: dict[str, object]
) -> None:
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    try:
        measured.update(await check_message_intervals(peer, await release_on_link(peer)))
    finally:
        peer.close()
