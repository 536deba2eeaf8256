"""Real PX4: losing the commander (lease) and losing the daemon itself (SIGKILL).

The commander's lease lapses -> the daemon holds position, then asks for its loss action.
The daemon dies -> PX4's own COM_OF_LOSS_T fallback, timed from the last setpoint the tee
saw; a restarted daemon comes up idle and never re-takes control (PX4 would re-enter
OFFBOARD by itself if setpoints resumed, px4-offboard.md §3).
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
import time
from pathlib import Path

import aiomqtt
import pytest

from offboardd.core.setpoints import PositionNed, VelocityNed
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.release import loss_fallback_without_rc, release_of
from tests.px4.stack import flying_stack
from tests.px4.tee import AUTO_LOITER, OFFBOARD, POSCTL, Px4Tee

ALT_M = 5.0


async def test_lease_lapse_holds_then_asks_for_the_loss_action(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    engine = {"hold_s": 2.0, "command_loss_action": "hold"}
    async with flying_stack(px4, mosquitto, tmp_path, {"engine": engine}) as s:
        await s.fc_ready()
        async with s.new_client() as commander:
            await s.take_off(ALT_M, commander)
            await commander.setpoint_confirmed(PositionNed(2.0, 0.0, -ALT_M))
            await asyncio.sleep(0.5)
        lapsed_t = s.record.setpoints[-1].t  # the commander is gone (its heartbeat stopped)
        held = await s.client.wait_for_state(lambda st: st["phase"] == "holding", 5)
        assert held["reason"] == "lease_lapsed"
        loiter_t = await s.until(lambda r: r.mode == AUTO_LOITER, 10, "AUTO.LOITER")
        r = s.record
        streaming_stopped = [sp for sp in r.setpoints if sp.t > loiter_t + 0.5]
        assert streaming_stopped == []
        failsafe = await s.client.wait_for_state(lambda st: st["phase"] in ("failsafe", "idle"),
                                                 5)
        assert not failsafe["in_control"]
        assert abs(-r.position_ned_m[2] - ALT_M) < 1.0  # held, not dropped
        measured.update(lease_lapse_to_loiter_s=round(loiter_t - lapsed_t, 2),
                        phase_after=failsafe["phase"])


async def test_px4_flies_the_last_velocity_on_and_the_daemons_px4_loss_action_ends_on_a_stop(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """COM_OBL_RC_ACT 0 and NAV_RCL_ACT 0 without RC: from v1.17 PX4 takes no action on an
    offboard loss and flies the last setpoint on (a 1 m/s velocity at 0.8-0.94 m/s for 10 s,
    raw, on main and v1.17.0). The daemon's `px4` loss action, with no hold, ends its stream
    on a stop (a hold where the vehicle is), never on the commander's velocity: found by a
    review of the sim, which held where the real PX4 flew on."""
    px4.param_set("COM_OBL_RC_ACT", 0)
    px4.param_set("NAV_RCL_ACT", 0)
    engine = {"hold_s": 0.0, "command_loss_action": "px4"}
    async with flying_stack(px4, mosquitto, tmp_path, {"engine": engine}) as s:
        await s.fc_ready()
        async with s.new_client() as commander:
            await s.take_off(ALT_M, commander)
            await commander.setpoint_confirmed(VelocityNed(1.0, 0.0, 0.0))
            await asyncio.sleep(2.0)  # flying north at 1 m/s; then the commander is gone
        state = await s.client.wait_for_state(lambda st: st["phase"] == "failsafe", 5)
        assert state["reason"] == "loss_action"
        north_m = s.record.position_ned_m[0]
        await asyncio.sleep(6.0)
        r = s.record
        moved_m = r.position_ned_m[0] - north_m
        release = release_of(state["fc_version"])
        if release >= (1, 17):  # no action: still in OFFBOARD, armed, on the daemon's stop
            assert r.mode == OFFBOARD and r.is_armed
        assert moved_m < 1.5, f"flew on {moved_m:.1f} m north after the loss"
        measured.update(moved_after_loss_m=round(moved_m, 2), mode_after=r.mode)


async def test_a_dead_commanders_backlog_is_refused_and_a_live_one_resumes(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """What a bridge or a stalled network held back (the dead commander's session, seq
    growing, 3 m/s north) arrives while the daemon holds: refused, PX4 keeps the hold.
    A live commander quoting the hold's resume token flies on, in OFFBOARD throughout."""
    engine = {"hold_s": 20.0, "command_loss_action": "hold"}
    async with flying_stack(px4, mosquitto, tmp_path, {"engine": engine}) as s:
        await s.fc_ready()
        async with s.new_client() as commander:
            await s.take_off(ALT_M, commander)
            session = commander.session
        held = await s.client.wait_for_state(lambda st: st["phase"] == "holding", 5)
        held_t, held_at = time.monotonic(), s.record.position_ned_m[:2]
        async with aiomqtt.Client("127.0.0.1", mosquitto.port) as backlog:
            for seq in range(1000, 1020):
                await backlog.publish(s.client.topics.setpoint, json.dumps({
                    "v": 1, "session": session, "seq": seq, "kind": "velocity_ned",
                    "north_m_s": 3.0, "east_m_s": 0.0, "down_m_s": 0.0}).encode())
        await asyncio.sleep(1.5)
        state = await s.client.wait_for_state(lambda st: True, 1)
        assert state["phase"] == "holding" and state["resume_token"] == held["resume_token"]
        flown = [sp for sp in s.record.setpoints if sp.t > held_t
                 and abs(sp.fields.get("vx", 0.0)) > 1.0]
        assert flown == []  # PX4 never got the backlog's 3 m/s
        drift_m = math.dist(s.record.position_ned_m[:2], held_at)  # 3 m/s would be ~4 m
        assert drift_m < 1.0 and s.record.mode == OFFBOARD
        async with s.new_client() as live:
            assert (await live.resume(PositionNed(2.0, 0.0, -ALT_M))).ok
            await s.until(lambda r: abs(r.position_ned_m[0] - 2.0) < 0.4, 15, "north 2 m")
            assert all(mode == OFFBOARD for t, mode in s.record.modes if t > held_t)
            await live.land()
        measured.update(backlog_drift_m=round(drift_m, 2))


