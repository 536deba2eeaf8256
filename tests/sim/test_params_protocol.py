"""Parameter protocol (read by name and index, list, set with echo; byte-wise ints) and
the small connect-time replies QGroundControl and MAVSDK need, over real UDP."""

from __future__ import annotations

import asyncio

from offboardd.mavlink.params import decode_param_value, encode_param_value, param_id_str
from offboardd.sim.params import PARAM_SPECS
from tests.sim.client import d, running_sim

INT32 = d.MAV_PARAM_TYPE_INT32
REAL32 = d.MAV_PARAM_TYPE_REAL32
EXPECTED = {
    "COM_OF_LOSS_T": (REAL32, 1.0), "COM_OBL_RC_ACT": (INT32, 0),
    "COM_RC_OVERRIDE": (INT32, 1), "COM_RCL_EXCEPT": (INT32, 0), "MAV_FWDEXTSP": (INT32, 1),
    "MAV_SYS_ID": (INT32, 1), "COM_DISARM_LAND": (REAL32, 2.0),
}  # fmt: skip


async def test_param_list_has_px4_defaults_with_byte_wise_integers() -> None:
    """v1.16.2's table (1.18's: test_px4_versions_link.py)."""
    async with running_sim(px4_version="1.16") as (_sim, peer):
        peer.send(d.MAVLink_param_request_list_message(1, 1))
        await asyncio.sleep(0.3)
        values = {param_id_str(m.param_id): m for _, m in peer.of_type("PARAM_VALUE")}
        assert len(values) == len(PARAM_SPECS)  # v1.16's own table
        assert {m.param_count for m in values.values()} == {len(PARAM_SPECS)}
        assert sorted(m.param_index for m in values.values()) == list(range(len(PARAM_SPECS)))
        for name, (ptype, default) in EXPECTED.items():
            msg = values[name]
            assert msg.param_type == ptype
            assert decode_param_value(msg.param_value, ptype) == default
        raw = values["COM_RC_OVERRIDE"].param_value
        assert raw != 1.0 and 0 < raw < 1e-40  # 1 as int32 bytes: a denormal, not 1.0


async def test_param_read_by_name_and_by_index_and_set_echoes_to_all() -> None:
    """v1.16.2: COM_RC_OVERRIDE exists; an unknown name set gets a STATUSTEXT."""
    async with running_sim(px4_version="1.16") as (sim, peer):
        peer.send(d.MAVLink_param_request_read_message(1, 1, b"", 3))
        by_index = await peer.wait_for(lambda m: m.get_type() == "PARAM_VALUE")
        assert by_index.param_index == 3
        peer.send(d.MAVLink_param_request_read_message(1, 1, b"MAV_SYS_ID", -1))
        by_name = await peer.wait_for(lambda m: m.get_type() == "PARAM_VALUE")
        assert decode_param_value(by_name.param_value, by_name.param_type) == 1
        peer.send(d.MAVLink_param_set_message(
            1, 1, b"COM_RC_OVERRIDE", encode_param_value(2, INT32), INT32))  # fmt: skip
        echo = await peer.wait_for(lambda m: m.get_type() == "PARAM_VALUE")
        assert decode_param_value(echo.param_value, echo.param_type) == 2
        assert sim.vehicle.params.get("COM_RC_OVERRIDE") == 2
        peer.send(d.MAVLink_param_set_message(1, 1, b"COM_OF_LOSS_T", 2.5, REAL32))
        echo = await peer.wait_for(lambda m: m.get_type() == "PARAM_VALUE")
        assert echo.param_value == 2.5 and sim.vehicle.params.get("COM_OF_LOSS_T") == 2.5
        peer.heartbeat(d.MAV_TYPE_GCS)  # the text goes only where PX4 saw a GCS
        await asyncio.sleep(0.05)
        peer.send(d.MAVLink_param_set_message(1, 1, b"NO_SUCH_PARAM", 1.0, REAL32))
        text = await peer.wait_for(lambda m: m.get_type() == "STATUSTEXT")
        assert "NO_SUCH_PARAM" in text.text
        peer.send(d.MAVLink_param_request_read_message(2, 1, b"MAV_SYS_ID", -1))  # not us
        await asyncio.sleep(0.1)
        assert len(peer.of_type("PARAM_VALUE")) == 4


async def test_mission_downloads_are_empty_and_timesync_is_answered() -> None:
    async with running_sim() as (_sim, peer):
        for mission_type in (0, 1, 2):
            peer.send(d.MAVLink_mission_request_list_message(1, 1, mission_type))
        peer.send(d.MAVLink_timesync_message(0, 123456789))
        await asyncio.sleep(0.2)
        counts = [(m.count, m.mission_type) for _, m in peer.of_type("MISSION_COUNT")]
        assert counts == [(0, 0), (0, 1), (0, 2)]
        replies = [m for _, m in peer.of_type("TIMESYNC") if m.ts1 == 123456789]
        assert len(replies) == 1 and replies[0].tc1 > 0
