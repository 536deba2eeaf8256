"""The stream plan (issue 18) in the pure engine: built from the configuration, carried
out one SET_MESSAGE_INTERVAL at a time after the FC is identified, refusals reported,
done again after a reboot."""

from __future__ import annotations

import dataclasses

import pytest

from offboardd.core.actions import SetMessageInterval, Target
from offboardd.core.events import (
    MAV_CMD_SET_MESSAGE_INTERVAL,
    AckResult,
    FcAutopilotVersion,
    FcCommandAck,
    FcHeartbeat,
)
from offboardd.core.settings import EngineSettings
from offboardd.core.stream_plan import (
    ACK_TIMEOUT_S,
    DAEMON_NEEDS_HZ,
    HEAVIEST,
    PX4_ONBOARD_STREAMS,
    START_DELAY_S,
    PlanKind,
    StreamPlanner,
    StreamPlanSettings,
    build_plan,
)
from offboardd.errors import ConfigError
from offboardd.mavlink.codec import full_dialect, message_id

from .bench import FC, Bench

TELEMETRY = {"position": 5.0, "attitude": 25.0, "gps": 1.0}


def _rows(**kw: object) -> dict[str, float]:
    settings = StreamPlanSettings(**kw)  # type: ignore[arg-type]
    return {r.name: r.rate_hz for r in build_plan(settings, TELEMETRY, frozenset({"EFI_STATUS"}),
                                                  5.0, message_id)}


def test_the_minimal_plan_keeps_what_is_read_and_turns_off_the_rest() -> None:
    rows = _rows()
    assert rows["LOCAL_POSITION_NED"] == DAEMON_NEEDS_HZ["LOCAL_POSITION_NED"]
    assert rows["ATTITUDE"] == 25.0  # raised to the telemetry's rate
    assert rows["GPS_RAW_INT"] == 1.0 and rows["EFI_STATUS"] == 5.0  # telemetry, relay
    on = {name for name, hz in rows.items() if hz > 0}
    assert on == {*DAEMON_NEEDS_HZ, "GPS_RAW_INT", "EFI_STATUS"}  # needs, telemetry, relay
    off = {name for name, hz in rows.items() if hz == 0}
    # what PX4 SIH sends unasked (ESC_INFO and ESC_STATUS 10/s each, ~3.8 kB/s) and what it
    # counts against a serial link's data rate though it sends little
    assert {"ESC_INFO", "ESC_STATUS", "ODOMETRY", "HIGHRES_IMU", "POSITION_TARGET_GLOBAL_INT",
            "ADSB_VEHICLE", "LINK_NODE_STATUS"} <= off
    assert off == set(PX4_ONBOARD_STREAMS) - on
    assert set(PX4_ONBOARD_STREAMS) <= set(rows)
    assert "HEARTBEAT" not in rows and "CURRENT_MODE" not in rows


def test_overrides_win_and_plan_px4_sets_only_them() -> None:
    assert _rows(rates_hz={"VFR_HUD": 4.0, "GPS_RAW_INT": 0.0})["VFR_HUD"] == 4.0
    assert _rows(rates_hz={"GPS_RAW_INT": 0.0})["GPS_RAW_INT"] == 0.0
    assert _rows(rates_hz={"ATTITUDE": 4.0})["ATTITUDE"] == 4.0  # slower than we read it: yes
    assert _rows(plan="px4") == {}
    assert _rows(plan=PlanKind.PX4, rates_hz={"VFR_HUD": 2.0}) == {"VFR_HUD": 2.0}


def test_the_estimates_are_asked_for_four_times_per_estimate_timeout() -> None:
    """The engine calls an estimate stale after estimate_timeout_s without its message: two
    lost GLOBAL_POSITION_INT at 5/s (0.6 s) ended global setpoints on a lossy radio."""
    rows = _rows()
    assert rows["GLOBAL_POSITION_INT"] == 8.0 and rows["LOCAL_POSITION_NED"] == 30.0
    slower = {r.name: r.rate_hz for r in build_plan(
        StreamPlanSettings(), {}, frozenset(), 5.0, message_id, estimate_timeout_s=2.0)}
    assert slower["GLOBAL_POSITION_INT"] == DAEMON_NEEDS_HZ["GLOBAL_POSITION_INT"]
    with pytest.raises(ConfigError, match="ask for at least 8/s, or raise the timeout"):
        _rows(rates_hz={"GLOBAL_POSITION_INT": 5.0})
    with pytest.raises(ConfigError, match="LOCAL_POSITION_NED = 2: the engine calls"):
        _rows(plan="px4", rates_hz={"LOCAL_POSITION_NED": 2.0})