async def test_a_link_blackout_past_px4s_loss_time_never_hands_the_vehicle_back(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    """A radio out of range for 1.5 s, both ways, the commander alive (MQTT is another
    link). Found by review: the daemon streamed on, its first setpoint after the blackout
    reached PX4 before PX4's mode reached the daemon, and PX4 re-entered OFFBOARD by
    itself (§3) for ~1.1 s. The daemon now stops at 0.9 x COM_OF_LOSS_T of silence."""
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.take_off(ALT_M)
        assert isinstance(s.tee, Px4Tee)
        dark_from = time.monotonic()
        s.tee.blackout_until = dark_from + 1.5
        stopped = await s.client.wait_for_state(lambda st: st["phase"] == "failsafe", 5)
        assert stopped["reason"] == "fc_silent"
        fallback_t = await s.until(lambda r: r.mode not in (None, OFFBOARD), 5, "PX4's fallback")
        await asyncio.sleep(3.0)
        r = s.record
        assert [sp for sp in r.setpoints if sp.t > dark_from] == [], "streamed after the dark"
        assert OFFBOARD not in [m for t, m in r.modes if t > fallback_t], "PX4 re-took OFFBOARD"
        measured.update(px4_fallback_after_s=round(fallback_t - dark_from, 2),
                        mode_after=r.mode)


@pytest.mark.parametrize("com_obl_rc_act", [0, 5])
async def test_daemon_sigkilled_in_flight_px4_falls_back_and_a_new_daemon_never_retakes(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object],
    com_obl_rc_act: int,
) -> None:
    px4.param_set("COM_OBL_RC_ACT", com_obl_rc_act)
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.take_off(ALT_M)
        state = s.client.state
        assert state is not None
        measured["loss_action_reported"] = state["com_obl_rc_act"]
        fallback = loss_fallback_without_rc(release_of(state["fc_version"]), com_obl_rc_act)
        if com_obl_rc_act == 0:  # the daemon says what this release will do without RC
            said = "descends" if fallback == POSCTL else "Return"
            assert said in state["com_obl_rc_act"], state["com_obl_rc_act"]
        s.daemon.signal(signal.SIGKILL)
        r = s.record
        last_t = r.setpoints[-1].t
        fallback_t = await s.until(lambda rec: rec.mode == fallback, 5, f"mode {fallback}")
        gap_s = fallback_t - last_t
        assert 0.9 < gap_s < 1.5, gap_s  # COM_OF_LOSS_T = 1 s [main 1.06-1.16 s, v1.16.2 1.12]
        sent_before = len(r.setpoints)
        s.daemon.start()  # systemd's restart
        await s.client.wait_for_state(
            lambda st: st["fc_link"] == "up" and st["com_of_loss_t_s"] is not None, 20)
        await asyncio.sleep(3.0)
        assert len(r.setpoints) == sent_before, "a restarted daemon streamed by itself"
        assert r.mode == fallback and OFFBOARD not in [m for t, m in r.modes if t > fallback_t]
        if fallback == POSCTL:  # no sticks: it descends (v1.16.2: 5 m -> 3.0 m in ~3 s)
            assert -r.position_ned_m[2] < ALT_M - 1.0, r.position_ned_m
        now = s.client.state
        assert now is not None and now["phase"] == "idle" and not now["in_control"]
        measured.update(com_obl_rc_act=com_obl_rc_act, last_setpoint_to_fallback_s=round(gap_s, 3),
                        fallback_custom_mode=fallback,
                        altitude_3_s_after_m=round(-r.position_ned_m[2], 2))
