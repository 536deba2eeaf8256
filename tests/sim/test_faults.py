"""Each injected fault and its PX4 effect, over real UDP."""

from __future__ import annotations

import asyncio

from offboardd.mavlink.params import decode_param_value, encode_param_value
from offboardd.sim import FaultSpec
from offboardd.sim.faults import parse_fault
from offboardd.sim.telemetry import ESTIMATOR_FLAGS_BAD, ESTIMATOR_FLAGS_OK
from tests.sim.client import LOITER, Peer, d, offboard_and_arm, position_sp, running_sim


def test_fault_specs_parse_from_the_command_line_form() -> None:
    assert parse_fault("estimator_invalid@12") == FaultSpec("estimator_invalid", 12.0)
    assert parse_fault("mode:AUTO.LOITER@5") == FaultSpec("mode", 5.0, "AUTO.LOITER")
    assert parse_fault("link_pause:2.5@20") == FaultSpec("link_pause", 20.0, "2.5")
    for bad in ("reboot", "mode:NOPE@1", "link_pause:x@1", "meteor@2", "reboot@soon"):
        try:
            parse_fault(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} parsed")


async def test_fault_gcs_mode_switch_to_any_mode_ends_the_offboard_intent() -> None:
    async with running_sim(faults=(FaultSpec("mode", 1.2, "AUTO.LOITER"),)) as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        await peer.heartbeat_mode(LOITER, 3)
        assert sim.vehicle.intended_mode_name == "AUTO.LOITER"
        assert sim.record.changes_to("AUTO.LOITER")[-1].cause == "gcs"
        await asyncio.sleep(0.5)  # the companion still streams: no re-entry
        assert sim.vehicle.mode_name == "AUTO.LOITER"
        sim.pilot_mode_switch("POSCTL")  # a pilot's switch: RC is there, so it runs
        await asyncio.sleep(0.1)
        assert sim.vehicle.mode_name == "POSCTL" and sim.vehicle.armed


async def test_fault_rc_takeover_ignored_in_offboard_by_default() -> None:
    """v1.16.2's COM_RC_OVERRIDE (gone in v1.18, where MAN_OVERRIDE_SPD decides)."""
    async with running_sim(px4_version="1.16") as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        sim.rc_takeover()  # COM_RC_OVERRIDE = 1: auto modes only
        await asyncio.sleep(0.2)
        assert sim.vehicle.mode_name == "OFFBOARD"
        sim.pilot_mode_switch("AUTO.LOITER")
        await asyncio.sleep(0.05)
        sim.rc_takeover()  # in an auto mode bit 0 applies: the pilot takes over
        await asyncio.sleep(0.1)
        assert sim.vehicle.mode_name == "POSCTL"


async def test_fault_estimator_invalid_flips_flags_offboard_lost_positions_go_on() -> None:
    """[SITL main] GPS cut in flight: LOCAL_POSITION_NED, ODOMETRY and GLOBAL_POSITION_INT
    went on at their rates through the failsafe (PX4 #20389); ESTIMATOR_STATUS alone said
    the horizontal estimate was gone (101: attitude and the vertical estimate left)."""
    async with running_sim() as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        await asyncio.sleep(0.3)
        sim.set_estimator_valid(False)
        t0 = sim.now()
        await asyncio.sleep(1.2)  # ESTIMATOR_STATUS comes once a second, as from PX4
        assert len(peer.of_type("LOCAL_POSITION_NED", t0 + 0.05)) > 20
        assert len(peer.of_type("GLOBAL_POSITION_INT", t0 + 0.05)) > 20
        flags = [m.flags for _, m in peer.of_type("ESTIMATOR_STATUS", t0 + 0.05)]
        assert flags and all(f == ESTIMATOR_FLAGS_BAD == 101 for f in flags)
        assert sim.vehicle.mode_name == "AUTO.LAND"  # position setpoints cannot be flown
        sim.set_estimator_valid(True)
        t1 = sim.now()
        await asyncio.sleep(1.2)
        assert peer.of_type("LOCAL_POSITION_NED", t1)
        assert peer.of_type("ESTIMATOR_STATUS", t1)[-1][1].flags == ESTIMATOR_FLAGS_OK
        assert sim.vehicle.mode_name == "OFFBOARD"  # the stream never stopped: re-entry


async def test_scheduled_global_terrain_and_termination_faults() -> None:
    """By name, as `--fault` gives them: each estimate alone, back after its ARG seconds;
    a flight termination keeps the vehicle armed, its motors cut."""
    faults = tuple(parse_fault(text) for text in (
        "global_invalid:0.6@1.0", "terrain_invalid@1.0", "flight_termination@3.0"))
    async with running_sim(faults=faults) as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        c = sim.vehicle.commander
        assert await sim.wait_until(lambda: not c.global_valid, 2)
        assert c.estimator_valid and not c.terrain_valid
        assert await sim.wait_until(lambda: c.global_valid, 1)  # 0.6 s later
        assert not c.terrain_valid  # until terrain_valid
        assert await sim.wait_until(lambda: c.terrain_valid is False and c.terminated, 2)
        assert sim.vehicle.armed


