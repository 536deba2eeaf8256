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
from tests.sim.client import (
    LAND,
    LOITER,
    OFFBOARD,
    POSCTL,
    RTL,
    Peer,
    d,
    offboard_and_arm,
    position_sp,
    running_sim,
)

_ARMED = d.MAV_MODE_FLAG_SAFETY_ARMED


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