def test_px4s_own_streams_are_never_planned() -> None:
    """STATUSTEXT and COMMAND_LONG are added to every link outside the modes' lists: a relay
    must not slow them, and a restore (interval 0) would turn them off until a reboot."""
    rows = _rows()
    relayed = {r.name for r in build_plan(StreamPlanSettings(), TELEMETRY,
                                          frozenset({"STATUSTEXT"}), 5.0, message_id)}
    assert "STATUSTEXT" not in rows and "STATUSTEXT" not in relayed


@pytest.mark.parametrize(("kw", "words"), [
    ({"plan": "most"}, "plan must be one of"),
    ({"rates_hz": {"ATTITUDE": -1}}, "rates_hz.ATTITUDE must be 0 (off) to 500 Hz"),
    ({"rates_hz": {"HEARTBEAT": 2}}, "not the stream plan's to set"),
    ({"rates_hz": {"STATUSTEXT": 2}}, "not the stream plan's to set"),
    ({"rates_hz": {"ATTITUDE": 0}}, "the engine reads ATTITUDE all along; it may be slower"),
    ({"rates_hz": {"LOCAL_POSITION_NED": 0}}, "the engine reads LOCAL_POSITION_NED all along"),
])
def test_bad_settings_are_named(kw: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        StreamPlanSettings(**kw)  # type: ignore[arg-type]


def test_an_unknown_message_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="NOT_A_MESSAGE"):
        _rows(rates_hz={"NOT_A_MESSAGE": 1.0})


def _planned_bench() -> Bench:
    rows = build_plan(StreamPlanSettings(), TELEMETRY, frozenset(), 5.0, message_id)
    return Bench(dataclasses.replace(EngineSettings(), stream_plan=rows))


def _sent(b: Bench, since: float = -1e18) -> list[SetMessageInterval]:
    return [a for _, a in b.actions(SetMessageInterval, since) if a.message_id != 436]


def test_one_command_at_a_time_each_ack_moves_on_and_refusals_are_reported() -> None:
    b = _planned_bench()
    b.connect()  # version in: the plan starts START_DELAY_S later
    b.step(0.4)
    assert len(_sent(b)) == 1  # one in flight, waiting for its ACK
    rows = b.engine.streams.rows
    for i in range(len(rows)):
        result = AckResult.FAILED if rows[i].name == "ODOMETRY" else AckResult.ACCEPTED
        b.ack(MAV_CMD_SET_MESSAGE_INTERVAL, result)
        b.step(0.01)
    sent = _sent(b)
    assert [s.message_id for s in sent] == [r.message_id for r in rows]
    assert [s.interval_us for s in sent] == [r.interval_us for r in rows]
    plan = b.engine.snapshot(b.now).stream_plan
    assert plan == {"rows": len(rows), "applied": len(rows) - 1, "pending": 0,
                    "refused": {"ODOMETRY": "failed"}}


def _answer_all_but(b: Bench, silent: str) -> None:
    """ACK every row sent but `silent`'s, until nothing more is sent."""
    answered = 0
    for _ in range(200):
        sent = _sent(b)
        if len(sent) > answered:
            answered = len(sent)
            if sent[-1].message_id != message_id(silent):
                b.ack(MAV_CMD_SET_MESSAGE_INTERVAL, AckResult.ACCEPTED)
        b.step(0.1)


def test_an_unanswered_command_is_retried_goes_again_after_the_rest_then_is_reported() -> None:
    """Three sends 0.5 s apart; unanswered, the row goes again after the others (a radio gap
    shorter than fc_timeout_s loses no row for good), then is reported."""
    b = _planned_bench()
    b.connect()
    b.step(0.4 + 3 * 0.5)  # the first row: sent three times, never answered
    rows = b.engine.streams.rows
    first = rows[0]
    assert [s.message_id for s in _sent(b)].count(first.message_id) == 3
    assert b.engine.streams.refused == {}  # not yet: it goes again after the rest
    _answer_all_but(b, first.name)
    sent = [s.message_id for s in _sent(b)]
    assert sent.count(first.message_id) == 6 and sent[-1] == first.message_id
    assert b.engine.streams.refused == {first.name: "no answer"}
    assert len(b.engine.streams.applied) == len(rows) - 1


