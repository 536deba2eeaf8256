"""Real PX4: handing the vehicle over, and someone else taking it.

A GCS on PX4's own GCS link switches to Hold while the daemon flies: the daemon stops
streaming and never takes control back (px4-offboard.md §3: PX4 would re-enter OFFBOARD by
itself if setpoints resumed). release / hold / rtl / land each hand the vehicle to a PX4
mode, confirmed from PX4's reports; the flight recorder keeps that flight, arm to disarm.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from offboardd.client import ControlLost
from offboardd.core.setpoints import PositionNed
from offboardd.recorder.store import list_flights, read_tlog
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.px4.tee import AUTO_LOITER, AUTO_RTL, OFFBOARD, main_mode

AUTO_LAND = 100925440
ALT_M = 5.0


async def test_gcs_mode_change_preempts_and_the_daemon_never_retakes(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.take_off(ALT_M)
        s.gcs.set_mode(4, 3)  # AUTO.LOITER, from QGroundControl's link
        loiter_t = await s.until(lambda r: r.mode == AUTO_LOITER, 5, "AUTO.LOITER")
        state = await s.client.wait_for_state(lambda st: st["phase"] == "preempted", 5)
        assert not state["streaming"]
        r = s.record
        last_setpoint_t = r.setpoints[-1].t
        await asyncio.sleep(5.0)  # the commander keeps its lease all along
        assert r.setpoints[-1].t == last_setpoint_t, "the daemon kept streaming"
        assert [m for t, m in r.modes if t > loiter_t] == [], "control was taken back"
        lost = await asyncio.wait_for(s.client.control_lost(), 1.0)  # told at once
        assert "preempted" in lost.reason
        with pytest.raises(ControlLost):  # the next call says so too
            await s.client.setpoint(PositionNed(0, 0, -ALT_M))
        reply = await s.client.send_document({"v": 1, "cmd": "setpoint", "setpoint": {
            "kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -ALT_M}})
        assert reply.code == "not_in_control"  # a new explicit engage is needed
        measured.update(gcs_mode_change_to_stream_stop_s=round(last_setpoint_t - loiter_t, 3))


async def test_release_hold_rtl_land_hand_over_to_px4_modes(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    flights = tmp_path / "flights"
    recorder = {"recorder": {"dir": str(flights), "post_s": 1.0}}
    async with flying_stack(px4, mosquitto, tmp_path, recorder) as s:
        c, r = s.client, s.record
        await s.take_off(ALT_M)
        seen: dict[str, float] = {}
        for name, stop, mode in (("release", c.release, AUTO_LOITER),
                                 ("hold", c.hold, AUTO_LOITER),
                                 ("rtl", c.rtl, AUTO_RTL)):
            if r.mode != OFFBOARD:  # take it back explicitly, as a commander would
                assert (await c.engage(PositionNed(0, 0, -ALT_M))).ok
                await s.in_offboard()
            t0 = asyncio.get_running_loop().time()
            assert (await stop()).ok
            await s.until(lambda rec, m=mode: rec.mode == m, 5, name)
            seen[name] = round(asyncio.get_running_loop().time() - t0, 3)
            await c.wait_for_state(lambda st: not st["streaming"] and st["phase"] == "idle", 3)
        assert (await c.engage(PositionNed(0, 0, -ALT_M))).ok
        await s.in_offboard()
        assert (await c.land()).ok
        await s.until(lambda rec: main_mode(rec.mode or 0) == 4 and rec.mode == AUTO_LAND, 5,
                      "AUTO.LAND")
        await s.until(lambda rec: not rec.is_armed, 40, "landed and disarmed")
        measured.update({f"{k}_to_mode_s": v for k, v in seen.items()})
        await c.wait_for_state(lambda st: not st["recorder"]["recording"], 5)
        for _ in range(50):  # the summary is the recorder thread's last write
            if list_flights(flights) and list_flights(flights)[0].summary.complete:
                break
            await asyncio.sleep(0.1)
    measured.update(_recorded(flights, px4.system_id))


def _recorded(flights: Path, px4_system_id: int) -> dict[str, object]:
    """The recorder's flight of real PX4: one folder, arm to disarm, both directions."""
    (flight,) = list_flights(flights)
    summary = flight.summary
    assert summary.complete and summary.dropped_batches == 0 and summary.failsafes == 0
    assert {"OFFBOARD", "AUTO.LOITER", "AUTO.RTL", "AUTO.LAND"} <= set(summary.modes)
    counts: dict[tuple[str, bool], int] = {}
    top_m = -math.inf  # the highest PX4 reported, in every frame the tlog holds
    for _, msg in read_tlog(flight.folder):
        from_px4 = msg.get_srcComponent() == 1 and msg.get_srcSystem() == px4_system_id
        key = (msg.get_type(), from_px4)
        counts[key] = counts.get(key, 0) + 1
        if key == ("LOCAL_POSITION_NED", True):
            top_m = max(top_m, -msg.z)
    # The flight's highest point is PX4's doing, not ours: AUTO.RTL climbs until the next
    # engage's OFFBOARD (4.7 to 6.6 m seen for a 5 m take-off). What the recorder owes is
    # that point, from the positions it decoded (thinned: 1/30 s apart at most).
    assert summary.max_altitude_m >= ALT_M - 0.6, summary
    assert top_m - 0.15 <= summary.max_altitude_m <= top_m + 0.01, (top_m, summary)
    assert counts.get(("HEARTBEAT", True), 0) >= summary.duration_s * 0.8
    assert counts.get(("SET_POSITION_TARGET_LOCAL_NED", False), 0) > 100
    assert counts.get(("LOCAL_POSITION_NED", True), 0) >= 20 * summary.duration_s  # 30/s
    tlog_bytes = (flight.folder / "flight.tlog").stat().st_size
    return {"recorded_s": round(summary.duration_s, 1),
            "recorded_frames": sum(counts.values()),
            "recorded_tlog_kb_s": round(tlog_bytes / 1024 / summary.duration_s, 1),
            "recorded_modes": summary.modes,
            "recorded_max_altitude_m": round(summary.max_altitude_m, 2)}
