"""What the daemon decodes for telemetry, and how often: pure, injected time."""

from __future__ import annotations

import json

from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.telemetry import TelemetryCache, decode_plan
from offboardd.mqtt.settings import DEFAULT_TELEMETRY_RATES_HZ

SYS_STATUS = dialect.MAVLINK_MSG_ID_SYS_STATUS
BATTERY_STATUS = dialect.MAVLINK_MSG_ID_BATTERY_STATUS
GPS_RAW_INT = dialect.MAVLINK_MSG_ID_GPS_RAW_INT
ATTITUDE = dialect.MAVLINK_MSG_ID_ATTITUDE


def plan(rates_hz: dict[str, float], relay: frozenset[int] = frozenset()
         ) -> tuple[frozenset[int], dict[int, float]]:
    return decode_plan(rates_hz, engine_ids=translate.WANTED_MESSAGE_IDS,
                       engine_min_interval_s=translate.WANTED_MIN_INTERVAL_S, relay_ids=relay)


def test_telemetry_only_messages_are_decoded_twice_per_publishing_period() -> None:
    wanted, gaps_s = plan(dict(DEFAULT_TELEMETRY_RATES_HZ))  # battery and gps at 1 Hz
    assert {SYS_STATUS, BATTERY_STATUS, GPS_RAW_INT} <= wanted
    assert gaps_s[SYS_STATUS] == gaps_s[BATTERY_STATUS] == gaps_s[GPS_RAW_INT] == 0.5
    # the engine's own messages keep the engine's rules, whatever telemetry wants
    assert wanted >= translate.WANTED_MESSAGE_IDS
    assert gaps_s[ATTITUDE] == translate.WANTED_MIN_INTERVAL_S[ATTITUDE]


def test_kinds_turned_off_or_no_mqtt_decode_nothing_for_telemetry() -> None:
    wanted, _ = plan({"battery": 0.0, "gps": 2.0})
    assert SYS_STATUS not in wanted and BATTERY_STATUS not in wanted and GPS_RAW_INT in wanted
    wanted, gaps_s = plan({})
    assert wanted == translate.WANTED_MESSAGE_IDS
    assert gaps_s == translate.WANTED_MIN_INTERVAL_S


def test_relayed_messages_are_decoded_and_never_thinned() -> None:
    wanted, gaps_s = plan({"battery": 1.0}, relay=frozenset({SYS_STATUS, ATTITUDE}))
    assert SYS_STATUS in wanted and SYS_STATUS not in gaps_s and ATTITUDE not in gaps_s


def test_px4s_5_hz_sys_status_is_decoded_about_twice_a_second() -> None:
    wanted, gaps_s = plan(dict(DEFAULT_TELEMETRY_RATES_HZ))
    fc = MavlinkCodec(1, 1)
    daemon = MavlinkCodec(1, 191, wanted_ids=wanted, min_interval_s=gaps_s)
    status = dialect.MAVLink_sys_status_message(0, 0, 0, 500, 15800, 1200, 80, 0, 0, 0, 0, 0, 0)
    decoded = 0
    for k in range(50):  # 10 s at 5 Hz
        decoded += len(daemon.decode(fc.encode(status), now_s=k * 0.2) + daemon.take_held())
    assert 16 <= decoded <= 20
    assert daemon.stats.thinned == 50 - decoded


def test_telemetry_numbers_are_the_decimals_px4_sent_not_their_binary_noise() -> None:
    """float32 metres to the millimetre, radians to 0.0001, integer fields as the shortest
    decimal they are (review: "north_m":5.250687599182129, "lat_deg":47.397742100000004)."""
    cache = TelemetryCache()
    cache.update(dialect.MAVLink_local_position_ned_message(
        1000, 5.2506876, -0.0004, -10.0, 0.31234, 0.0, -0.1))
    cache.update(dialect.MAVLink_global_position_int_message(
        1000, 473977421, 85455941, 488123, 10123, 31, 0, -10, 9012))
    cache.update(dialect.MAVLink_attitude_message(1000, 0.012345, -0.5, 3.1415927, 0.0, 0.0,
                                                  0.25))
    position = cache.document("position")
    assert position == {"lat_deg": 47.3977421, "lon_deg": 8.5455941, "alt_amsl_m": 488.123,
                        "alt_rel_m": 10.123, "heading_deg": 90.12,
                        "north_m": 5.251, "east_m": 0.0, "down_m": -10.0}
    assert cache.document("velocity") == {"north_m_s": 0.312, "east_m_s": 0.0,
                                          "down_m_s": -0.1, "frame": "local_ned"}
    assert cache.document("attitude") == {
        "roll_rad": 0.0123, "pitch_rad": -0.5, "yaw_rad": 3.1416,
        "roll_rate_rad_s": 0.0, "pitch_rate_rad_s": 0.0, "yaw_rate_rad_s": 0.25}
    assert json.dumps(position["lat_deg"]) == "47.3977421"
    assert json.dumps(position["east_m"]) == "0.0"  # not "-0.0"
