"""MAV_CMD_GET_MESSAGE_INTERVAL on the onboard link, asked the same way of the sim
(tests/sim/test_message_interval.py) and of real PX4 SIH (tests/px4/
test_px4_message_interval.py): a differential test, the sim held to what PX4 answers.

[SITL main 2026-11-28] ACCEPTED, with MESSAGE_INTERVAL sent first: the stream's configured
interval on the link asked on, in µs; -1 for a stream PX4 does not have, has stopped, or
sends at "unlimited" rate (GPS_RAW_INT in onboard mode), also once set back to its
default with 0. REQUEST_MESSAGE of MESSAGE_INTERVAL (param2: the id) answers the same.
[SITL v1.17.0] the same; [SITL v1.16.2] 0 where the stream is absent or stopped, and
REQUEST_MESSAGE of MESSAGE_INTERVAL DENIED.
"""

from __future__ import annotations

import asyncio

from tests.sim.client import Peer, d

# (message id, interval µs) as PX4's onboard mode has them at boot
# (None: absent, which v1.16.2 answers 0 and later releases -1)
AT_BOOT = ((d.MAVLINK_MSG_ID_HEARTBEAT, 1_000_000), (d.MAVLINK_MSG_ID_LOCAL_POSITION_NED, 33_333),
           (d.MAVLINK_MSG_ID_ATTITUDE, 10_000), (d.MAVLINK_MSG_ID_BATTERY_STATUS, 2_000_000),
           (d.MAVLINK_MSG_ID_GPS_RAW_INT, -1), (9999, None))  # fmt: skip
# SET_MESSAGE_INTERVAL (id, interval µs), then what GET answers
CHANGES = ((d.MAVLINK_MSG_ID_ATTITUDE, -1, None),
           (d.MAVLINK_MSG_ID_LOCAL_POSITION_NED, 100_000, 100_000),
           (d.MAVLINK_MSG_ID_GPS_RAW_INT, 200_000, 200_000),
           (d.MAVLINK_MSG_ID_GPS_RAW_INT, 0, -1))  # fmt: skip


async def ask(peer: Peer, msg_id: int, *, via_request: bool = False) -> tuple[int, bool]:
    """(interval µs, whether MESSAGE_INTERVAL came before the ACCEPTED ACK)."""
    since = len(peer.received)
    if via_request:
        peer.command(d.MAV_CMD_REQUEST_MESSAGE, d.MAVLINK_MSG_ID_MESSAGE_INTERVAL, msg_id)
        command = d.MAV_CMD_REQUEST_MESSAGE
    else:
        peer.command(d.MAV_CMD_GET_MESSAGE_INTERVAL, msg_id)
        command = d.MAV_CMD_GET_MESSAGE_INTERVAL
    ack = await peer.ack(command)
    assert ack.result == d.MAV_RESULT_ACCEPTED, ack
    await asyncio.sleep(0.2)  # an answer after the ACK would be here by now
    order = [m for _, m in peer.received[since:]
             if m is ack or (m.get_type() == "MESSAGE_INTERVAL" and m.message_id == msg_id)]
    assert len(order) == 2, order
    answer = order[0] if order[0] is not ack else order[1]
    return int(answer.interval_us), order[0] is answer


async def check_message_intervals(peer: Peer, release: tuple[int, int]) -> dict[str, object]:
    """Ask, change, ask again; assert PX4's answers. What was seen, for the report."""
    absent = 0 if release < (1, 17) else -1
    seen: dict[str, object] = {}
    for msg_id, expected in AT_BOOT:
        got, first = await ask(peer, msg_id)
        seen[f"boot_{msg_id}"] = got
        assert (got, first) == (absent if expected is None else expected, True), (msg_id, got)
    if release >= (1, 17):
        got, _ = await ask(peer, d.MAVLINK_MSG_ID_LOCAL_POSITION_NED, via_request=True)
        assert got == 33_333, got
    else:
        peer.command(d.MAV_CMD_REQUEST_MESSAGE, d.MAVLINK_MSG_ID_MESSAGE_INTERVAL,
                     d.MAVLINK_MSG_ID_LOCAL_POSITION_NED)  # fmt: skip
        ack = await peer.ack(d.MAV_CMD_REQUEST_MESSAGE)
        assert ack.result == d.MAV_RESULT_DENIED, ack
    for msg_id, interval_us, expected in CHANGES:
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, interval_us)
        assert (await peer.ack(d.MAV_CMD_SET_MESSAGE_INTERVAL)).result == d.MAV_RESULT_ACCEPTED
        got, _ = await ask(peer, msg_id)
        seen[f"set_{msg_id}_{interval_us}"] = got
        assert got == (absent if expected is None else expected), (msg_id, interval_us, got)
    return seen