def test_a_row_unanswered_in_a_radio_gap_is_set_in_the_second_round() -> None:
    b = _planned_bench()
    b.connect()
    b.step(0.4 + 3 * 0.5)  # the gap: the first row unanswered three times
    _answer_all_but(b, "")  # the link is back: everything answered
    assert b.engine.streams.refused == {}
    assert sorted(b.engine.streams.applied) == sorted(r.name for r in b.engine.streams.rows)


def test_a_reboot_plans_again_once_the_version_is_back() -> None:
    b = _planned_bench()
    b.connect()
    b.step(0.4)
    for _ in b.engine.streams.rows:
        b.ack(MAV_CMD_SET_MESSAGE_INTERVAL, AckResult.ACCEPTED)
        b.step(0.01)
    before = b.now
    b.fc.boot_ms = 100  # time_boot_ms went back: rebooted
    b.step(0.3)
    b.feed(FcAutopilotVersion(0x010F0200, 0xFFFF, **FC))
    b.step(0.5)
    assert len(_sent(b, before)) == 1  # the plan started over


def _in_flight_acked(b: Bench, result: AckResult, **target: int) -> None:
    b.feed(FcCommandAck(MAV_CMD_SET_MESSAGE_INTERVAL, int(result), **target, **FC))


def test_a_late_ack_of_a_retried_row_is_not_taken_for_the_next_one() -> None:
    """PX4's ACK does not say which message it answers: after a retry, the first copy's late
    ACK settles the row and the retry's must not settle the next one (every later result
    would be shifted by one, and the restore act on the wrong rows)."""
    b = _planned_bench()
    b.connect()
    b.step(0.4 + 0.5)  # the first row, sent twice
    first, second = b.engine.streams.rows[:2]
    assert [s.message_id for s in _sent(b)] == [first.message_id] * 2
    _in_flight_acked(b, AckResult.ACCEPTED)  # the first copy's, late
    _in_flight_acked(b, AckResult.FAILED)  # the retry's: no news
    assert b.engine.streams.applied == [first.name] and b.engine.streams.refused == {}
    b.step(0.74)
    assert len(_sent(b)) == 2  # the next row waits out a late copy's ACK: 0.5 s + margin
    b.step(0.02)
    assert _sent(b)[-1].message_id == second.message_id
    _in_flight_acked(b, AckResult.FAILED)
    assert b.engine.streams.refused == {second.name: "failed"}


def test_an_ack_addressed_to_another_client_is_not_the_plans() -> None:
    """On a shared link another client's SET_MESSAGE_INTERVAL is ACKed on our link too."""
    b = _planned_bench()
    b.connect()
    b.step(0.4)
    first = b.engine.streams.rows[0]
    _in_flight_acked(b, AckResult.FAILED, target_system=255, target_component=190)
    assert b.engine.streams.refused == {} and b.engine.streams.applied == []
    _in_flight_acked(b, AckResult.ACCEPTED, target_system=1,
                     target_component=b.settings.companion_component_id)
    assert b.engine.streams.applied == [first.name]


def test_a_restore_covers_what_may_have_landed_not_what_px4_refused() -> None:
    b = _planned_bench()
    b.connect()
    b.step(0.4)
    rows = b.engine.streams.rows
    _in_flight_acked(b, AckResult.ACCEPTED)  # rows[0] applied
    b.step(0.01)
    _in_flight_acked(b, AckResult.FAILED)  # rows[1] refused
    b.step(0.01 + 3 * 0.5 + 1.26)  # rows[2]: unanswered (it goes again later); rows[3] out
    assert b.engine.streams.refused == {rows[1].name: "failed"}
    target = b.engine.vehicle.target
    assert target is not None
    restored = {a.message_id for a in b.engine.streams.restore(target)}
    assert restored == {rows[0].message_id, rows[2].message_id, rows[3].message_id}
    assert all(a.interval_us == 0 for a in b.engine.streams.restore(target))


@pytest.mark.parametrize("latency_s", [0.05, 0.7, 1.2])
def test_each_result_lands_on_its_own_row_whatever_the_ack_latency(latency_s: float) -> None:
    """A PX4 that answers every copy `latency_s` after it was sent (a busy radio): rows are
    sent again after 0.5 s, and the copies' late ACKs must not settle the rows after them
    (at 0.7 s a too-short wait once reported ODOMETRY's refusal against the next row)."""
    b = _planned_bench()
    refused = message_id("ODOMETRY")

    def px4(action: object) -> None:
        if isinstance(action, SetMessageInterval) and action.message_id != 436:
            result = AckResult.FAILED if action.message_id == refused else AckResult.ACCEPTED
            b.later(latency_s, FcCommandAck(MAV_CMD_SET_MESSAGE_INTERVAL, int(result), **FC))

    b.hooks.append(px4)
    b.connect()
    b.step(240.0)  # at 1.2 s each row takes ~2.8 s (three copies, then the late ACKs' wait)
    streams = b.engine.streams
    assert streams.refused == {"ODOMETRY": "failed"}
    assert sorted(streams.applied) == sorted(r.name for r in streams.rows if r.name != "ODOMETRY")


