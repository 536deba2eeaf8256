"""The offboard engine end to end: daemon runtime <-> real MAVLink over UDP <-> the sim.

Safety bounds are asserted with slack; speed belongs to the benchmark (bench/).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import pytest

from offboardd.core.commands import Engage, Land, Release, SetSetpoint
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    Attitude,
    BodyRates,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.mavlink.budget import FcSendBudget
from offboardd.mavlink.codec import dialect as d
from tests.integration.harness import flight

MAV_FRAME_GLOBAL_INT = 5  # common.xml MAV_FRAME

pytestmark = pytest.mark.integration


async def test_warmup_honoured_as_measured_at_the_sim() -> None:
    async with flight() as fl:
        await fl.takeoff(-2.0)
        rec = fl.sim.record
        assert rec.first_valid_setpoint_s is not None and rec.offboard_requests
        warmup_s = rec.offboard_requests[0] - rec.first_valid_setpoint_s
        # Never before 1 s of valid streaming (2 ms slack for loopback delivery jitter).
        assert warmup_s >= 1.0 - 0.002, warmup_s
        assert warmup_s < 1.5, "OFFBOARD requested promptly after the warm-up"
        assert fl.sim.vehicle.mode_name == "OFFBOARD" and fl.sim.vehicle.armed


async def test_offboard_takeoff_reaches_and_holds_5_m_within_10_s() -> None:
    async with flight() as fl:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await fl.takeoff(-5.0, timeout_s=12.0)
        assert loop.time() - t0 < 12.0
        await asyncio.sleep(1.0)
        assert abs(fl.sim.vehicle.position_ned_m[2] + 5.0) < 0.3
        assert fl.phase == "active"


def _speed_ned(fl_velocity: tuple[float, float, float]) -> float:
    return math.hypot(fl_velocity[0], fl_velocity[1])


Vec3 = tuple[float, float, float]
# kind -> (setpoint, "the vehicle moved as a user expects" given position and velocity NED)
SETPOINT_CASES: dict[str, tuple[Setpoint, Callable[[Vec3, Vec3], bool]]] = {
    "velocity_ned": (VelocityNed(1.5, 0.0, 0.0), lambda p, v: v[0] > 1.0),
    "velocity_body": (VelocityBody(1.5, 0.0, 0.0), lambda p, v: _speed_ned(v) > 1.0),
    "acceleration_ned": (AccelerationNed(0.0, 1.0, 0.0), lambda p, v: v[1] > 0.5),
    "position_ned": (PositionNed(3.0, 0.0, -3.0), lambda p, v: abs(p[0] - 3.0) < 0.5),
    "position_velocity_ned": (
        PositionVelocityNed(0.0, 3.0, -3.0, 0.0, 1.0, 0.0), lambda p, v: abs(p[1] - 3.0) < 0.5
    ),
    "attitude": (Attitude(1.0, 0.0, 0.0, 0.0, thrust=0.7), lambda p, v: v[2] < -0.5),
    "body_rates": (BodyRates(0.0, 0.0, 0.0, thrust=0.3), lambda p, v: v[2] > 0.3),
}


@pytest.mark.parametrize("kind", sorted(SETPOINT_CASES))
async def test_every_setpoint_kind_moves_the_sim(kind: str) -> None:
    setpoint, moved = SETPOINT_CASES[kind]
    async with flight() as fl:
        await fl.takeoff(-3.0)
        reply = await fl.command(SetSetpoint(fl.next_id(), setpoint))
        assert reply.ok, reply
        vehicle = fl.sim.vehicle
        await fl.wait_for(
            lambda: moved(vehicle.position_ned_m, vehicle.velocity_ned_m_s), 6.0, kind
        )
        assert vehicle.mode_name == "OFFBOARD"


async def test_global_position_setpoint_flies_to_the_coordinates() -> None:
    async with flight() as fl:
        await fl.takeoff(-3.0)
        home_lat, home_lon = fl.sim.config.home_lat_deg, fl.sim.config.home_lon_deg
        target = GlobalPosition(home_lat + 3.0 / 111_320.0, home_lon, 4.0,
                                altitude_frame=AltitudeFrame.RELATIVE)
        assert (await fl.command(SetSetpoint(fl.next_id(), target))).ok
        vehicle = fl.sim.vehicle
        await fl.wait_for(
            lambda: abs(vehicle.position_ned_m[0] - 3.0) < 0.5
            and abs(vehicle.position_ned_m[2] + 4.0) < 0.5,
            8.0, "global target",
        )
        # streamed in AMSL from PX4's home, never as PX4's mis-converted relative frame
        frames = {e.frame for e in fl.sim.record.setpoints
                  if e.msg_type == "SET_POSITION_TARGET_GLOBAL_INT"}  # fmt: skip
        assert frames == {MAV_FRAME_GLOBAL_INT}, frames


async def test_a_terrain_setpoint_is_held_while_the_terrain_estimate_is_lost() -> None:
    """PX4 drops frame-11 setpoints without its terrain estimate (the OFFBOARD loss would
    follow): once ESTIMATOR_STATUS shows it gone (the plan asks for it at 2/s) the daemon
    holds where the vehicle is instead and refuses new ones (`estimate_missing`); what went
    before that report is dropped, well inside COM_OF_LOSS_T. The same steps on real PX4:
    tests/px4/test_px4_terrain.py."""
    async with flight() as fl:
        await fl.takeoff(-3.0)
        lat, lon = fl.sim.config.home_lat_deg, fl.sim.config.home_lon_deg
        terrain = GlobalPosition(lat, lon, 3.0, altitude_frame=AltitudeFrame.TERRAIN)
        assert (await fl.command(SetSetpoint(fl.next_id(), terrain))).ok
        await asyncio.sleep(0.5)
        lost_s = fl.sim.now()
        fl.sim.set_terrain_valid(False)  # the range finder out of range
        await asyncio.sleep(1.0)  # ESTIMATOR_STATUS comes at 1/s at least
        reply = await fl.command(SetSetpoint(fl.next_id(), terrain))
        assert not reply.ok and reply.reason is Reason.ESTIMATE_MISSING, reply
        await asyncio.sleep(1.5)
        dropped = [e.time_s - lost_s for e in fl.sim.record.setpoints if e.verdict == "dropped"]
        assert dropped and max(dropped) < 0.7, dropped  # until the next ESTIMATOR_STATUS
        assert fl.sim.vehicle.mode_name == "OFFBOARD"
        record = fl.sim.record  # those drops are the report's lag, judged above: not audited
        record.setpoints[:] = [e for e in record.setpoints if e.verdict == "valid"]
        assert fl.phase == "active" and abs(fl.sim.vehicle.position_ned_m[2] + 3.0) < 0.5
        fl.sim.set_terrain_valid(True)
        await asyncio.sleep(1.2)
        assert (await fl.command(SetSetpoint(fl.next_id(), terrain))).ok


async def test_release_hands_over_to_hold_and_stops_streaming() -> None:
    async with flight() as fl:
        await fl.takeoff(-2.0)
        reply = await fl.command(Release(fl.next_id()))
        assert reply.ok, reply
        assert fl.sim.vehicle.mode_name == "AUTO.LOITER"
        assert fl.phase == "idle"
        count = len(fl.sim.record.setpoints)
        await asyncio.sleep(0.5)
        assert len(fl.sim.record.setpoints) == count, "no setpoint after the release"


async def test_lease_lapse_holds_then_runs_the_loss_action() -> None:
    engine = {"command_timeout_s": 1.0, "hold_s": 1.5, "command_loss_action": "land"}
    async with flight(engine=engine) as fl:
        await fl.takeoff(-3.0)
        assert (await fl.command(SetSetpoint(fl.next_id(), VelocityNed(1.0, 0.0, 0.0)))).ok
        loop = asyncio.get_running_loop()
        fl.drop_lease()
        t_dead = loop.time()
        t_hold = await fl.wait_for(lambda: fl.phase == "holding", 2.5, "holding")
        assert 0.8 <= t_hold - t_dead <= 1.5, t_hold - t_dead
        # Holding means stopping where it is: the 1 m/s velocity leg is over.
        await asyncio.sleep(1.0)
        assert _speed_ned(fl.sim.vehicle.velocity_ned_m_s) < 0.4
        t_land = await fl.wait_for(
            lambda: fl.sim.vehicle.mode_name == "AUTO.LAND", 3.0, "AUTO.LAND"
        )
        assert 1.2 <= t_land - t_hold <= 2.5, t_land - t_hold
        await asyncio.sleep(0.3)
        count = len(fl.sim.record.setpoints)
        await asyncio.sleep(0.5)
        assert len(fl.sim.record.setpoints) == count, "stream stopped after the loss action"


async def test_without_a_global_position_the_hold_loss_action_ends_in_land() -> None:
    """An indoor vehicle on vision: a local estimate, no global one. PX4's multicopter Hold
    and Return need a global position (mode_requirements.cpp), Land does not: the daemon's
    hold action, refused, escalates to Land, streaming its hold until PX4 takes it."""
    engine = {"command_timeout_s": 1.0, "hold_s": 1.0, "command_loss_action": "hold"}
    async with flight(engine=engine) as fl:
        await fl.takeoff(-3.0)
        fl.sim.set_global_valid(False)
        await asyncio.sleep(1.2)
        assert not fl.snapshot()["estimates"]["global_position"]
        fl.drop_lease()
        await fl.wait_for(lambda: fl.sim.vehicle.mode_name == "AUTO.LAND", 8.0, "AUTO.LAND")
        asked = [a.result for a in fl.sim.record.acks if a.command == d.MAV_CMD_DO_SET_MODE]
        assert d.MAV_RESULT_TEMPORARILY_REJECTED in asked  # Hold, refused first
        assert "AUTO.LOITER" not in [c.new_mode for c in fl.sim.record.mode_changes]
        await fl.wait_for(lambda: fl.phase == "failsafe", 2.0, "failsafe")
        assert fl.snapshot()["reason"] == "loss_action"


@pytest.mark.parametrize("px4_version", ["1.18", "main"])
async def test_a_land_without_a_position_is_answered_by_descend_on_main_too(
    px4_version: str
) -> None:
    """PX4 forces a Land it has no position for and flies it as Descend, which main
    (#27918) reports as AUTO.DESCEND and 1.18 as AUTO.LAND: either way the daemon's land
    is done (Px4Mode.honours), not refused nor retried into a takeover."""
    async with flight(sim={"px4_version": px4_version}) as fl:
        await fl.takeoff(-3.0)
        fl.sim.set_estimator_valid(False)
        reply = await fl.command(Land(fl.next_id()))
        assert reply.ok, reply
        assert fl.phase == "idle" and fl.snapshot()["reason"] == "commanded_land"
        shown = fl.sim.vehicle.shown_mode.name
        assert shown == ("AUTO.DESCEND" if px4_version == "main" else "AUTO.LAND")
        assert fl.snapshot()["fc_mode"] == shown


async def test_a_lease_lapse_without_an_estimate_levels_an_attitude_stream() -> None:
    """Flying a 15° pitch (attitude + thrust), the position estimate lost, the commander
    gone: the daemon asks for Land, and until PX4 answers it streams level flight, not
    the tilt nobody commands any more. PX4 takes Land even without a position (it forces
    it: an emergency mode is always available) and descends blind; the daemon stops
    streaming once it reports it. (The sim refused it until a review read Commander.cpp.)"""
    async with flight(engine={"command_loss_action": "land"}) as fl:
        await fl.takeoff(-10.0)
        half_pitch_rad = math.radians(15) / 2
        tilt = Attitude(math.cos(half_pitch_rad), 0.0, math.sin(half_pitch_rad), 0.0, thrust=0.5)
        assert (await fl.command(SetSetpoint(fl.next_id(), tilt))).ok
        await fl.wait_for(lambda: fl.sim.vehicle.attitude_rad[1] > math.radians(14), 1.0,
                          "pitched 15°")
        fl.sim.set_estimator_valid(False)
        await asyncio.sleep(0.3)
        fl.drop_lease()
        await fl.wait_for(lambda: fl.phase == "releasing", 2.5, "handing over")
        await fl.wait_for(lambda: abs(fl.sim.vehicle.attitude_rad[1]) < math.radians(2), 0.8,
                          "level")
        await fl.wait_for(lambda: fl.sim.vehicle.mode_name == "AUTO.LAND", 2.0, "descending")
        await fl.wait_for(lambda: fl.phase == "failsafe", 2.0, "the loss action's Land taken")
        assert fl.snapshot()["reason"] == "loss_action"
        count = len(fl.sim.record.setpoints)
        await asyncio.sleep(0.5)
        assert len(fl.sim.record.setpoints) == count, "stream stopped once Land was reported"


async def test_gcs_takeover_stops_the_stream_and_stays_stopped() -> None:
    async with flight() as fl:
        await fl.takeoff(-3.0)
        fl.sim.pilot_mode_switch("AUTO.LOITER")
        await fl.wait_for(lambda: fl.phase == "preempted", 1.5, "preempted")
        await asyncio.sleep(0.2)
        count = len(fl.sim.record.setpoints)
        await asyncio.sleep(2.0)
        assert len(fl.sim.record.setpoints) == count, "no setpoints after a takeover"
        assert fl.sim.vehicle.mode_name == "AUTO.LOITER"
        assert fl.sim.record.offboard_requests and all(
            t < fl.sim.record.mode_changes[-1].time_s for t in fl.sim.record.offboard_requests
        ), "never asked for OFFBOARD again"
        # A setpoint is not an engage: refused, and the vehicle stays with the pilot.
        reply = await fl.command(SetSetpoint(fl.next_id(), PositionNed(0.0, 0.0, -3.0)))
        assert not reply.ok
        await asyncio.sleep(0.3)
        assert fl.sim.vehicle.mode_name == "AUTO.LOITER"


async def test_a_flight_termination_reporting_offboard_stops_the_stream_and_engage() -> None:
    """A PX4 failsafe's Terminate keeps OFFBOARD and armed in HEARTBEAT ([SITL v1.18], 20 s
    of it as the vehicle fell): only system_status FLIGHT_TERMINATION tells. Before the
    daemon read it, it streamed on and reported itself in control of a falling vehicle."""
    async with flight() as fl:
        await fl.takeoff(-3.0)
        fl.sim.flight_termination()
        await fl.wait_for(lambda: fl.phase == "preempted", 1.5, "preempted")
        snap = fl.snapshot()
        assert snap["reason"] == "preempted_motors_cut"
        assert snap["fc_status"] == "flight_termination"
        assert snap["fc_mode"] == "OFFBOARD" and snap["armed"] and not snap["streaming"]
        await asyncio.sleep(0.2)
        count = len(fl.sim.record.setpoints)
        await asyncio.sleep(1.5)
        assert len(fl.sim.record.setpoints) == count, "no setpoints after the termination"
        assert fl.sim.vehicle.position_ned_m[2] > -0.5  # fell: no motor
        token = snap["resume_token"]  # taken: an engage quotes the token, and is refused
        reply = await fl.command(Engage(fl.next_id(), PositionNed(0.0, 0.0, -3.0),
                                        resume=token))
        assert not reply.ok and reply.reason is Reason.FC_MOTORS_CUT
        assert len(fl.sim.record.setpoints) == count


async def test_an_offboard_request_that_waited_for_the_link_budget_is_withdrawn_on_takeover(
) -> None:
    """The link's command budget is spent (a slow radio, a burst of requests), so the
    engage's DO_SET_MODE OFFBOARD waits its turn; a pilot takes the sticks meanwhile
    (Position; the sim starts in Hold, the mode the engage forgives). When
    the turn comes the request is dropped: sent, it would take the vehicle back."""
    async with flight() as fl:
        await fl.wait_fc_ready()
        loop = asyncio.get_running_loop()
        budget = fl.runtime.fc_budget = FcSendBudget(rate_hz=0.4, burst=1)
        assert budget.offer(d.MAVLink_command_long_message(1, 1, 512, 0, 0, 0, 0, 0, 0, 0, 0),
                            loop.time())  # (not sent: it only spends the one token)
        fl.keep_lease()
        engage = asyncio.ensure_future(
            fl.command(Engage(fl.next_id("engage"), PositionNed(0.0, 0.0, -3.0))))
        await fl.wait_for(lambda: fl.phase == "engaging", 3.0, "engaging")
        assert budget.queued == 1 and not fl.sim.record.offboard_requests
        fl.sim.pilot_mode_switch("POSCTL")
        await fl.wait_for(lambda: fl.phase == "preempted", 1.5, "preempted")
        assert not (await engage).ok
        await fl.wait_for(lambda: budget.withdrawn == 1, 4.0, "the waiting request withdrawn")
        await asyncio.sleep(0.3)
        assert not fl.sim.record.offboard_requests, "OFFBOARD asked for over the pilot"
        assert fl.sim.vehicle.mode_name == "POSCTL"


async def test_fc_link_loss_stops_and_does_not_reengage_on_return() -> None:
    async with flight(engine={"fc_timeout_s": 2.0}) as fl:
        await fl.takeoff(-3.0)
        loop = asyncio.get_running_loop()
        published: list[tuple[float, str]] = []  # what subscribers read, when
        state = fl.runtime.outputs.state

        def publish(doc: dict[str, Any], now: float) -> None:
            published.append((loop.time(), doc["fc_link"]))
            state(doc, now)

        fl.runtime.outputs.state = publish  # type: ignore[method-assign,assignment]
        fl.sim.pause_link(4.0)
        t_pause = loop.time()
        t_lost = await fl.wait_for(lambda: fl.snapshot()["fc_link"] == "lost", 4.0, "fc lost")
        # published at once, not with the next periodic state up to a second later (review)
        await fl.wait_for(lambda: any(link == "lost" for _, link in published), 0.2,
                          "the state saying the link is lost")
        # Lost once no HEARTBEAT (1 Hz) came for fc_timeout_s: judged from the last one
        # heard, which came up to a second before the pause, whatever the phase.
        assert fl.runtime.engine is not None
        last_heartbeat_s = fl.runtime.engine.vehicle.last_heartbeat_s
        assert last_heartbeat_s is not None and last_heartbeat_s <= t_pause
        assert 2.0 <= t_lost - last_heartbeat_s <= 2.3
        assert 1.0 <= t_lost - t_pause <= 3.0
        assert fl.phase in ("failsafe", "idle")
        t_back = await fl.wait_for(lambda: fl.snapshot()["fc_link"] == "up", 6.0, "fc back")
        await fl.wait_for(lambda: published[-1][1] == "up", 0.2, "the state saying it is back")
        assert t_back - t_lost > 0.2
        await asyncio.sleep(1.5)
        assert fl.phase in ("failsafe", "idle")
        # PX4 fell back on its own (COM_OBL_RC_ACT) and nobody took control back.
        assert fl.sim.vehicle.mode_name != "OFFBOARD"


async def test_a_link_blackout_past_px4s_loss_time_stops_the_stream_for_good() -> None:
    """Found by review on real PX4: after a 1.5 s blackout the daemon (still ACTIVE, its
    FC timeout 3 s) streamed on, and its first setpoint reached PX4 before any mode report
    reached it: PX4 re-entered OFFBOARD (px4-offboard.md §3) and flew the stale setpoint
    for ~1.1 s before the daemon saw the fallback. Now the daemon stops at 0.9 x
    COM_OF_LOSS_T of silence, before PX4 judges the loss."""
    async with flight() as fl:
        await fl.takeoff(-3.0)
        loop = asyncio.get_running_loop()
        # The daemon counts silence from the last message it heard: black the link out
        # right after one, not anywhere in the telemetry period (then the measured gap
        # depended on where the climb ended, e.g. 0.78 s once PX4's takeoff ramp is in)
        assert fl.runtime.engine is not None
        vehicle = fl.runtime.engine.vehicle
        heard = vehicle.last_heard_s
        await fl.wait_for(lambda: vehicle.last_heard_s != heard, 1.0, "a message from PX4")
        fl.sim.pause_link(1.5)
        t_pause = loop.time()
        await fl.wait_for(lambda: fl.phase == "failsafe", 1.5, "stopped")
        assert 0.8 <= loop.time() - t_pause <= 1.1
        assert fl.snapshot()["reason"] == "fc_silent"
        await asyncio.sleep(1.0)  # the link is back
        end_s = t_pause + 1.5
        assert not [s for s in fl.sim.record.setpoints if s.time_s > end_s], "streamed again"
        await asyncio.sleep(1.0)
        assert fl.sim.vehicle.mode_name != "OFFBOARD" and fl.phase == "failsafe"


async def test_engage_refused_without_a_position_estimate() -> None:
    async with flight() as fl:
        await fl.wait_fc_ready()
        fl.sim.set_estimator_valid(False)
        await fl.wait_for(
            lambda: not fl.snapshot()["estimates"].get("local_position"), 3.0, "estimate lost"
        )
        reply = await fl.command(Engage(fl.next_id(), PositionNed(0.0, 0.0, -3.0), arm=True))
        assert not reply.ok and reply.reason is not None
        assert reply.reason.value == "estimate_missing"
        assert not fl.sim.record.offboard_requests and not fl.sim.vehicle.armed


async def test_serial_pty_link_flies_a_takeoff() -> None:
    async with flight(link="serial") as fl:
        await fl.takeoff(-2.0)
        assert fl.sim.vehicle.mode_name == "OFFBOARD" and fl.sim.vehicle.armed


async def test_a_bug_in_decoding_on_a_serial_link_is_counted_and_the_daemon_flies_on() -> None:
    """An exception raised while handling the FC's bytes on a link that is not polled
    (serial, TCP) used to end the link's task and the daemon with it (found by review)."""
    async with flight(link="serial") as fl:
        await fl.takeoff(-2.0)
        decode = fl.runtime.fc_input.decode
        calls = 0

        def fails_once(data: bytes, now: float) -> bool:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("a bug")
            return decode(data, now)

        fl.runtime.fc_input.decode = fails_once  # type: ignore[method-assign]
        await fl.wait_for(lambda: calls > 20, 2.0, "the link read on")
        assert fl.runtime.internal_errors == 1 and fl.phase == "active"
        fl.runtime.internal_errors = 0  # (the harness checks for none on the way out)


async def test_two_commanders_with_the_same_command_id_each_get_their_reply() -> None:
    async with flight() as fl:
        await fl.wait_fc_ready()
        first = fl.runtime.submit(Release("same-id"))
        second = fl.runtime.submit(SetSetpoint("same-id", PositionNed(0.0, 0.0, -2.0)))
        replies = await asyncio.wait_for(asyncio.gather(first, second), 10)
        assert [r.command_id for r in replies] == ["same-id", "same-id"]
        assert not replies[1].ok, "a setpoint while idle is refused: its own reply, not the other's"
