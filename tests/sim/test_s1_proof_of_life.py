"""px4-offboard.md §1 (proof of life), one test per bullet, over real UDP and MAVLink bytes."""

from __future__ import annotations

import asyncio

from tests.sim.client import (
    NAN,
    OFFBOARD,
    QUICK_TAKEOFF,
    Peer,
    d,
    offboard_and_arm,
    position_sp,
    running_sim,
)

ARM = d.MAV_CMD_COMPONENT_ARM_DISARM
SET_MODE = d.MAV_CMD_DO_SET_MODE


async def _last_ack(peer: Peer, command: int, count: int = 1) -> int:
    """The result of the `count`-th ACK for `command` (DO_SET_MODE: twice on v1.16.2, once
    on v1.17+, the sim's default release)."""
    for _ in range(50):
        acks = [m for _, m in peer.of_type("COMMAND_ACK") if m.command == command]
        if len(acks) >= count:
            return int(acks[count - 1].result)
        await asyncio.sleep(0.02)
    raise AssertionError(f"no ACK #{count} for command {command}")


async def test_s1_only_valid_setpoints_are_proof_of_life_not_heartbeat_or_actuator() -> None:
    async with running_sim() as (sim, peer):
        peer.set_mode(OFFBOARD)  # disarmed: accepted even without a stream
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "OFFBOARD", 2)
        for _ in range(10):
            peer.heartbeat()
            peer.send(d.MAVLink_set_actuator_control_target_message(0, 0, 1, 1, [0.5] * 8))
            await asyncio.sleep(0.02)
        peer.arm()
        assert await _last_ack(peer, ARM) == d.MAV_RESULT_TEMPORARILY_REJECTED
        assert not sim.vehicle.armed and sim.record.first_valid_setpoint_s is None
        peer.send(position_sp())
        await asyncio.sleep(0.05)
        peer.arm()
        assert await _last_ack(peer, ARM, 2) == d.MAV_RESULT_ACCEPTED


async def test_s1_proof_of_life_stamped_on_receipt_in_any_mode_applied_only_in_offboard() -> (
    None
):
    async with running_sim() as (sim, peer):
        peer.arm()  # in AUTO.LOITER (boot mode) on the ground
        assert await sim.wait_until(lambda: sim.vehicle.armed, 2)
        # time_boot_ms far in the past and nonsense: PX4 uses its own clock.
        peer.stream(lambda: position_sp(down=-3.0))
        await asyncio.sleep(0.5)
        assert sim.vehicle.mode_name == "AUTO.LOITER"
        assert sim.vehicle.position_ned_m[2] > -0.05  # not applied outside OFFBOARD
        assert len(sim.record.valid_setpoints()) >= 5  # but counted as proof of life
        peer.set_mode(OFFBOARD)  # armed: accepted because the signal is already there
        assert await _last_ack(peer, SET_MODE) == d.MAV_RESULT_ACCEPTED
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -1.0, 4)


async def test_s1_availability_needs_flag_timeout_and_the_estimate_the_flag_needs() -> None:
    async with running_sim() as (sim, peer):
        await offboard_and_arm(sim, peer, down=0.0)  # position stream, armed on the ground
        sim.set_estimator_valid(False)
        # position setpoints keep coming (valid messages) but need a position estimate
        await asyncio.sleep(0.4)
        assert sim.vehicle.mode_name == "AUTO.LAND"  # no estimate: PX4 descends
        assert sim.vehicle.intended_mode_name == "OFFBOARD"
        assert sim.record.setpoints[-1].verdict == "valid"
        # attitude + thrust needs no position estimate: available again, PX4 re-enters
        peer.stream(lambda: d.MAVLink_set_attitude_target_message(
            0, 1, 1, 7, [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0, 0.3))  # fmt: skip
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "OFFBOARD", 1)
        # and the timeout: stop streaming, unavailable after ~COM_OF_LOSS_T
        peer.stop_stream()
        assert await sim.wait_until(lambda: sim.vehicle.mode_name != "OFFBOARD", 2)


async def test_s1_no_one_second_gate_offboard_accepted_after_8_ms_two_setpoints() -> None:
    async with running_sim() as (sim, peer):
        peer.arm()  # armed in Hold, so DO_SET_MODE OFFBOARD really checks availability
        assert await sim.wait_until(lambda: sim.vehicle.armed, 2)
        peer.send(position_sp(down=0.0))
        await asyncio.sleep(0.004)
        peer.send(position_sp(down=0.0))
        await asyncio.sleep(0.004)
        peer.set_mode(OFFBOARD)
        assert await _last_ack(peer, SET_MODE) == d.MAV_RESULT_ACCEPTED
        assert await sim.wait_until(lambda: sim.vehicle.mode_name == "OFFBOARD", 1)


