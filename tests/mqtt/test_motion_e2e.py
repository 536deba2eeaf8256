"""Onboard motions end to end (issue 16): the real runtime and bridge, a real mosquitto, the
built-in sim over UDP; the Python client and `offboardd ctl` as a process."""

from __future__ import annotations

import asyncio
import json
import math
import sys

import pytest

from offboardd.client import (
    CommandRefused,
    ControlLost,
    MotionAborted,
    OffboardClient,
    Yaw,
    YawMode,
)
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.motion_clock import PX4_FOLLOWS_S
from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.helpers import dumps, observer
from tests.mqtt.test_e2e_sim import REPO_ROOT, VEHICLE, Stack, T, fc_ready, stack

pytestmark = pytest.mark.integration
ALT = -3.0


def _at(s: Stack, north: float, east: float, down: float) -> float:
    n, e, d = (float(x) for x in s.sim.vehicle.position_ned_m)
    return math.dist((n, e, d), (north, east, down))


async def _motion_state(c: OffboardClient, command_id: str) -> dict[str, object]:
    state = await c.wait_for_state(
        lambda st: (st.get("motion") or {}).get("command_id") == command_id, timeout_s=10)
    value = state["motion"]
    assert isinstance(value, dict)
    return value


async def test_goto_engages_arms_flies_and_reports_done(mosquitto: Broker) -> None:
    # PX4's default takeoff ramp (MPC_TKO_RAMP_T 3 s) lifts the vehicle ~3 s after arming;
    # the goto's clock waits for it (core/motion_clock.py): done means up there. (Before,
    # its timed climb ended with the vehicle still on the ground.)
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        handle = await c.goto(PositionNed(0, 0, ALT), speed_m_s=2.0, engage=True, arm=True)
        assert handle.reply.ok
        await handle.done(timeout_s=20)
        assert _at(s, 0, 0, ALT) < 1.0 + 0.1  # within half of max_lead_m (and the estimate's age)
        leg = await c.goto(PositionNed(6, 0, ALT), speed_m_s=3.0, yaw=Yaw(YawMode.FACE_TRAVEL))
        assert "goto accepted: 6.0 m" in leg.reply.message
        progress = await _motion_state(c, leg.command_id)
        assert progress["kind"] == "goto" and progress["started"] is True
        done = await leg.done(timeout_s=20)
        assert done["kind"] == "motion_done" and done["command_id"] == leg.command_id
        await asyncio.sleep(1.0)
        assert _at(s, 6, 0, ALT) < 0.5
        await c.land()


async def test_a_rounded_path_and_an_orbit_are_flown_and_a_replaced_motion_is_aborted(
    mosquitto: Broker,
) -> None:
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0, 0, ALT), arm=True)).ok
        square = [PositionNed(5, 0, ALT), PositionNed(5, 5, ALT), PositionNed(0, 5, ALT),
                  PositionNed(0, 0, ALT)]
        path = await c.path(square, speed_m_s=3.0, corner_radius_m=1.5)
        await path.done(timeout_s=30)
        orbit = await c.orbit(PositionNed(0, 3, ALT), radius_m=3.0, speed_m_s=2.0, turns=0.5)
        await orbit.done(timeout_s=30)
        assert _at(s, 0, 6, ALT) < 0.6  # half a turn from (0, 0) around (0, 3)
        first = await c.goto(PositionNed(10, 6, ALT), speed_m_s=2.0)
        await asyncio.sleep(1.0)
        second = await c.stop()
        with pytest.raises(MotionAborted) as aborted:
            await first.done(timeout_s=5)
        assert aborted.value.reason == "replaced"
        await second.done(timeout_s=10)
        await c.land()


