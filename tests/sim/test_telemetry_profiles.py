"""Per-type telemetry rates of each profile, measured over real UDP (px4-offboard.md §5)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from offboardd.sim.streams import (
    HEAVY_FILLER_HZ,
    PROFILES,
    PX4_UNSENT_STREAMS,
    StreamScheduler,
    frame_bytes,
)
from tests.sim.client import d, running_sim

WINDOW_S = 2.0
# [SITL] the onboard link's main rates (px4-offboard.md §5)
PX4_RATES_HZ = {
    "ATTITUDE": 100, "ATTITUDE_QUATERNION": 50, "GLOBAL_POSITION_INT": 50,
    "HIGHRES_IMU": 50, "LOCAL_POSITION_NED": 30, "ODOMETRY": 30, "TIMESYNC": 10,
    "ALTITUDE": 10, "VFR_HUD": 10, "SERVO_OUTPUT_RAW": 10, "POSITION_TARGET_LOCAL_NED": 10,
}  # fmt: skip


async def _measure(profile: str) -> tuple[Counter[str], int, int]:
    async with running_sim(profile=profile) as (sim, peer):
        await asyncio.sleep(0.5)  # let every stream get going
        start = sim.now()
        await asyncio.sleep(WINDOW_S)
        counts = Counter(m.get_type() for t, m in peer.received if t >= start)
        return counts, peer.codec.stats.bad_crc, peer.codec.stats.unknown_id


@pytest.mark.parametrize("profile", ["px4", "light", "heavy"])
async def test_each_profile_sends_its_per_type_rates(profile: str) -> None:
    counts, bad_crc, unknown = await _measure(profile)
    assert bad_crc == 0
    expected = dict(PROFILES[profile])
    # what pymavlink 2.4.50 does not know (ESC_INFO, ESC_STATUS, CURRENT_EVENT_SEQUENCE...):
    # counted by the peer's codec (from the start: 0.5 s + the window), not decoded
    beyond_hz = sum(expected.pop(name) for name in list(expected)
                    if not hasattr(d, f"MAVLINK_MSG_ID_{name}"))
    seconds = 0.5 + WINDOW_S
    assert 0.75 * beyond_hz * seconds - 2 <= unknown <= 1.2 * beyond_hz * seconds + 2
    if profile == "px4":
        assert beyond_hz == 23.5  # as PX4 SIH main sends them, by id on the wire
    if profile == "heavy":
        expected.update(HEAVY_FILLER_HZ)
    for name, rate_hz in expected.items():
        measured = counts[name] / WINDOW_S
        if rate_hz >= 5:
            assert 0.75 * rate_hz <= measured <= 1.2 * rate_hz, (name, measured, rate_hz)
        else:
            assert counts[name] <= rate_hz * WINDOW_S + 1.5, (name, counts[name])
    total_hz = sum(counts.values()) / WINDOW_S
    if profile == "px4":
        for name, rate_hz in PX4_RATES_HZ.items():
            assert 0.75 * rate_hz <= counts[name] / WINDOW_S <= 1.2 * rate_hz, name
        assert 330 <= total_hz + beyond_hz <= 500  # [SITL] ~430 msg/s
        assert len(counts) >= 28
    elif profile == "light":
        assert total_hz <= 30
    else:
        assert 1700 <= total_hz <= 2300  # ~2,000 msg/s for benchmarks


async def test_set_message_interval_changes_one_stream_on_one_link() -> None:
    async with running_sim(profile="light") as (sim, peer):
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, d.MAVLINK_MSG_ID_ATTITUDE, 20_000)  # 50 Hz
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, d.MAVLINK_MSG_ID_GPS_RAW_INT, -1)  # off
        await asyncio.sleep(0.3)
        start = sim.now()
        await asyncio.sleep(1.0)
        counts = Counter(m.get_type() for t, m in peer.received if t >= start)
        assert 38 <= counts["ATTITUDE"] <= 60 and counts["GPS_RAW_INT"] == 0
        acks = [m.result for _, m in peer.of_type("COMMAND_ACK")]
        assert acks == [0, 0]


def test_a_serial_link_fits_the_streams_into_half_the_line_as_px4_does() -> None:
    """PX4 (mavlink_main.cpp, update_rate_mult) slows every stream but HEARTBEAT by one
    multiplier so they take at most baud/20 bytes/s, counting what it budgets but does not
    send (PX4_UNSENT_STREAMS); a plan that asks for less is not slowed."""
    datarate_b_s = 57600 / 20
    full = StreamScheduler(PROFILES["px4"], 0.0, datarate_b_s, unsent=PX4_UNSENT_STREAMS)
    assert 0.075 < full.rate_mult < 0.09  # PX4 SIH main at 57,600 baud: 0.083
    sent: Counter[str] = Counter()
    for tick in range(1, 1001):  # 10 s at 100 Hz, time injected
        sent.update(full.due(tick / 100))
    stream_b_s = sum(frame_bytes(name) * n for name, n in sent.items()) / 10
    assert stream_b_s <= datarate_b_s * 1.05, stream_b_s
    assert sent["HEARTBEAT"] in (10, 11)  # constant rate: never scaled
    assert 22 <= sent["LOCAL_POSITION_NED"] <= 28  # 30/s x 0.083

    planned = StreamScheduler(PROFILES["px4"], 0.0, datarate_b_s, unsent=PX4_UNSENT_STREAMS)
    for name in [*PROFILES["px4"], *PX4_UNSENT_STREAMS]:
        if name not in ("HEARTBEAT", "LOCAL_POSITION_NED", "ATTITUDE"):
            planned.set_interval(name, -1, 0.0)
    planned.set_interval("ATTITUDE", 100_000, 0.0)  # 10/s
    assert planned.rate_mult == 1.0
    assert StreamScheduler(PROFILES["heavy"], 0.0, 1200 / 20).rate_mult == 0.05  # the floor
    assert StreamScheduler(PROFILES["px4"], 0.0).rate_mult == 1.0  # UDP: no fitting


def test_what_px4_budgets_but_the_sim_does_not_send_slows_the_rest_until_turned_off() -> None:
    """POSITION_TARGET_GLOBAL_INT (10/s x 63 B, silent on SIH) counts until stopped;
    STATUSTEXT's 20/s x 66 B, which nobody stops, keeps LOCAL_POSITION_NED 30/s + ATTITUDE
    10/s at ~0.98."""
    streams = StreamScheduler({"HEARTBEAT": 1.0, "LOCAL_POSITION_NED": 30.0, "ATTITUDE": 10.0},
                              0.0, 57600 / 20, unsent=PX4_UNSENT_STREAMS)
    before = streams.rate_mult
    for name in PX4_UNSENT_STREAMS:
        if name != "STATUSTEXT":
            streams.set_interval(name, -1, 0.0)
    assert before < 0.75 < streams.rate_mult
    assert 0.95 < streams.rate_mult < 1.0
    streams.set_interval("POSITION_TARGET_GLOBAL_INT", 0, 0.0)  # PX4's default 10/s again
    assert streams.rate_mult < 0.85


def test_interval_0_gives_back_the_default_or_stops_what_has_none() -> None:
    """MAV_CMD_SET_MESSAGE_INTERVAL with 0: PX4 takes the stream's rate from the link mode's
    list; a stream not in it is "assumed disabled by default" and stopped (mavlink_main.cpp,
    configure_streams_to_default). The sim once sent such a message at 1/s."""
    streams = StreamScheduler({"HEARTBEAT": 1.0, "ATTITUDE": 50.0}, 0.0)  # a link's mode
    streams.set_interval("ATTITUDE", 1_000_000, 0.0)
    streams.set_interval("ATTITUDE", 0, 0.0)
    assert streams.rates_hz["ATTITUDE"] == 50.0
    streams.set_interval("VFR_HUD", 200_000, 0.0)  # not in the mode's list
    assert streams.rates_hz["VFR_HUD"] == 5.0
    streams.set_interval("VFR_HUD", 0, 0.0)
    assert not streams.enabled("VFR_HUD")