async def test_s1_valid_means_target_ids_and_mav_fwdextsp() -> None:
    async with running_sim(params={"MAV_FWDEXTSP": 0}) as (sim, peer):
        peer.send(position_sp(target=(1, 1)))  # forwarding off: dropped
        peer.send(position_sp(target=(2, 1)))  # another system
        peer.send(position_sp(target=(1, 5)))  # another component
        await asyncio.sleep(0.1)
        sim.vehicle.params.set("MAV_FWDEXTSP", 1)
        peer.send(position_sp(target=(0, 0)))  # broadcast: fine
        peer.send(position_sp(target=(1, 1)))
        await asyncio.sleep(0.1)
        verdicts = [s.verdict for s in sim.record.setpoints]
        assert verdicts == ["dropped", "dropped", "dropped", "valid", "valid"]
        assert "MAV_FWDEXTSP" in sim.record.setpoints[0].reason
        assert not sim.record.statustexts  # silently


async def test_s1_local_ned_frames_1_and_8_only_others_dropped_with_statustext() -> None:
    async with running_sim() as (sim, peer):
        peer.heartbeat(d.MAV_TYPE_GCS)  # PX4 sends its texts only where a GCS was seen
        await asyncio.sleep(0.05)
        for frame in (7, 9, 12):
            peer.send(position_sp(frame=frame))
        peer.send(position_sp(frame=1))
        peer.send(position_sp(frame=8, mask=0b110111000111, vx=1.0, vy=0.0, vz=0.0))
        await peer.wait_for(lambda m: m.get_type() == "STATUSTEXT" and "12" in str(m.text))
        await asyncio.sleep(0.1)
        assert [s.verdict for s in sim.record.setpoints] == ["dropped"] * 3 + ["valid"] * 2
        texts = [t.text for t in sim.record.statustexts]
        assert texts == [f"SET_POSITION_TARGET_LOCAL_NED coordinate frame {f} unsupported"
                         for f in (7, 9, 12)]  # fmt: skip
        # >50 characters: PX4 chunks it (same id, chunk_seq 0, 1)
        chunks = [m for _, m in peer.of_type("STATUSTEXT")]
        assert chunks[0].id != 0 and chunks[0].id == chunks[1].id
        assert [c.chunk_seq for c in chunks[:2]] == [0, 1]
        assert all(c.severity == d.MAV_SEVERITY_CRITICAL for c in chunks)


async def test_s1_body_ned_position_ignored_velocity_needs_all_three_rotated_by_heading() -> (
    None
):
    async with running_sim() as (sim, peer):
        vel_xyz = 0b110111000111  # velocity only (2503 without yaw bits)
        peer.send(position_sp(frame=8, mask=0b110111111000))  # BODY_NED, position only
        peer.send(position_sp(frame=8, mask=vel_xyz | 32, vx=1.0, vy=0.0))  # vz ignored
        peer.send(position_sp(frame=8, mask=1479, vx=1.0, vy=0.0, vz=0.0))  # MAVSDK's mask
        await asyncio.sleep(0.1)
        verdicts = [s.verdict for s in sim.record.setpoints]
        assert verdicts == ["dropped", "dropped", "valid"]
        assert sim.record.statustexts[0].text == "SET_POSITION_TARGET_LOCAL_NED invalid"
        # heading rotation: face east (yaw 90 deg), forward 2 m/s in body = east in NED
        sim.vehicle.state.yaw_rad = 1.5708
        await offboard_and_arm(sim, peer, down=-2.0, yaw=1.5708)
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -1.5, 5)
        peer.stream(lambda: position_sp(frame=8, mask=1479 & ~1024 | 1024, vx=2.0, vy=0.0,
                                        vz=0.0))  # fmt: skip
        # PX4 gets there slowly (its velocity integral against SIH's drag): 1.5 m/s after
        # 3 s on main, v1.17.0 and v1.16.2 (docs/px4.md)
        await asyncio.sleep(3.0)
        vn, ve, _ = sim.vehicle.velocity_ned_m_s
        assert ve > 1.3 and abs(vn) < 0.3


async def test_s1_at_least_one_of_position_velocity_acceleration_yaw_only_dropped() -> None:
    async with running_sim() as (sim, peer):
        peer.send(position_sp(mask=4095))
        peer.send(position_sp(mask=0b101111111111, yaw=1.0))  # yaw only
        peer.send(position_sp(mask=3135, afx=1.0, afy=0.0, afz=0.0))  # acceleration NED
        await asyncio.sleep(0.1)
        assert [s.verdict for s in sim.record.setpoints] == ["dropped", "dropped", "valid"]
        assert [t.text for t in sim.record.statustexts] == [
            "SET_POSITION_TARGET_LOCAL_NED invalid"] * 2  # fmt: skip


async def test_s1_force_set_with_acceleration_refused() -> None:
    async with running_sim() as (sim, peer):
        peer.send(position_sp(mask=3135 | 512, afx=1.0))
        peer.send(position_sp(mask=2552 | 512))  # FORCE_SET without acceleration: harmless
        await asyncio.sleep(0.1)
        assert [s.verdict for s in sim.record.setpoints] == ["dropped", "valid"]


