"""Where the sim disagreed with real PX4: one test per difference, over real UDP.

Each was found by running the same pymavlink steps against PX4 SIH (main "v1.19.0-dev",
v1.16.2, v1.17.0) and against `offboardd sim`, and comparing what came back (review of
2026-11-27). The figures quoted are the PX4 measurements; real PX4 is the oracle.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

import pytest

from offboardd.mavlink.codec import Message
from offboardd.mavlink.params import param_id_str
from offboardd.sim import SimServer
from tests.sim.client import (
    LAND,
    LOITER,
    OFFBOARD,
    POSCTL,
    QUICK_TAKEOFF,
    RTL,
    TAKEOFF,
    Peer,
    d,
    offboard_and_arm,
    position_sp,
    running_sim,
)

_ARMED = d.MAV_MODE_FLAG_SAFETY_ARMED
_VELOCITY_ONLY = 2503  # SET_POSITION_TARGET_LOCAL_NED: velocity and yaw, nothing else


async def test_offboard_heartbeat_base_mode_has_no_guided_or_auto_flags() -> None:
    # [SITL main and v1.16.2] HEARTBEAT.base_mode in OFFBOARD: 145 armed (SAFETY_ARMED |
    # STABILIZE | CUSTOM_MODE), 17 disarmed; AUTO.LOITER 157 armed / 29 disarmed. The sim
    # sent 157 / 29 in OFFBOARD too (GUIDED and AUTO set).
    async with running_sim() as (sim, peer):
        hb = await peer.heartbeat_mode(LOITER)
        assert hb.base_mode == 29
        await offboard_and_arm(sim, peer)
        hb = await peer.wait_for(lambda m: m.get_type() == "HEARTBEAT"
                                 and m.custom_mode == OFFBOARD and m.base_mode & _ARMED)
        assert hb.base_mode == 145
        peer.arm(False, force=True)
        hb = await peer.wait_for(lambda m: m.get_type() == "HEARTBEAT"
                                 and not m.base_mode & _ARMED)
        assert (hb.custom_mode, hb.base_mode) == (OFFBOARD, 17)


async def test_statustext_only_to_links_that_sent_a_gcs_heartbeat() -> None:
    # [SITL main, v1.17.0, v1.16.2] a companion link (ONBOARD_CONTROLLER heartbeat) got no
    # STATUSTEXT while PX4 dropped 20/s invalid setpoints (type_mask 4095, frame 7) and
    # while it failed safe on offboard loss; after a GCS heartbeat on the same link: one
    # "SET_POSITION_TARGET_LOCAL_NED invalid" per message, "Failsafe activated". The sim
    # sent them all to every link.
    async with running_sim() as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        peer.stream(lambda: position_sp(down=-1.0, mask=4095))
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "AUTO.RTL", 2.5)
        assert sim.record.statustexts  # PX4 said it, on its GCS links
        assert not peer.of_type("STATUSTEXT")
        peer.heartbeat(d.MAV_TYPE_GCS)
        await asyncio.sleep(0.05)
        since = asyncio.get_running_loop().time()
        await asyncio.sleep(0.3)
        texts = [str(m.text) for _, m in peer.of_type("STATUSTEXT", since)]
        assert len(texts) >= 4 and set(texts) == {"SET_POSITION_TARGET_LOCAL_NED invalid"}


async def test_disarmed_heartbeat_system_status_is_uninit_where_arming_is_refused() -> None:
    # [SITL main] HEARTBEAT.system_status while disarmed: STANDBY (3) in AUTO.LOITER, in
    # AUTO.TAKEOFF and in OFFBOARD with a setpoint stream; UNINIT (0) ~1 s after that
    # stream stopped, STANDBY again once it resumed; UNINIT in AUTO.RTL, AUTO.LAND and
    # POSCTL without RC. [SITL v1.16.2] UNINIT in OFFBOARD after landing, no stream. The
    # sim said STANDBY whenever disarmed.
    def status_in(mode: int) -> Callable[[Message], bool]:
        return lambda m: m.get_type() == "HEARTBEAT" and m.custom_mode == mode

    async with running_sim() as (_sim, peer):
        assert (await peer.heartbeat_mode(LOITER)).system_status == d.MAV_STATE_STANDBY
        peer.stream(lambda: position_sp(down=0.0))
        await asyncio.sleep(0.2)
        peer.set_mode(OFFBOARD)
        hb = await peer.wait_for(status_in(OFFBOARD))
        assert hb.system_status == d.MAV_STATE_STANDBY
        peer.stop_stream()
        await asyncio.sleep(1.2)
        hb = await peer.wait_for(status_in(OFFBOARD))
        assert hb.system_status == d.MAV_STATE_UNINIT
        for mode in (RTL, LAND, POSCTL):
            peer.set_mode(mode)
            assert (await peer.wait_for(status_in(mode))).system_status == d.MAV_STATE_UNINIT
        peer.set_mode(LOITER)
        assert (await peer.wait_for(status_in(LOITER))).system_status == d.MAV_STATE_STANDBY


def _attitude_sp(mask: int, q: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0),
                 thrust: float = 0.3) -> Message:  # fmt: skip
    return d.MAVLink_set_attitude_target_message(0, 1, 1, mask, list(q), 0.0, 0.0, 0.0, thrust)


async def _offboard_request_after_stream(peer: Peer, make: Callable[[], Message]) -> int:
    """Armed in Hold on the ground, stream `make()` for a while, ask for OFFBOARD: its ACK."""
    peer.arm()
    assert (await peer.ack(d.MAV_CMD_COMPONENT_ARM_DISARM)).result == d.MAV_RESULT_ACCEPTED
    peer.stream(make)
    await asyncio.sleep(0.5)
    peer.set_mode(OFFBOARD)
    await peer.ack(d.MAV_CMD_DO_SET_MODE)
    await asyncio.sleep(0.1)  # v1.16/v1.17 answer twice, the first always ACCEPTED
    acks = [m for _, m in peer.of_type("COMMAND_ACK") if m.command == d.MAV_CMD_DO_SET_MODE]
    return int(acks[-1].result)


async def test_attitude_with_a_nan_or_zero_quaternion_is_proof_of_life() -> None:
    # [SITL v1.16.2, v1.17.0, main] SET_ATTITUDE_TARGET mask 7, thrust 0.3, quaternion
    # all NaN or all zero, 20/s for 1.3 s, armed in Hold: DO_SET_MODE OFFBOARD ACCEPTED
    # and OFFBOARD entered. The sim dropped them and refused OFFBOARD.
    nan = float("nan")
    for q in ((nan, nan, nan, nan), (0.0, 0.0, 0.0, 0.0)):
        for version in ("1.16", "1.18"):
            async with running_sim(px4_version=version) as (sim, peer):
                make = functools.partial(_attitude_sp, 7, q)
                result = await _offboard_request_after_stream(peer, make)
                assert result == d.MAV_RESULT_ACCEPTED, (q, version)
                assert sim.vehicle.mode_name == "OFFBOARD"


async def test_attitude_with_throttle_ignored_is_no_proof_of_life_on_main() -> None:
    # [SITL main] SET_ATTITUDE_TARGET mask 71 (rates and throttle ignored), level, 20/s
    # for 1.3 s, armed in Hold: DO_SET_MODE OFFBOARD TEMPORARILY_REJECTED; [SITL v1.16.2,
    # v1.17.0] ACCEPTED. The sim accepted it on every release.
    async with running_sim(px4_version="1.18") as (_sim, peer):
        result = await _offboard_request_after_stream(peer, lambda: _attitude_sp(71))
        assert result == d.MAV_RESULT_TEMPORARILY_REJECTED
    async with running_sim(px4_version="1.17") as (_sim, peer):
        result = await _offboard_request_after_stream(peer, lambda: _attitude_sp(71))
        assert result == d.MAV_RESULT_ACCEPTED


async def test_param_set_with_the_wrong_type_changes_nothing() -> None:
    # COM_OBL_RC_ACT is INT32; pymavlink's param_set_send sends REAL32 unless told.
    # [SITL main] PARAM_SET COM_OBL_RC_ACT 5.0 REAL32: PARAM_ERROR error 7 (TYPE_MISMATCH),
    # read back 0; [SITL v1.16.2, v1.17.0] no answer at all, read back 0. The sim set it
    # to 5 and echoed PARAM_VALUE. An unknown name set on v1.16.2/v1.17.0: nothing on the
    # companion link either (the sim sent it a STATUSTEXT).
    for version in ("1.16", "1.17", "1.18"):
        async with running_sim(px4_version=version) as (sim, peer):
            peer.send(d.MAVLink_param_set_message(1, 1, b"COM_OBL_RC_ACT", 5.0,
                                                  d.MAV_PARAM_TYPE_REAL32))  # fmt: skip
            peer.send(d.MAVLink_param_set_message(1, 1, b"NO_SUCH_PARAM", 1.0,
                                                  d.MAV_PARAM_TYPE_REAL32))  # fmt: skip
            await asyncio.sleep(0.3)
            assert sim.vehicle.params.get("COM_OBL_RC_ACT") == 0, version
            assert not peer.of_type("PARAM_VALUE") and not peer.of_type("STATUSTEXT")
            errors = [(param_id_str(m.param_id), int(m.error))
                      for _, m in peer.of_type("PARAM_ERROR")]  # fmt: skip
            if version == "1.18":
                assert errors == [("COM_OBL_RC_ACT", 7), ("NO_SUCH_PARAM", 1)]
            else:
                assert errors == []


async def test_set_mode_auto_with_sub_mode_0_is_mission_where_arming_is_refused() -> None:
    # [SITL main, v1.16.2] DO_SET_MODE (1, AUTO, 0) disarmed: ACCEPTED, HEARTBEAT
    # custom_mode 67371008 (AUTO.MISSION), system_status UNINIT; then an arm:
    # TEMPORARILY_REJECTED (no mission). The sim refused the mode and, still in Hold,
    # accepted the arm.
    async with running_sim() as (sim, peer):
        peer.command(d.MAV_CMD_DO_SET_MODE, 1, 4, 0)
        assert (await peer.ack(d.MAV_CMD_DO_SET_MODE)).result == d.MAV_RESULT_ACCEPTED
        hb = await peer.heartbeat_mode(67371008)
        assert hb.system_status == d.MAV_STATE_UNINIT
        peer.arm()
        ack = await peer.ack(d.MAV_CMD_COMPONENT_ARM_DISARM)
        assert ack.result == d.MAV_RESULT_TEMPORARILY_REJECTED and not sim.vehicle.armed


@pytest.mark.parametrize(("version", "nav_rcl_act"), [("1.17", 0), ("1.18", 0), ("1.18", 7)])
async def test_offboard_loss_without_rc_and_no_nav_rcl_act_failsafe_stays_offboard(
    version: str, nav_rcl_act: int
) -> None:
    # [SITL v1.17.0 and main] COM_OBL_RC_ACT 0, NAV_RCL_ACT 0 (Disabled), no RC, stream
    # stopped at 2 m: no mode change for 8 s, still armed, HEARTBEAT OFFBOARD with
    # system_status ACTIVE, the vehicle held 2 m (1.75-2.21 m on v1.17.0, 1.91-2.02 on
    # main); a DO_SET_MODE OFFBOARD then: TEMPORARILY_REJECTED. [SITL main] NAV_RCL_ACT 7
    # the same. The sim landed (0) or went to AUTO.LOITER (7).
    params = {"NAV_RCL_ACT": nav_rcl_act}
    async with running_sim(px4_version=version, params=params) as (sim, peer):
        await offboard_and_arm(sim, peer, down=-2.0)
        assert await sim.wait_until(lambda: abs(sim.vehicle.position_ned_m[2] + 2.0) < 0.2, 8)
        peer.stop_stream()
        await asyncio.sleep(2.5)
        assert sim.vehicle.armed and sim.vehicle.mode_name == "OFFBOARD"
        assert not sim.record.changes_to("AUTO.LAND") and not sim.record.changes_to("AUTO.LOITER")
        assert abs(sim.vehicle.position_ned_m[2] + 2.0) < 0.3
        hb = await peer.wait_for(lambda m: m.get_type() == "HEARTBEAT")
        assert (hb.custom_mode, hb.system_status) == (OFFBOARD, d.MAV_STATE_ACTIVE)
        peer.set_mode(OFFBOARD)
        await peer.ack(d.MAV_CMD_DO_SET_MODE)
        await asyncio.sleep(0.1)
        acks = [m for _, m in peer.of_type("COMMAND_ACK") if m.command == d.MAV_CMD_DO_SET_MODE]
        assert acks[-1].result == d.MAV_RESULT_TEMPORARILY_REJECTED


@pytest.mark.parametrize("version", ["1.17", "1.18"])
async def test_offboard_loss_with_no_failsafe_flies_the_last_velocity_on(version: str) -> None:
    # [SITL main and v1.17.0] COM_OBL_RC_ACT 0, NAV_RCL_ACT 0, no RC, hovering at 5 m, then
    # 1 m/s north streamed for 3 s and stopped: still OFFBOARD and armed 10 s later, flying
    # north at 0.8-0.94 m/s the whole time (x 1.75 -> 9.39 m on main; tests/px4:
    # test_px4_loss.py). The sim held where it was (review).
    async with running_sim(px4_version=version, params={"NAV_RCL_ACT": 0}) as (sim, peer):
        await offboard_and_arm(sim, peer, down=-5.0)
        assert await sim.wait_until(lambda: abs(sim.vehicle.position_ned_m[2] + 5.0) < 0.3, 10)
        peer.stream(lambda: position_sp(mask=_VELOCITY_ONLY, vx=1.0))
        await asyncio.sleep(3.0)
        peer.stop_stream()
        north_m = sim.vehicle.position_ned_m[0]
        await asyncio.sleep(3.0)
        assert sim.vehicle.armed and sim.vehicle.mode_name == "OFFBOARD"
        assert sim.vehicle.position_ned_m[0] - north_m > 2.4  # >= 0.8 m/s for 3 s


@pytest.mark.parametrize("version", ["1.16", "1.18"])
async def test_command_answers_for_unknown_messages_heartbeat_rate_and_reboot_noop(
    version: str,
) -> None:
    # [SITL main and v1.16.2] REQUEST_MESSAGE 9999: DENIED; REQUEST_MESSAGE 300
    # (PROTOCOL_VERSION): ACCEPTED; SET_MESSAGE_INTERVAL HEARTBEAT 10 Hz: FAILED;
    # PREFLIGHT_REBOOT_SHUTDOWN 0 ("do nothing"): ACCEPTED. The sim: UNSUPPORTED,
    # UNSUPPORTED, ACCEPTED, UNSUPPORTED.
    async with running_sim(px4_version=version) as (sim, peer):
        steps = [(d.MAV_CMD_REQUEST_MESSAGE, (9999,), d.MAV_RESULT_DENIED),
                 (d.MAV_CMD_REQUEST_MESSAGE, (300,), d.MAV_RESULT_ACCEPTED),
                 (d.MAV_CMD_SET_MESSAGE_INTERVAL, (0, 100_000), d.MAV_RESULT_FAILED),
                 (d.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, (0,), d.MAV_RESULT_ACCEPTED)]  # fmt: skip
        for command, params, expected in steps:
            peer.command(command, *params)
            assert (await peer.ack(command)).result == expected, (command, params)
        await asyncio.sleep(0.2)
        assert not sim.record.reboots


async def test_current_mode_never_shows_the_new_intent_before_the_new_mode() -> None:
    # [SITL main] CURRENT_MODE at a 0.05 s interval, DO_SET_MODE OFFBOARD from Hold
    # (streaming): (LOITER, intent LOITER) with the ACK, then (OFFBOARD, OFFBOARD) 52 ms
    # later; Hold from OFFBOARD the same way round. The sim sent (LOITER, intent OFFBOARD)
    # first: an intent PX4 never reported ahead of its mode.
    async with running_sim(px4_version="1.18") as (_sim, peer):
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, 436, 50_000)
        peer.stream(lambda: position_sp(down=-2.0))
        await asyncio.sleep(0.3)
        for target in (OFFBOARD, LOITER, OFFBOARD):
            since = asyncio.get_running_loop().time()
            peer.set_mode(target)
            await peer.wait_for(lambda m, t=target: m.get_type() == "CURRENT_MODE"
                                and m.custom_mode == t)  # fmt: skip
            seen = [(m.custom_mode, m.intended_custom_mode)
                    for _, m in peer.of_type("CURRENT_MODE", since)]  # fmt: skip
            assert all(intent == mode or mode == target for mode, intent in seen), seen
            await asyncio.sleep(0.2)


# ---- takeoff and landing timelines (review of 2026-11-27, takeoff/land) ----------------
# [SITL main, v1.17.0, v1.16.2], PX4 defaults, times from the arm / AUTO.LAND ACK.


def _first_after(peer: Peer, since_s: float, name: str, pred: Callable[[Message], bool]
                 ) -> float | None:  # fmt: skip
    """When the first `name` message matching `pred` arrived after `since_s`, relative."""
    return next((t - since_s for t, m in peer.of_type(name, since_s) if pred(m)), None)


def _climbing(m: Message) -> bool:
    return bool(m.z < -0.05)


async def test_auto_takeoff_climbs_after_spool_up_and_ramp_and_holds_0_8_m_below() -> None:
    # [SITL] NAV_TAKEOFF (MIS_TAKEOFF_ALT 2.5) then arm: landed_state TAKEOFF at 1.66-1.97 s,
    # 5 cm up at 4.2-4.8 s, AUTO.LOITER with IN_AIR at 6.7-7.9 s at ~1.7 m (NAV_MC_ALT_RAD
    # 0.8 below), then on up to 2.5 m. The sim: TAKEOFF at ~1 s, 5 cm up at 1.1 s, Hold at
    # 2.6 s at 2.35 m.
    async with running_sim() as (sim, peer):
        peer.command(d.MAV_CMD_NAV_TAKEOFF, 0, 0, 0, *[float("nan")] * 4)
        await peer.heartbeat_mode(TAKEOFF)
        peer.arm()
        await peer.ack(d.MAV_CMD_COMPONENT_ARM_DISARM)
        armed_s = sim.now()
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "AUTO.LOITER", 9)
        hold_s = sim.now() - armed_s
        hold_alt_m = -sim.vehicle.position_ned_m[2]
        await asyncio.sleep(0.2)
        takeoff_s = _first_after(peer, armed_s, "EXTENDED_SYS_STATE",
                                 lambda m: m.landed_state == d.MAV_LANDED_STATE_TAKEOFF)
        up_s = _first_after(peer, armed_s, "LOCAL_POSITION_NED", _climbing)
        assert takeoff_s is not None and 1.4 <= takeoff_s <= 2.4, takeoff_s
        assert up_s is not None and 3.4 <= up_s <= 5.0, up_s
        assert 5.7 <= hold_s <= 8.4 and 1.5 <= hold_alt_m <= 2.0, (hold_s, hold_alt_m)
        assert sim.vehicle.landed_state == d.MAV_LANDED_STATE_IN_AIR
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -2.3, 4)


async def test_offboard_takeoff_lifts_off_about_3_s_after_arming() -> None:
    # [SITL main, v1.17.0, v1.16.2] OFFBOARD toward 2.5 m, armed: "Takeoff detected" / IN_AIR
    # 1.85-1.89 s (v1.16.2 once 1.27 s), 5 cm up at 3.2-3.5 s (the velocity limit ramps
    # from a descent over MPC_TKO_RAMP_T, the integral winds up on the ground), 1 m at
    # 4.0-4.5 s. The sim: IN_AIR at 1.4 s, 5 cm up at 1.1 s, 1 m at 2.0 s.
    async with running_sim() as (sim, peer):
        await offboard_and_arm(sim, peer, down=-2.5)
        armed_s = sim.now()
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -1.0, 6)
        one_m_s = sim.now() - armed_s
        in_air_s = _first_after(peer, armed_s, "EXTENDED_SYS_STATE",
                                lambda m: m.landed_state == d.MAV_LANDED_STATE_IN_AIR)
        up_s = _first_after(peer, armed_s, "LOCAL_POSITION_NED", _climbing)
        assert in_air_s is not None and 1.5 <= in_air_s <= 2.3, in_air_s
        assert up_s is not None and 2.7 <= up_s <= 3.8, up_s
        assert 3.6 <= one_m_s <= 4.9, one_m_s


async def test_mpc_tko_ramp_t_0_lifts_off_right_after_the_spool_up() -> None:
    # [SITL main] MPC_TKO_RAMP_T 0 (PX4: "0 disables the ramp"), OFFBOARD toward 2.5 m:
    # "Takeoff detected" 1.07 s, 5 cm up 1.28 s, 1 m at 1.86 s. The sim had no such
    # parameter (PARAM_SET of it: unknown).
    async with running_sim(params={"MPC_TKO_RAMP_T": 0.0}) as (sim, peer):
        await offboard_and_arm(sim, peer, down=-2.5)
        armed_s = sim.now()
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -1.0, 4)
        one_m_s = sim.now() - armed_s
        up_s = _first_after(peer, armed_s, "LOCAL_POSITION_NED", _climbing)
        assert up_s is not None and 1.0 <= up_s <= 1.6, up_s
        assert 1.5 <= one_m_s <= 2.4, one_m_s


async def _auto_land_from(sim: SimServer, peer: Peer, down_m: float, *, within_m: float
                          ) -> float:
    """Climb in OFFBOARD to `down_m`, then AUTO.LAND with the stream stopped; when (sim s)."""
    await offboard_and_arm(sim, peer, down=down_m)
    assert await sim.wait_until(
        lambda: abs(sim.vehicle.position_ned_m[2] - down_m) < within_m, 10)
    peer.set_mode(LAND)
    await peer.ack(d.MAV_CMD_DO_SET_MODE)
    land_s = sim.now()
    peer.stop_stream()
    return land_s


async def test_auto_land_from_2_5_m_crawls_the_last_metre_and_detects_landing_later() -> None:
    # [SITL main] AUTO.LAND from 2.5 m: LANDING at once, 0.7 m/s, 0.3 m/s (MPC_LAND_CRWL)
    # below ~0.8 m (MPC_LAND_ALT3, the SIH quad's distance sensor), touchdown 5.1-5.4 s,
    # ON_GROUND 7.33 s (1.95-2.02 s after touchdown), "Disarmed by landing" 9.35 s
    # (v1.17.0: ON_GROUND 8.7 s, v1.16.2: 10.3 s). The sim: 0.7 m/s to the ground,
    # ON_GROUND at ~4.7 s.
    async with running_sim(params=QUICK_TAKEOFF) as (sim, peer):
        land_s = await _auto_land_from(sim, peer, -2.5, within_m=0.05)
        assert await sim.wait_until(lambda: not sim.vehicle.armed, 11)
        disarm_s = sim.now() - land_s
        await asyncio.sleep(0.2)
        ground_s = _first_after(peer, land_s, "EXTENDED_SYS_STATE",
                                lambda m: m.landed_state == d.MAV_LANDED_STATE_ON_GROUND)
        low = [m.vz for _, m in peer.of_type("LOCAL_POSITION_NED", land_s) if -0.4 < m.z < -0.1]
        assert low and max(low) < 0.45, low  # crawling
        assert ground_s is not None and 6.5 <= ground_s <= 8.2, ground_s
        assert 8.5 <= disarm_s <= 10.2, disarm_s


async def test_auto_land_above_mpc_land_alt2_descends_faster() -> None:
    # [SITL main, v1.17.0, v1.16.2] AUTO.LAND from 7 m: up to 0.94 / 0.87 / 0.85 m/s above
    # 5 m (MPC_LAND_SPEED 0.7 at MPC_LAND_ALT2 5 m, MPC_Z_VEL_MAX_DN 1.5 at MPC_LAND_ALT1
    # 10 m, linear between), 0.70 below. The sim: 0.7 m/s anywhere below 10 m.
    async with running_sim(params=QUICK_TAKEOFF) as (sim, peer):
        land_s = await _auto_land_from(sim, peer, -7.0, within_m=0.1)
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] > -4.5, 6)
        high = [m.vz for _, m in peer.of_type("LOCAL_POSITION_NED", land_s) if m.z < -5.2]
        low = [m.vz for _, m in peer.of_type("LOCAL_POSITION_NED", land_s) if m.z > -4.8]
        assert 0.8 <= max(high) <= 1.1, max(high)
        assert abs(low[-1] - 0.7) < 0.1, low[-1]