async def test_a_path_that_leaves_the_fence_is_refused_whole_and_nothing_moves(
    mosquitto: Broker,
) -> None:
    fence = EnvelopeSettings(max_distance_m=8.0)
    async with stack(mosquitto, envelope=fence) as s, s.client() as c:
        await fc_ready(c)
        await c.wait_for_state(lambda st: bool(st.get("home_known")), timeout_s=15)
        assert (await c.engage(PositionNed(0, 0, ALT), arm=True)).ok
        with pytest.raises(CommandRefused) as refused:  # (5, 9) is 10.3 m from home
            await c.path([PositionNed(5, 0, ALT), PositionNed(5, 9, ALT), PositionNed(0, 0, ALT)],
                         corner_radius_m=0.0)
        reply = refused.value.reply
        assert reply.code == "command_not_allowed" and "leaves the envelope" in reply.message
        await asyncio.sleep(1.0)
        north, east = (float(x) for x in s.sim.vehicle.position_ned_m[:2])
        assert math.hypot(north, east) < 0.5  # refused as a whole: nothing of it was flown
        await c.land()


async def test_ctl_goto_waits_for_motion_done(mosquitto: Broker) -> None:
    # engaged on the ground, PX4's takeoff ramp still under way: the goto waits for it
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0, 0, ALT), arm=True)).ok
        ctl = (sys.executable, "-m", "offboardd", "ctl", "--port", str(mosquitto.port),
               "--vehicle", VEHICLE, "goto", "4", "0", str(ALT), "--speed", "2", "--wait")
        proc = await asyncio.create_subprocess_exec(  # another commander's: not without
            *ctl, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=REPO_ROOT)  # the token (it may be anyone's late backlog)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 1, err.decode()  # refused: the reply, not "broker"
        assert json.loads(out)["code"] == "not_in_control"
        proc = await asyncio.create_subprocess_exec(
            *ctl, "--resume", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=REPO_ROOT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 0, err.decode()
        lines = [json.loads(line) for line in out.decode().splitlines()]
        assert lines[0]["ok"] is True and lines[-1]["kind"] == "motion_done"
        assert _at(s, 4, 0, ALT) < 0.6
        # the goto's sender took control with the token: this commander lost it
        lost = await asyncio.wait_for(c.control_lost(), 5)
        assert "another commander" in lost.reason
        async with s.client() as operator:
            await operator.land()


async def _ctl(port: int, *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "offboardd", "ctl", "--port", str(port), "--vehicle", VEHICLE,
        "--timeout", "3", *argv, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=REPO_ROOT)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("argv", [
    ("setpoint", '{"kind":"position_ned","north_m":1,"east_m":0,"down_m":-3}'),
    ("stop",),
    ("goto", "4", "0", "-3"),
    ("orbit", "0", "0", "-3", "--radius", "2"),
])
async def test_ctl_prints_a_refused_setpoint_or_motion_and_exits_1(
    mosquitto: Broker, argv: tuple[str, ...],
) -> None:
    """Found by review: a refused `ctl setpoint` or motion (sent checked: the client raises
    CommandRefused) printed no reply, blamed the broker and exited 4. mqtt-api.md: ctl
    prints each reply as one JSON line and exits 1 when refused."""
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)  # idle: nobody flies, so a setpoint or motion is not_in_control
        status, out, err = await _ctl(mosquitto.port, *argv)
        assert status == 1, (status, out, err)
        reply = json.loads(out)
        assert (reply["ok"], reply["code"]) == (False, "not_in_control") and "broker" not in err
        assert s.sim.record.setpoints == [] and not s.sim.vehicle.armed


async def test_ctl_resume_that_quotes_a_token_gone_meanwhile_takes_the_current_one(
    mosquitto: Broker,
) -> None:
    """Between a `ctl --resume` reading the token and its command arriving, control can
    change hands (the last `ctl`'s lease lapses: docs/motion.md's block runs one `ctl` after
    another): the refusal names the current token and ctl tries once more with it. Made
    certain here with a retained state whose token is already gone."""
    async with stack(mosquitto) as s, s.client() as c, observer(mosquitto.port) as pub:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0, 0, ALT), arm=True)).ok
        state = await c.wait_for_state(lambda st: st["phase"] == "active", timeout_s=15)
        await pub.publish(T.state, dumps({**state, "resume_token": "gone-already"}), qos=1,
                          retain=True)
        status, out, err = await _ctl(mosquitto.port, "goto", "2", "0", str(ALT), "--resume")
        assert status == 0, (out, err)
        assert json.loads(out)["ok"] is True
        lost = await asyncio.wait_for(c.control_lost(), 5)
        assert "another commander" in lost.reason
        async with s.client() as operator:
            await operator.land()