async def test_s1_accepted_but_controller_failsafe_while_still_offboard() -> None:
    async with running_sim(params=QUICK_TAKEOFF) as (sim, peer):
        await offboard_and_arm(sim, peer, down=-2.0)
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -1.8, 6)
        # horizontal velocity with vz ignored: the z axis has nothing to follow
        peer.stream(lambda: position_sp(mask=0b110111100111, vx=3.0, vy=0.0))
        await asyncio.sleep(1.5)  # longer than COM_OF_LOSS_T: proof of life still counts
        last = sim.record.setpoints[-1]
        assert last.verdict == "controller_failsafe" and "axis z" in last.reason
        assert sim.vehicle.mode_name == "OFFBOARD"
        vn, _, vd = sim.vehicle.velocity_ned_m_s
        assert abs(vn) < 0.5 and abs(vd) < 0.3  # flying its own stop-and-hold setpoint
        # x without y
        peer.stream(lambda: position_sp(mask=0b110111111010, north=10.0))
        await asyncio.sleep(0.3)
        assert "x and y" in sim.record.setpoints[-1].reason
        assert sim.vehicle.mode_name == "OFFBOARD" and abs(sim.vehicle.position_ned_m[0]) < 1


def _global_sp(frame: int, lat: float, lon: float, alt: float, mask: int = 2552) -> object:
    return d.MAVLink_set_position_target_global_int_message(
        0, 1, 1, frame, mask, int(lat * 1e7), int(lon * 1e7), alt,
        0, 0, 0, 0, 0, 0, NAN, 0,
    )  # fmt: skip


async def test_s1_global_int_frames_5_6_11_need_lat_lon_alt_and_a_global_estimate() -> None:
    async with running_sim(params=QUICK_TAKEOFF) as (sim, peer):
        lat, lon, home_alt = 47.397742, 8.545594, 488.0
        peer.send(_global_sp(5, lat, lon, home_alt + 3))
        peer.send(_global_sp(6, lat, lon, 3.0))
        peer.send(_global_sp(11, lat, lon, 3.0))
        peer.send(_global_sp(0, lat, lon, 3.0))  # MAV_FRAME_GLOBAL: dropped
        peer.send(_global_sp(6, lat, lon, 3.0, mask=2552 | 4))  # alt ignored: no position
        await asyncio.sleep(0.1)
        assert [s.verdict for s in sim.record.setpoints] == [
            "valid", "valid", "valid", "dropped", "dropped"]  # fmt: skip
        sim.set_estimator_valid(False)
        peer.send(_global_sp(6, lat, lon, 3.0))
        await asyncio.sleep(0.05)
        assert sim.record.setpoints[-1].verdict == "dropped"
        sim.set_estimator_valid(True)
        # 20 m north of home, 3 m up, frame 6: the vehicle flies there
        peer.stream(lambda: _global_sp(6, lat + 20 / 111_195, lon, 3.0))
        await asyncio.sleep(1.2)  # PX4's commander counts the estimate after 1 s again
        peer.set_mode(OFFBOARD)
        peer.arm()
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[0] > 15, 8)
        assert abs(sim.vehicle.position_ned_m[2] + 3.0) < 0.5


async def test_s1_attitude_target_attitude_rates_and_thrust_throttle_ignore_zero() -> None:
    # 1.17: THROTTLE_IGNORE still counts there ([SITL v1.17.0]; main refuses it:
    # test_px4_differential.py)
    async with running_sim(px4_version="1.17") as (sim, peer):
        def att(mask: int, thrust: float = 0.6) -> object:
            return d.MAVLink_set_attitude_target_message(
                0, 1, 1, mask, [1.0, 0.0, 0.0, 0.0], 0.0, 0.0, 0.0, thrust)

        peer.send(att(7 | 128))  # attitude ignored and roll/pitch rates ignored: nothing
        peer.send(att(1 | 128))  # rates but roll rate ignored: nothing
        peer.send(att(128))  # body rates only
        peer.send(att(7))  # attitude only (MAVSDK's mask)
        await asyncio.sleep(0.1)
        assert [s.verdict for s in sim.record.setpoints] == [
            "dropped", "dropped", "valid", "valid"]  # fmt: skip
        # THROTTLE_IGNORE on a multicopter: zero thrust, the vehicle cannot climb
        peer.stream(lambda: att(7 | 64))
        await asyncio.sleep(0.2)
        peer.set_mode(OFFBOARD)
        peer.arm()
        assert await sim.wait_until(lambda: sim.vehicle.armed, 2)
        await asyncio.sleep(0.5)
        assert sim.vehicle.state.thrust == 0.0 and sim.vehicle.position_ned_m[2] > -0.05
        # THRUST_BODY_SET without the thrust_body extension (pymavlink 2.4.50 lacks it):
        # zeros, so no thrust either; the scalar thrust climbs.
        peer.stream(lambda: att(7 | 32))
        await asyncio.sleep(0.3)
        assert sim.vehicle.state.thrust == 0.0
        peer.stream(lambda: att(7, thrust=0.7))
        assert await sim.wait_until(lambda: sim.vehicle.position_ned_m[2] < -1.0, 3)
