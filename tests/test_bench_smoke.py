"""The benchmark harness cannot rot: a seconds-long run of it produces numbers.

It checks that numbers come out (rates, timing, CPU, memory, latency, reactions) and that
the three files are written, never how fast anything is: that is `make bench`'s job.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.frames import SET_POSITION_TARGET_LOCAL_NED, Frame, frames, setpoint_fields
from bench.run import run_benchmark
from bench.stats import command_latencies_ms, stream_timing
from bench.workloads import Workload

pytestmark = pytest.mark.integration


def test_stream_timing_counts_deviation_and_missed_ticks() -> None:
    ms = 1_000_000
    stamps = [0, 50 * ms, 101 * ms, 200 * ms, 250 * ms]  # one tick lost after 101 ms
    timing = stream_timing(stamps, 0.05)
    assert timing.missed_ticks == 1
    assert timing.dev_max_ms == pytest.approx(49.0)
    assert timing.dev_p50_ms == pytest.approx(0.5)


def test_latency_is_to_the_first_frame_carrying_the_value() -> None:
    seen = [(10, 0.0), (20, 0.01), (30, 0.01), (45, 0.02)]
    assert command_latencies_ms([(15, 0.01), (40, 0.02), (50, 0.03)], seen) == [
        pytest.approx(5e-6), pytest.approx(5e-6)]  # fmt: skip


def test_frame_reader_finds_batched_frames_and_setpoint_fields() -> None:
    from offboardd.mavlink.codec import MavlinkCodec, dialect  # noqa: PLC0415

    codec = MavlinkCodec(1, 191)
    msg = dialect.MAVLink_set_position_target_local_ned_message(
        0, 1, 1, dialect.MAV_FRAME_LOCAL_NED, 0b100111111000,
        0.25, 0.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # fmt: skip
    data = codec.encode(msg) * 2
    found = list(frames(data))
    assert [f.msgid for f in found] == [SET_POSITION_TARGET_LOCAL_NED] * 2
    assert setpoint_fields(found[0]) == (0.25, 0b100111111000)
    assert setpoint_fields(Frame(SET_POSITION_TARGET_LOCAL_NED, 1, b"")) == (0.0, 0)


def test_a_setting_given_again_replaces_the_first_in_the_daemons_config(tmp_path: Path) -> None:
    import tomllib  # noqa: PLC0415

    from bench.commander import write_config  # noqa: PLC0415

    plan_off = Workload("offboardd", 20.0, "px4", plan="px4")
    path = write_config(tmp_path / "d.toml", 14550, 1883, 20.0, "v", (
        *plan_off.daemon_settings(), "engine.setpoint_rate_hz = 50",
        'mavlink.streams = {plan = "minimal", rates_hz = {ATTITUDE = 5}}'))  # fmt: skip
    doc = tomllib.loads(path.read_text())  # a duplicate key would not parse
    assert doc["engine"]["setpoint_rate_hz"] == 50
    assert doc["mavlink"]["streams"] == {"plan": "minimal", "rates_hz": {"ATTITUDE": 5}}
    assert doc["mavlink"]["url"] == "udpin://127.0.0.1:14550"
    assert doc["recorder"]["dir"] == str(tmp_path / "flights")


def test_a_short_run_produces_every_number(tmp_path: Path) -> None:
    workloads = [Workload("offboardd", 50.0, "px4"), Workload("mavsdk", 20.0, "px4"),
                 Workload("offboardd", 20.0, "px4", plan="px4")]  # fmt: skip
    results = run_benchmark(workloads, 1.5, tmp_path, log=False, rounds=2)
    for r in results:
        assert r.rate_hz > 0 and not math.isnan(r.dev_p99_ms), r
        assert r.load_msg_s > 0 and r.cpu_per_s > 0 and r.peak_rss_mb > 0, r
        assert r.wakeups_per_s > 0, r  # a peer that streams at 20 Hz sleeps between ticks
        assert r.stream_to_offboard_ms is not None and r.stream_to_offboard_ms > 0, r
        assert 0.0 <= r.steal <= 1.0 and 0.0 <= r.steal_peak <= 1.0, r  # recorded, not judged
    ours = results[0]
    assert ours.latency is not None and ours.latency["count"] > 0
    assert ours.lease_lapse_ms is not None
    plan_off = results[2]
    assert plan_off.workload.name == "offboardd-20hz-px4-plan-off"
    # the stream plan at work in the bench (issue 18): with it on, PX4's ~430 messages/s
    # are cut to what the daemon asked for (~60); with it off they all arrive
    assert plan_off.load_msg_s > 3 * ours.load_msg_s, (plan_off.load_msg_s, ours.load_msg_s)
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["results"]) == 3
    assert [len(r) for r in doc["rounds"]] == [3, 3]  # every workload in each round
    assert "## CPU over the rounds" in (tmp_path / "results.md").read_text()
    assert "CPU µs per wake-up" in (tmp_path / "results.md").read_text()
    assert "mavsdk-20hz-px4" in (tmp_path / "results.md").read_text()
    assert "steal %" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "results.png").stat().st_size > 0
