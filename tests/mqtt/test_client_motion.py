"""The client's motion tracker: a motion's end and its warnings, routed by command id."""

from __future__ import annotations

import pytest

from offboardd.mqtt.client_motion import MotionAborted, MotionTracker


async def test_warnings_about_a_motion_are_kept_on_its_handle_until_it_ends() -> None:
    tracker = MotionTracker()
    end, warnings = tracker.expect("m1")
    _, others = tracker.expect("m2")
    trailing = {"kind": "warning", "command_id": "m1", "reason": "vehicle_trailing"}
    tracker.on_event(trailing)
    tracker.on_event({"kind": "warning", "command_id": None, "reason": "fence_stop"})
    tracker.on_event({"kind": "warning", "command_id": "unknown", "reason": "x"})
    assert warnings == [trailing] and others == []
    tracker.on_event({"kind": "motion_done", "command_id": "m1"})
    assert (await end)["kind"] == "motion_done"
    tracker.on_event({"kind": "warning", "command_id": "m1", "reason": "late"})
    assert warnings == [trailing]  # the motion has ended: nothing more is its


async def test_an_aborted_motion_keeps_what_it_was_warned_of() -> None:
    tracker = MotionTracker()
    end, warnings = tracker.expect("m1")
    tracker.on_event({"kind": "warning", "command_id": "m1", "reason": "vehicle_trailing"})
    tracker.on_event({"kind": "motion_aborted", "command_id": "m1", "reason": "replaced",
                      "message": "replaced by a stop"})
    with pytest.raises(MotionAborted):
        await end
    assert [w["reason"] for w in warnings] == ["vehicle_trailing"]