async def test_fault_link_pause_silences_both_ways_and_a_long_pause_is_an_offboard_loss() -> None:
    async with running_sim() as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        await asyncio.sleep(0.2)
        sim.pause_link(1.5)
        t0 = sim.now()
        n_setpoints = len(sim.record.setpoints)
        await asyncio.sleep(1.3)
        assert not [t for t, _ in peer.received if t > t0 + 0.02]
        assert len(sim.record.setpoints) == n_setpoints  # nothing heard either
        await asyncio.sleep(0.5)
        assert peer.of_type("ATTITUDE", t0 + 1.5)
        # 1.5 s without setpoints: loss (Return without RC since v1.17)...
        assert sim.record.changes_to("AUTO.RTL")
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "OFFBOARD", 1)  # ...back


async def test_fault_link_drop_until_restore() -> None:
    async with running_sim() as (sim, peer):
        await asyncio.sleep(0.2)
        sim.drop_link()
        t0 = sim.now()
        await asyncio.sleep(1.2)
        assert not [t for t, _ in peer.received if t > t0 + 0.02]
        sim.restore_link("udp")
        await peer.wait_for(lambda m: m.get_type() == "ATTITUDE", 1)


async def test_fault_reboot_heartbeat_gap_boot_time_restarts_disarmed_params_kept() -> None:
    async with running_sim(reboot_gap_s=1.5, params={"COM_DISARM_PRFLT": 0.0}) as (sim, peer):
        peer.send(d.MAVLink_param_set_message(
            1, 1, b"COM_OBL_RC_ACT", encode_param_value(5, d.MAV_PARAM_TYPE_INT32),
            d.MAV_PARAM_TYPE_INT32))  # fmt: skip
        peer.arm()
        assert await sim.wait_until(lambda: sim.vehicle.armed, 2)
        await asyncio.sleep(1.0)
        before_ms = peer.of_type("ATTITUDE")[-1][1].time_boot_ms
        peer.command(d.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, 1)  # refused while armed
        await peer.wait_for(lambda m: m.get_type() == "COMMAND_ACK" and m.result == 2)
        sim.reboot()
        t0 = sim.now()
        hb = await peer.wait_for(lambda m: m.get_type() == "HEARTBEAT", 4)
        gap = next(t for t, m in reversed(peer.received) if m is hb) - t0
        assert 1.4 <= gap <= 2.0
        assert not hb.base_mode & d.MAV_MODE_FLAG_SAFETY_ARMED and not sim.vehicle.armed
        att = await peer.wait_for(lambda m: m.get_type() == "ATTITUDE")
        assert att.time_boot_ms < 300 < before_ms
        peer.send(d.MAVLink_param_request_read_message(1, 1, b"COM_OBL_RC_ACT", -1))
        pv = await peer.wait_for(lambda m: m.get_type() == "PARAM_VALUE")
        assert decode_param_value(pv.param_value, pv.param_type) == 5
        # a rebooted PX4 numbers its frames afresh
        first_after = next(m for t, m in peer.received if t > t0)
        assert first_after.get_seq() == 0


async def test_reboot_command_when_disarmed() -> None:
    async with running_sim(reboot_gap_s=0.5) as (sim, peer):
        peer.command(d.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, 1)
        ack = await peer.ack(d.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN)
        assert ack.result == d.MAV_RESULT_ACCEPTED
        assert await sim.wait_until(lambda: bool(sim.record.reboots), 2)


async def test_gcs_peer_sees_the_same_vehicle() -> None:
    async with running_sim(gcs_bind=("127.0.0.1", 0)) as (sim, _peer):
        gcs = await Peer.connect(sim.gcs_port or 0, system_id=255, component_id=190)
        try:
            hb = await gcs.wait_for(lambda m: m.get_type() == "HEARTBEAT", 2)
            assert hb.custom_mode == LOITER
        finally:
            gcs.close()


async def test_fault_packet_loss_loses_that_share_each_way() -> None:
    async with running_sim(faults=(FaultSpec("packet_loss", 0.0, "0.5"),)) as (sim, peer):
        await asyncio.sleep(0.1)
        start = sim.now()
        for _ in range(100):
            peer.send(position_sp())
            await asyncio.sleep(0.005)
        await asyncio.sleep(1.0)
        heard = len(sim.record.setpoints)
        assert 25 <= heard <= 75
        attitude_hz = len(peer.of_type("ATTITUDE", start + 0.1)) / (sim.now() - start - 0.1)
        assert 30 <= attitude_hz <= 70  # half of 100/s
        sim.set_packet_loss(0.0)
        t0 = sim.now()
        await asyncio.sleep(0.5)
        assert len(peer.of_type("ATTITUDE", t0 + 0.05)) >= 40
