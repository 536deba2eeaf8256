"""Real PX4: PX4 itself, or a GCS, ends OFFBOARD while the daemon flies.

PX4's own failsafe (its geofence here) keeps OFFBOARD as the intended mode; a GCS's land
command replaces it. Either way the daemon stops streaming at once, never asks for OFFBOARD
again and says why; after a failsafe it names the offboard-loss action PX4 adds once our
stream has stopped (px4-offboard.md §3: PX4 flies the more severe of the two).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from offboardd.client import CommandRefused, ControlLost
from offboardd.core.setpoints import VelocityNed
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.release import release_of
from tests.px4.stack import Stack, flying_stack
from tests.px4.tee import AUTO_LOITER, AUTO_RTL, OFFBOARD

AUTO_LAND = 100925440
MAV_STATE_FLIGHT_TERMINATION = 8
TERMINATION = 10 << 16  # px4_custom_mode.h main mode 10
ALT_M = 5.0
MAV_CMD_NAV_LAND = 21


def _px4_failsafe_named(s: Stack) -> list[str]:
    return [str(e["message"]) for e in s.daemon.events()
            if e.get("event") == "engine_failsafe" and "PX4 failsafe" in str(e.get("message"))]


async def _stopped_for_good(s: Stack, taken_t: float, watch_s: float) -> None:
    """Nothing streamed or asked for after the takeover, while PX4 goes its own way."""
    await asyncio.sleep(watch_s)
    r = s.record
    assert [sp for sp in r.setpoints if sp.t > taken_t + 0.1] == [], "streamed on"
    assert [q for q in r.offboard_requests() if q.t > taken_t] == [], "asked for OFFBOARD"


async def test_px4s_geofence_failsafe_is_named_and_its_loss_action_follows(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        r = s.record
        await s.take_off(ALT_M)
        release = release_of(str((s.client.state or {})["fc_version"]))
        s.gcs.param_set("GF_MAX_VER_DIST", 3.0)  # 5 m up: outside PX4's own fence at once
        taken_t = await s.until(lambda rec: rec.mode == AUTO_LOITER, 5, "GF_ACTION=2: Hold")
        seen_t = r.modes[-1][0]  # when the report arrived (until() returns a bit later)
        await s.until(lambda rec: rec.intended_in(AUTO_LOITER, seen_t) is not None, 2,
                      "CURRENT_MODE")
        assert r.intended_in(AUTO_LOITER, seen_t) == OFFBOARD, "the failsafe kept the intent"
        state = await s.client.wait_for_state(lambda st: st["phase"] == "preempted", 2)
        assert state["reason"] == "preempted_mode" and not state["streaming"]
        for _ in range(20):  # a HEARTBEAT may show the takeover first; CURRENT_MODE's intent
            if said := _px4_failsafe_named(s):
                break
            await asyncio.sleep(0.1)
        assert len(said) == 1 and state["com_obl_rc_act"] in said[0], said
        last_setpoint_t = r.setpoints[-1].t
        await _stopped_for_good(s, taken_t, 4.0)
        after = [(t, m) for t, m in r.modes if t > taken_t]
        if release >= (1, 17):  # offboard loss without RC: Return (#26391), above Hold
            assert [m for _, m in after] == [AUTO_RTL], after
            measured.update(loss_action_after_last_setpoint_s=round(after[0][0]
                                                                    - last_setpoint_t, 3))
        else:  # v1.16: Position, below Hold: PX4 stays in Hold
            assert after == [], after
        # the stream stops at the report: its last setpoint went out before PX4's report
        assert last_setpoint_t < taken_t + 0.1
        measured.update(last_setpoint_before_the_report_s=round(taken_t - last_setpoint_t, 3),
                        modes_after=[m for _, m in after])


async def test_a_geofence_termination_reporting_offboard_stops_the_daemon(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """GF_ACTION=4 (Terminate): PX4 cuts the motors and reports system_status
    FLIGHT_TERMINATION, armed; v1.18 goes on reporting OFFBOARD (the intended mode:
    HEARTBEAT.hpp's nav_state_display), v1.16 and v1.17 TERMINATION. The daemon stops at
    the first sign; before it read the status, on v1.18 it streamed on and called itself in
    control of a falling vehicle. [SITL main] SIH's lockstep stalls the whole PX4 at a
    termination ("timed out waiting for actuator_outputs_sim"): it goes silent, and the
    daemon stops for the silence instead."""
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        r = s.record
        await s.take_off(ALT_M)
        s.gcs.param_set("GF_ACTION", 4)
        s.gcs.param_set("GF_MAX_VER_DIST", 3.0)  # 5 m up: outside PX4's own fence at once
        state = await s.client.wait_for_state(
            lambda st: st["phase"] in ("preempted", "failsafe"), 5)
        stopped_t = r.setpoints[-1].t
        await asyncio.sleep(3.0)
        assert [sp for sp in r.setpoints if sp.t > stopped_t] == [], "streamed on"
        cut = [t for t, status in r.statuses if status == MAV_STATE_FLIGHT_TERMINATION]
        if cut:  # PX4 kept talking
            assert state["reason"] == "preempted_motors_cut", state
            state = await s.client.wait_for_state(lambda st: True, 1)  # (CURRENT_MODE may
            # have shown TERMINATION first, v1.16 and v1.17: the status came after)
            assert state["fc_status"] == "flight_termination" and state["armed"]
            release = release_of(state["fc_version"])
            reported = OFFBOARD if release >= (1, 18) else TERMINATION  # (v1.16, v1.17)
            assert r.mode == reported and r.is_armed
            assert stopped_t < min([cut[0], *[t for t, m in r.modes if m == TERMINATION]]) + 0.1
            async with s.new_client() as again:  # taken: it quotes the token, still refused
                await again.wait_for_state(lambda st: st["resume_token"] is not None, 2)
                with pytest.raises(CommandRefused) as refused:
                    await again.engage(None)
            assert refused.value.reply.extra.get("reason") == "fc_motors_cut", refused.value
            measured.update(mode_after=r.mode, fell_to_down_m=round(r.position_ned_m[2], 2),
                            last_setpoint_after_the_status_s=round(stopped_t - cut[0], 3))
        else:  # SIH's stall (main)
            assert state["reason"] in ("fc_silent", "fc_link_lost"), state
            measured.update(px4_went_silent=True, reason=state["reason"])


async def test_a_gcs_land_is_never_fought_nor_its_offboard_after_disarm_taken(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """PX4 reports OFFBOARD again once it landed and disarmed (px4-offboard.md §3): the
    daemon, taken over, stays so."""
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        r = s.record
        await s.take_off(ALT_M)
        s.gcs.command(MAV_CMD_NAV_LAND)
        taken_t = await s.until(lambda rec: rec.mode == AUTO_LAND, 5, "AUTO.LAND")
        seen_t = r.modes[-1][0]  # when the report arrived (until() returns a bit later)
        await s.until(lambda rec: rec.intended_in(AUTO_LAND, seen_t) is not None, 2,
                      "CURRENT_MODE")
        assert r.intended_in(AUTO_LAND, seen_t) == AUTO_LAND  # a GCS's command: the intent
        state = await s.client.wait_for_state(lambda st: st["phase"] == "preempted", 2)
        assert state["reason"] == "preempted_mode"
        disarmed_t = await s.until(lambda rec: not rec.is_armed, 40, "landed and disarmed")
        await s.until(lambda rec: rec.mode == OFFBOARD, 5, "OFFBOARD reported, disarmed")
        await _stopped_for_good(s, taken_t, 3.0)
        state = s.client.state or {}
        assert state["phase"] == "preempted" and not state["streaming"]
        assert _px4_failsafe_named(s) == []  # the GCS chose: not PX4's failsafe
        measured.update(land_to_disarm_s=round(disarmed_t - taken_t, 1))


async def test_landing_in_offboard_px4_disarms_by_itself_and_the_daemon_stops(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """Descending in OFFBOARD to the ground: PX4 detects the landing and disarms
    COM_DISARM_LAND (2 s) later, staying in OFFBOARD. The daemon stops, says why, and
    never streams into a vehicle a later arm would fly off with."""
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        c, r = s.client, s.record
        await s.take_off(2.0)
        down_t = asyncio.get_running_loop().time()
        with contextlib.suppress(ControlLost):
            for _ in range(40):  # the commander descends, as a landing script would
                await c.setpoint(VelocityNed(0.0, 0.0, 0.7))
                await asyncio.sleep(0.5)
        disarmed_t = await s.until(lambda rec: not rec.is_armed, 5, "disarmed by PX4")
        state = await c.wait_for_state(lambda st: st["phase"] == "preempted", 2)
        assert state["reason"] == "preempted_disarmed" and not state["streaming"]
        (said,) = [e["message"] for e in s.daemon.events()
                   if e.get("event") == "engine_transition" and e.get("phase") == "preempted"]
        assert "COM_DISARM_LAND" in said, said
        await _stopped_for_good(s, disarmed_t, 2.0)
        assert r.mode == OFFBOARD and not r.is_armed  # PX4 stays in OFFBOARD, disarmed
        measured.update(descent_to_auto_disarm_s=round(disarmed_t - down_t, 1))
