"""The telemetry schedule: rates kept on average, kinds of one rate together, no bursts."""

from __future__ import annotations

import pytest

from offboardd.mqtt.telemetry_schedule import TelemetrySchedule


def test_kinds_of_one_rate_are_due_together_and_rates_hold_over_time() -> None:
    schedule = TelemetrySchedule({"position": 5.0, "attitude": 5.0, "home": 0.2, "gps": 0}, 0.0)
    assert schedule.due(0.0) == ["position", "attitude", "home"]  # gps is off
    counts: dict[str, int] = {}
    for cycle in range(1, 201):  # 10 s of 20 Hz cycles
        kinds = schedule.due(cycle * 0.05)
        assert kinds in ([], ["position", "attitude"], ["position", "attitude", "home"], ["home"])
        for kind in kinds:
            counts[kind] = counts.get(kind, 0) + 1
    assert counts == {"position": 50, "attitude": 50, "home": 2}


def test_next_due_and_no_burst_after_a_stall() -> None:
    schedule = TelemetrySchedule({"position": 5.0}, 10.0)
    assert schedule.next_due_s() == 10.0
    assert schedule.due(10.0) == ["position"]
    assert schedule.next_due_s() == pytest.approx(10.2)
    assert schedule.due(10.21) == ["position"]
    assert schedule.next_due_s() == pytest.approx(10.4)  # 10 ms late: the phase is kept
    assert schedule.due(11.5) == ["position"]  # a stalled loop: once, not five times
    assert schedule.due(11.5) == []
    assert schedule.next_due_s() == pytest.approx(11.7)
    assert TelemetrySchedule({}, 0.0).next_due_s() is None