async def test_a_pilot_taking_over_mid_motion_ends_it_for_the_script(mosquitto: Broker) -> None:
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0, 0, ALT), arm=True)).ok
        leg = await c.goto(PositionNed(30, 0, ALT), speed_m_s=2.0)
        await asyncio.sleep(1.5)
        s.sim.pilot_mode_switch("POSCTL")
        # whichever the client hears first: the motion_aborted event or the state
        with pytest.raises((MotionAborted, ControlLost)) as aborted:
            await leg.done(timeout_s=10)
        assert "preempted" in str(aborted.value)
        lost = await asyncio.wait_for(c.control_lost(), 5)
        assert "preempted" in lost.reason


def motion_ctl_example() -> str:
    """docs/motion.md's `offboardd ctl` block, exactly as printed there."""
    text = (REPO_ROOT / "docs" / "motion.md").read_text()
    begin = text.index("<!-- motion-ctl-example:begin")
    block = text[text.index("```sh\n", begin) + len("```sh\n"):]
    return block[: block.index("```")]


async def test_docs_motion_ctl_example_flies_the_sim(mosquitto: Broker) -> None:
    """Found by review: the block was one `ctl` after another with neither --engage nor
    --resume, but each `ctl` is a new commander: the first was refused in idle, the rest
    not_in_control. Run as printed, `offboardd` pointed at the test broker."""
    point_at_broker = (f'offboardd() {{ sub=$1; shift; "{sys.executable}" -m offboardd '
                       f'"$sub" --port {mosquitto.port} --vehicle {VEHICLE} "$@"; }}\nset -e\n')
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", point_at_broker + motion_ctl_example(), cwd=REPO_ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 150)
        assert proc.returncode == 0, (out.decode(), err.decode())
        lines = [json.loads(line) for line in out.decode().splitlines()]
        assert [d["kind"] for d in lines if "kind" in d] == ["motion_done"] * 4
        assert lines[-1]["ok"] is True  # the land
        assert s.sim.record.changes_to("OFFBOARD") and s.sim.vehicle.mode_name == "AUTO.LAND"


async def test_a_goto_faster_than_px4_flies_is_paced_by_the_vehicle_and_says_so(
    mosquitto: Broker,
) -> None:
    """PX4's own MPC_XY_VEL_MAX (1.5 m/s) under a goto planned at 4 m/s: the planned point
    waits for the vehicle instead of running on (before: motion_done ~4 s in, the vehicle
    ~6 m short), the client's handle collects the daemon's vehicle_trailing warning, and
    the motion is done with the vehicle near its end (core/motion_clock.py)."""
    async with stack(mosquitto, sim_params={"MPC_XY_VEL_MAX": 1.5}) as s, s.client() as c:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0, 0, ALT), arm=True)).ok
        # up there first: only the horizontal leg trails
        await wait_until(lambda: _at(s, 0, 0, ALT) <= 0.3, "at altitude", timeout_s=20)
        handle = await c.goto(PositionNed(12, 0, ALT), speed_m_s=4.0)
        leads: list[float] = []

        async def sample() -> None:
            while True:
                shown = (c.state or {}).get("motion") or {}
                if shown.get("lead_m") is not None:
                    leads.append(float(shown["lead_m"]))
                await asyncio.sleep(0.1)

        sampler = asyncio.create_task(sample())
        try:
            await handle.done(timeout_s=30)
        finally:
            sampler.cancel()
        assert _at(s, 12, 0, ALT) < 1.0 + 0.2  # half of max_lead_m, and the estimate's age
        # max_lead_m, PX4's natural lag at its 1.5 m/s, and the sim's own lag behind that
        assert leads and max(leads) <= 2.0 + PX4_FOLLOWS_S * 1.5 + 0.5, leads
        assert [w["reason"] for w in handle.warnings] == ["vehicle_trailing"], handle.warnings
        await c.land()
