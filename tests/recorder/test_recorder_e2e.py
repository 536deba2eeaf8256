"""The flight recorder end to end: the runtime flies the sim (real MAVLink on real UDP),
records arm -> disarm, and the folder reads back with pymavlink and with `offboardd log`."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pymavlink import mavutil

from offboardd.core.commands import Land
from offboardd.recorder.settings import RecorderSettings
from offboardd.recorder.store import list_flights, read_journal, read_tlog, timeline
from tests.integration.harness import flight

pytestmark = pytest.mark.integration


async def test_a_flight_is_recorded_arm_to_disarm(tmp_path: Path) -> None:
    root = tmp_path / "flights"
    settings = RecorderSettings(dir=str(root), pre_s=1.0, post_s=0.5, flush_interval_s=0.2)
    async with flight(recorder=settings) as fl:
        await fl.wait_fc_ready()
        await fl.wait_for(lambda: fl.snapshot()["fc_link"] == "up", 5, "link up")
        assert list_flights(root) == []  # nothing is kept while disarmed
        await fl.takeoff(down_m=-3.0)
        recorder = fl.runtime.recorder
        assert recorder is not None and recorder.flight_open
        reply = await fl.command(Land(fl.next_id("land")))
        assert reply.ok, reply
        await fl.wait_for(lambda: not fl.sim.vehicle.armed, 30, "landed and disarmed")
        await fl.wait_for(lambda: not recorder.flight_open, 5, "the flight closed")
        await fl.wait_for(lambda: bool(list_flights(root)) and list_flights(root)[0]
                          .summary.complete, 5, "summary written")

    (only,) = list_flights(root)
    summary = only.summary
    assert summary.complete and summary.dropped_batches == 0
    assert 2.7 <= summary.max_altitude_m <= 3.5, summary
    assert summary.max_speed_m_s > 0.5
    assert summary.commanders == ["local"] and summary.commands >= 2  # engage, land
    assert "OFFBOARD" in summary.modes and "AUTO.LAND" in summary.modes, summary.modes
    assert summary.duration_s > 3

    kinds = [r["kind"] for r in read_journal(only.folder)]
    for kind in ("flight", "fc", "command", "reply", "notice", "sample"):
        assert kind in kinds, kind
    lines = list(timeline(only))
    assert any("command  engage" in line for line in lines), lines[:20]
    assert any("phase" in line and "streaming" in line for line in lines), lines[:40]
    # no Python reprs where a record has no reason (a new-user walk-through: "(None)", "[]")
    assert not any("(None)" in line or line.endswith("[]") for line in lines), lines[:40]
    # the flight starts at 0 s; the journal's pre-roll (the engage) comes before it
    assert any(line.lstrip().startswith("0.00s  flight   start") for line in lines), lines[:20]

    # The tlog holds both directions, read by our reader and by pymavlink's.
    ours = [(t, m.get_type(), m.get_srcSystem()) for t, m in read_tlog(only.folder)]
    assert any(kind == "HEARTBEAT" and src == 1 for _, kind, src in ours)
    assert any(kind == "SET_POSITION_TARGET_LOCAL_NED" for _, kind, _ in ours)
    times = [t for t, _, _ in ours]
    assert max(a - b for a, b in itertools.pairwise(times)) < 0.1  # in time order, or nearly
    log = mavutil.mavlink_connection(str(only.folder / "flight.tlog"))
    counts: dict[str, int] = {}
    while (msg := log.recv_match()) is not None:
        counts[msg.get_type()] = counts.get(msg.get_type(), 0) + 1
    ours_counts: dict[str, int] = {}
    for _, kind, _ in ours:
        ours_counts[kind] = ours_counts.get(kind, 0) + 1
    assert counts == ours_counts  # every frame, no BAD_DATA
    assert counts["SET_POSITION_TARGET_LOCAL_NED"] > 30 and counts["LOCAL_POSITION_NED"] > 30


async def test_link_mode_records_while_the_fc_link_is_up(tmp_path: Path) -> None:
    root = tmp_path / "flights"
    settings = RecorderSettings(mode="link", dir=str(root), flush_interval_s=0.2)  # type: ignore[arg-type]
    async with flight(recorder=settings) as fl:
        await fl.wait_fc_ready()
        recorder = fl.runtime.recorder
        assert recorder is not None
        await fl.wait_for(lambda: recorder.flight_open, 5, "recording, disarmed")
        await fl.wait_for(lambda: bool(fl.runtime.recorder and fl.runtime.recorder.status()
                                       ["flight_bytes"]), 5, "bytes on disk")
    (recorded,) = list_flights(root)  # closed by the daemon's stop
    assert recorded.summary.complete and recorded.summary.max_altitude_m < 0.5
    assert any(m.get_type() == "PARAM_VALUE" for _, m in read_tlog(recorded.folder))
