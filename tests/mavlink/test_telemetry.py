"""What the daemon decodes for telemetry, and how often: pure, injected time."""

from __future__ import annotations

from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.telemetry import decode_plan
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
        decoded += len(daemon.decode(fc.encode(status), now_s=k * 0.2))
    assert 16 <= decoded <= 20
    assert daemon.stats.thinned == 50 - decoded