def test_a_row_refused_in_its_second_round_is_not_restored() -> None:
    rows = tuple(r for r in build_plan(StreamPlanSettings(), TELEMETRY, frozenset(), 5.0,
                                       message_id) if r.rate_hz > 0)[:2]
    planner, target = StreamPlanner(rows), Target(1, 1)
    planner.start(0.0)
    now = START_DELAY_S
    for _ in range(3):  # rows[0]: three copies, no answer; it goes again after rows[1]
        assert planner.poll(now, target)[0].message_id == rows[0].message_id
        now += ACK_TIMEOUT_S
    assert planner.poll(now, target) == []  # the wait for a late copy's ACK
    now = planner.deadline()
    assert planner.poll(now, target)[0].message_id == rows[1].message_id
    assert planner.on_ack(AckResult.ACCEPTED, now)
    assert planner.poll(now, target)[0].message_id == rows[0].message_id
    assert planner.on_ack(AckResult.DENIED, now)
    assert planner.refused == {rows[0].name: "denied"}
    assert [a.message_id for a in planner.restore(target)] == [rows[1].message_id]


def test_a_px4_heard_after_another_autopilot_gets_the_plan_from_its_version_on() -> None:
    """The plan is stopped when the target changes: the checks' own CURRENT_MODE ACK must
    not settle a row of a plan begun for the component heard first."""
    b = _planned_bench()
    b.fc_alive = False  # PX4 (FakeFc, component 1) not heard yet
    other = {"source_system": 1, "source_component": 50}
    b.feed(FcHeartbeat(0, 2, 1, 0, 4, **other))  # a non-PX4 autopilot speaks first
    b.feed(FcAutopilotVersion(0x010F0200, 0xFFFF, **other))
    b.step(0.4)
    assert len(_sent(b)) == 1  # a row in flight
    b.fc_alive = True
    b.step(1.0)  # PX4's own heartbeat: the target changes
    assert b.engine.vehicle.target == Target(1, 1)
    sent = len(_sent(b))
    _in_flight_acked(b, AckResult.FAILED)  # e.g. the checks' CURRENT_MODE request's
    assert b.engine.streams.refused == {} and b.engine.streams.applied == []
    b.step(1.0)
    assert len(_sent(b)) == sent  # nothing until PX4's version
    b.feed(FcAutopilotVersion(0x010F0200, 0xFFFF, **FC))
    b.step(0.4)
    assert len(_sent(b)) == sent + 1


def test_every_onboard_stream_id_is_mavlinks() -> None:
    """The plan's own ids (looked up before the codec) against pymavlink's full dialect;
    the five it lacks were read off PX4's wire (stream_plan.py)."""
    full = full_dialect()
    unknown = {name for name in PX4_ONBOARD_STREAMS
               if not hasattr(full, f"MAVLINK_MSG_ID_{name}")}
    assert unknown == {"ESC_INFO", "ESC_STATUS", "ESTIMATOR_SENSOR_FUSION_STATUS",
                       "TIME_ESTIMATE_TO_TARGET", "LINK_NODE_STATUS"}
    for name, msg_id in PX4_ONBOARD_STREAMS.items():
        if name not in unknown:
            assert getattr(full, f"MAVLINK_MSG_ID_{name}") == msg_id, name
    assert len(set(PX4_ONBOARD_STREAMS.values())) == len(PX4_ONBOARD_STREAMS)


def test_px4s_heaviest_streams_go_first() -> None:
    """One row per ACK, one a tick: ATTITUDE (100/s), the 50/s ones, ODOMETRY and the ESC
    messages first, so what PX4 sends drops within the first half second or so."""
    rows = build_plan(StreamPlanSettings(), TELEMETRY, frozenset(), 5.0, message_id)
    assert tuple(r.name for r in rows[:len(HEAVIEST)]) == HEAVIEST
    rest = [r.name for r in rows[len(HEAVIEST):]]
    assert rest == sorted(rest)
