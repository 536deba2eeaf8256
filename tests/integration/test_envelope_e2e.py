"""The safety envelope end to end: the real runtime flying the sim over UDP.

The fence stops a velocity leg at the boundary (the vehicle ends inside, stopped), a
position setpoint outside is refused with nothing sent for it, and an attitude setpoint
(which the fence cannot steer) pushes the vehicle out of a polygon: the breach action
fires. Home comes from the sim's HOME_POSITION, as from PX4. The harness audits on exit
that no setpoint PX4 would drop or fail safe on was ever sent.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

from offboardd.core.commands import SetSetpoint
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.motion_commands import Goto, Orbit
from offboardd.core.setpoints import Attitude, PositionNed, VelocityNed
from tests.sim.polygon_fence_flight import (
    LEG_EAST_M_S,
    LEG_EAST_S,
    LEG_NW_M_S,
    LEG_NW_S,
    NORTH_WEST_RAD,
    check_legs,
    dented_circle,
)

from .harness import Flight, flight


def speed(fl: Flight) -> float:
    return math.sqrt(sum(v * v for v in fl.sim.vehicle.velocity_ned_m_s))


async def test_fence_stops_a_velocity_leg_at_the_boundary() -> None:
    envelope = EnvelopeSettings(max_distance_m=12.0, stop_margin_m=1.0)
    async with flight(engine={"envelope": envelope}) as fl:
        await fl.takeoff(-3.0)
        assert fl.snapshot()["home_known"]
        reply = await fl.command(SetSetpoint(fl.next_id(), VelocityNed(4.0, 0.0, 0.0)))
        assert reply.ok, reply
        await fl.wait_for(lambda: fl.sim.vehicle.position_ned_m[0] > 8.0, 8.0, "leg under way")
        await fl.wait_for(lambda: speed(fl) < 0.1, 10.0, "stopped at the fence")
        await asyncio.sleep(1.0)  # still there a second later: the fence holds it
        north = fl.sim.vehicle.position_ned_m[0]
        # PX4's velocity integral (sim/horizontal.py) leaves a slow creep after a stop:
        # ~0.2 m/s here (the sim used to stand still at once)
        assert 10.0 <= north <= 12.0 and speed(fl) < 0.3, (north, speed(fl))
        snap = fl.snapshot()
        assert snap["phase"] == "active" and snap["envelope_limiting"]
        assert 0.0 <= snap["fence_distance_m"] <= 2.0


async def test_position_outside_is_refused_and_nothing_is_sent_for_it() -> None:
    envelope = EnvelopeSettings(max_distance_m=20.0, max_altitude_m=10.0)
    async with flight(engine={"envelope": envelope}) as fl:
        await fl.takeoff(-3.0)
        targets: list[object] = []

        async def watch() -> None:  # every target the sim accepted meanwhile
            while True:
                targets.append(fl.sim.vehicle.offboard_target)
                await asyncio.sleep(0.005)

        watcher = asyncio.create_task(watch())
        before = len(fl.sim.record.setpoints)
        reply = await fl.command(SetSetpoint(fl.next_id(), PositionNed(0.0, 0.0, -15.0)))
        await asyncio.sleep(0.5)
        watcher.cancel()
        assert not reply.ok and reply.reason is not None
        assert reply.reason.value == "fence_max_altitude" and "max_altitude_m = 10" in reply.message
        assert len(fl.sim.record.setpoints) > before + 5  # the stream went on...
        downs = {getattr(t, "pos_m", (None, None, None))[2] for t in targets}
        assert -15.0 not in downs and downs == {-3.0}  # ...with the old setpoint only
        assert fl.phase == "active"


async def test_breach_action_fires_when_pushed_out_of_the_polygon() -> None:
    square = ((-8.0, -8.0), (-8.0, 8.0), (8.0, 8.0), (8.0, -8.0))
    envelope = EnvelopeSettings(polygon=square, breach_tolerance_m=0.5)
    async with flight(engine={"envelope": envelope}) as fl:
        await fl.takeoff(-3.0)
        pitch = math.radians(-12.0)  # nose down: accelerates north (heading 0)
        lean = Attitude(math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0, 0.5)
        reply = await fl.command(SetSetpoint(fl.next_id(), lean))
        assert reply.ok, reply
        await fl.wait_for(lambda: fl.phase == "failsafe", 10.0, "breach action")
        snap = fl.snapshot()
        assert snap["reason"] == "fence_breach" and fl.sim.vehicle.mode_name == "AUTO.LOITER"
        assert fl.sim.vehicle.position_ned_m[0] > 8.0  # it really was outside


async def test_px4_limits_looser_than_the_envelope_are_named_in_the_state() -> None:
    """PX4 flies position and velocity steps to its own MPC_* limits, and its Return
    climbs to RTL_RETURN_ALT (docs/safety-envelope.md): the running daemon reads them once
    the FC's other parameters are in and names, in `state.warnings`, each one looser than
    its envelope."""
    envelope = EnvelopeSettings(max_tilt_deg=20.0, max_down_speed_m_s=1.0,
                                max_altitude_m=30.0)  # fmt: skip

    def px4_limits() -> list[str]:
        return sorted(w for w in fl.snapshot()["warnings"] if w.startswith(("MPC_", "RTL_")))

    async with flight(engine={"envelope": envelope},
                      sim={"params": {"MPC_TILTMAX_AIR": 35.0}}) as fl:
        await fl.wait_for(lambda: len(px4_limits()) == 3, 5.0, "three warnings")
        named = px4_limits()
        assert named[0].startswith("MPC_TILTMAX_AIR=35 ° is above [envelope] max_tilt_deg=20")
        assert named[1].startswith(
            "MPC_Z_VEL_MAX_DN=1.5 m/s is above [envelope] max_down_speed_m_s=1")
        assert named[2].startswith("RTL_RETURN_ALT=60 m is above [envelope] max_altitude_m=30")
        await fl.takeoff(-3.0)  # a warning, not a blocker


async def test_a_goto_to_a_point_inside_the_stop_margin_gets_there() -> None:
    """A goto's whole path is checked inside the fence before it flies, and it stops at
    its end: the stop margin (for open-ended velocity) no longer holds it short. It did:
    to 0.4 m inside a 12 m fence (margin 1 m) it stood at 11.0 m at motion_done, then
    crept the last 0.6 m in ~3 s on the resting setpoint."""
    envelope = EnvelopeSettings(max_distance_m=12.0, stop_margin_m=1.0)
    async with flight(engine={"envelope": envelope}) as fl:
        await fl.takeoff(-3.0)
        reply = await fl.command(Goto(fl.next_id(), PositionNed(11.6, 0.0, -3.0)))
        assert reply.ok, reply
        await fl.wait_for(lambda: fl.snapshot()["motion"] is None, 15.0, "motion done")
        north = fl.sim.vehicle.position_ned_m[0]
        assert 11.45 <= north <= 11.75, north
        assert not fl.snapshot()["envelope_limiting"]
        await asyncio.sleep(0.5)
        # PX4 overshoots a goto's end and its velocity integral brings it back slowly (PX4
        # SIH main: 0.84 m past a 20 m goto at 3 m/s, tests/px4/test_px4_following.py);
        # the sim does too now (~0.3 m here), so: not held short, and inside the fence
        north = fl.sim.vehicle.position_ned_m[0]
        assert 11.45 <= north <= 12.0 and speed(fl) < 0.5, (north, speed(fl))


async def test_a_long_orbit_inside_a_many_sided_fence_does_not_stall_the_stream() -> None:
    """The whole orbit is checked against the fence on the loop's thread before it flies.
    Sampled every 0.2 m, 100 turns of 30 m inside a 256-vertex polygon held the loop for
    ~1.9 s: no setpoint for longer than COM_OF_LOSS_T, the daemon then deaf to the FC
    ("nothing heard for 1.9 s", failsafe) and PX4 in its offboard-loss action (review,
    2026-11-29). Judged exactly now, it takes well under a tick."""
    polygon = tuple((500.0 * math.cos(math.radians(k * 360 / 256)),
                     500.0 * math.sin(math.radians(k * 360 / 256))) for k in range(256))
    async with flight(engine={"envelope": EnvelopeSettings(polygon=polygon)}) as fl:
        await fl.takeoff(-3.0)
        loop = asyncio.get_running_loop()
        sent = loop.time()
        reply = await fl.command(Orbit(fl.next_id(), PositionNed(0.0, 0.0, -3.0), radius_m=30.0,
                                       speed_m_s=5.0, turns=100.0))
        answered_s = loop.time() - sent
        assert reply.ok, reply
        await asyncio.sleep(1.0)
        snap = fl.snapshot()
        # slack for a loaded CI machine: the stall was 1.9 s
        assert answered_s < 0.5 and snap["stream_worst_gap_s"] < 0.3, (answered_s, snap)
        assert snap["phase"] == "active" and snap["motion"]["kind"] == "orbit"


async def test_a_many_cornered_concave_polygon_stops_legs_as_on_px4() -> None:
    """The flight tests/px4/test_px4_fence.py makes on real PX4 (the legs and bounds of
    tests/sim/polygon_fence_flight.py): a 128-corner fence with a V-shaped dent."""
    envelope = EnvelopeSettings(polygon=tuple((n, e) for n, e in dented_circle()),
                                stop_margin_m=1.0)
    async with flight(engine={"envelope": envelope}) as fl:
        await fl.takeoff(-5.0)
        v = fl.sim.vehicle

        async def leg(setpoint: VelocityNed, seconds: float, along: Callable[[], float]) -> float:
            assert (await fl.command(SetSetpoint(fl.next_id(), setpoint))).ok
            farthest = -math.inf
            for _ in range(round(seconds * 10)):
                farthest = max(farthest, along())
                await asyncio.sleep(0.1)
            return farthest

        north_west_m = await leg(
            VelocityNed(LEG_NW_M_S * math.cos(NORTH_WEST_RAD),
                        LEG_NW_M_S * math.sin(NORTH_WEST_RAD), 0.0),
            LEG_NW_S, lambda: math.hypot(*v.position_ned_m[:2]))
        assert fl.snapshot()["envelope_limiting"]
        assert (await fl.command(SetSetpoint(fl.next_id(), PositionNed(0.0, 0.0, -5.0)))).ok
        await fl.wait_for(lambda: math.hypot(*v.position_ned_m[:2]) < 0.3 and speed(fl) < 0.2,
                          15.0, "back over the origin")
        east_m = await leg(VelocityNed(0.0, LEG_EAST_M_S, 0.0), LEG_EAST_S,
                           lambda: v.position_ned_m[1])
        assert fl.phase == "active"
    check_legs(north_west_m, east_m)
