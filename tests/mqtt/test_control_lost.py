"""A commander always knows where it stands (issue 15): every way of losing control ends
in `ControlLost` with the reason, from `control_lost()` and from the next call, within a
few seconds; `ctl --keep-lease` exits at once, non-zero, without sending its --then.
End to end: the real runtime with its bridge, a real mosquitto, the built-in sim."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Awaitable, Callable

import pytest

from offboardd.client import CommandRefused, ControlLost, OffboardClient
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.setpoints import PositionNed
from offboardd.mavlink.links import parse_link_url
from offboardd.sim import SimConfig, SimServer
from tests.conftest import Broker, free_port
from tests.integration.harness import serving
from tests.mqtt.helpers import body, dumps, next_message, observer, settings_for
from tests.mqtt.test_e2e_sim import VEHICLE, Stack, T, fc_ready, stack
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration
UP = PositionNed(0.0, 0.0, -3.0)
MAV_CMD_DO_SET_MODE = 176


async def flying(s: Stack, c: OffboardClient) -> None:
    await fc_ready(c)
    await c.engage(UP, arm=True)
    await c.wait_for_state(lambda st: st["phase"] == "active" and st["in_control"], 15)


async def _pilot(s: Stack, c: OffboardClient) -> None:
    s.sim.pilot_mode_switch("POSCTL")


async def _gcs(s: Stack, c: OffboardClient) -> None:
    s.sim.pilot_mode_switch("AUTO.LOITER")


async def _lease_lapse(s: Stack, c: OffboardClient) -> None:
    c._holding_lease = False  # the mission script hangs: its lease loop stops


async def _failsafe(s: Stack, c: OffboardClient) -> None:
    s.sim.drop_link()  # the FC link is gone: the daemon stops and reports a failsafe


async def _fc_reboot(s: Stack, c: OffboardClient) -> None:
    s.sim.reboot()


async def _emergency_stop(s: Stack, c: OffboardClient) -> None:
    async with s.client() as other:  # another operator hits the big red button
        await other.emergency_stop(confirm=True)


async def _broker_restart(s: Stack, c: OffboardClient) -> None:
    await asyncio.to_thread(s.broker.start)  # stop and start again on the same port


# the way, and words one of which the reason must contain
WAYS: dict[str, tuple[Callable[[Stack, OffboardClient], Awaitable[None]], tuple[str, ...]]] = {
    "pilot takeover": (_pilot, ("preempted",)),
    "GCS mode change": (_gcs, ("preempted",)),
    "lease lapse": (_lease_lapse, ("lease_lapsed",)),
    "failsafe": (_failsafe, ("fc_silent", "fc_link_lost")),  # silent first, while streaming
    "FC reboot": (_fc_reboot, ("fc_",)),
    "emergency stop": (_emergency_stop, ("emergency_stop",)),
    # the daemon's last will (`offline`) may reach us before our own connection breaks
    "broker restart": (_broker_restart, ("broker", "offline")),
}


@pytest.mark.parametrize("way", list(WAYS))
async def test_each_way_of_losing_control_reaches_the_commander(
    mosquitto: Broker, way: str
) -> None:
    trigger, words = WAYS[way]
    async with stack(mosquitto) as s, s.client() as c:
        await flying(s, c)
        await trigger(s, c)
        lost = await asyncio.wait_for(c.control_lost(), 8)
        assert any(w in lost.reason for w in words), lost.reason
        if way != "broker restart":  # (with the broker gone every call fails anyway)
            with pytest.raises(ControlLost, match="control lost"):
                await c.setpoint(UP)


async def test_a_daemon_restart_is_a_loss_of_control(mosquitto: Broker) -> None:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", boot_ready_s=QUICK_BOOT_S)
    config = DaemonConfig(mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{port}")),
                          mqtt=dataclasses.replace(settings_for(mosquitto.port),
                                                   vehicle_id=VEHICLE))
    async with SimServer(sim_config), OffboardClient("127.0.0.1", mosquitto.port, VEHICLE) as c:
        async with serving(config, mqtt=True):
            await fc_ready(c)
            await c.engage(UP, arm=True)
            await c.wait_for_state(lambda st: st["phase"] == "active", 15)
        # SIGTERM-like stop (it hands the vehicle back), then a new daemon run
        async with serving(config, mqtt=True):
            lost = await asyncio.wait_for(c.control_lost(), 8)
    assert "offline" in lost.reason or "restarted" in lost.reason or "phase" in lost.reason


async def test_ctl_keep_lease_exits_at_once_when_control_is_lost(mosquitto: Broker) -> None:
    async with stack(mosquitto) as s, s.client() as watcher:
        await fc_ready(watcher)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "offboardd", "ctl", "--port", str(mosquitto.port),
            "--vehicle", VEHICLE, "engage", "--arm", "--keep-lease", "--duration", "40",
            "--then", "land", "--setpoint",
            '{"kind":"position_ned","north_m":0,"east_m":0,"down_m":-3}',
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await watcher.wait_for_state(lambda st: st["phase"] == "active", 20)
        s.sim.pilot_mode_switch("AUTO.LOITER")
        t0 = asyncio.get_running_loop().time()
        _, err = await asyncio.wait_for(proc.communicate(), 10)
        took_s = asyncio.get_running_loop().time() - t0
        assert proc.returncode == 6, err.decode()
        assert "control lost" in err.decode() and took_s < 3.0, (err.decode(), took_s)
        assert s.sim.vehicle.mode_name == "AUTO.LOITER"  # no land was sent after the takeover
        assert not s.sim.record.changes_to("AUTO.LAND")


async def test_after_losing_control_a_new_engage_keeps_its_lease_through_the_warmup(
    mosquitto: Broker
) -> None:
    async with stack(mosquitto) as s, s.client() as c:
        await flying(s, c)
        s.sim.pilot_mode_switch("AUTO.LOITER")
        await asyncio.wait_for(c.control_lost(), 8)
        await c.engage(UP)  # found on real PX4: the lease loop stayed off and this lapsed
        await c.wait_for_state(lambda st: st["phase"] == "active", 15)
        await asyncio.sleep(2.0)
        assert c.state is not None and c.state["phase"] == "active"


async def test_a_commander_whose_lease_lapsed_resumes_with_the_holds_token(
    mosquitto: Broker,
) -> None:
    """The script hung for a moment: the daemon holds and the script learns it lost
    control. `resume` quotes the hold's token: active again, the lease kept from then on,
    and a later loss is reported again."""
    async with stack(mosquitto, hold_s=30.0) as s, s.client() as c:
        await flying(s, c)
        await _lease_lapse(s, c)
        lost = await asyncio.wait_for(c.control_lost(), 8)
        assert "lease_lapsed" in lost.reason and c.inbox.resume_token is not None
        with pytest.raises(ControlLost):
            await c.setpoint(UP)  # the loss is reported once, to the next call
        assert (await c.resume(PositionNed(0.5, 0.0, -3.0))).ok
        await asyncio.sleep(2.5)  # more than two leases: the heartbeats keep it
        assert s.runtime.engine is not None and s.runtime.engine.phase.value == "active"
        s.sim.pilot_mode_switch("POSCTL")
        lost = await asyncio.wait_for(c.control_lost(), 8)
        assert "preempted" in lost.reason


async def test_a_late_engage_never_takes_the_vehicle_back_from_a_pilot(
    mosquitto: Broker,
) -> None:
    """Found by review: an engage (or a goto with engage: true) written while the script
    flew, delivered after a pilot took over, asked for OFFBOARD over the pilot. In
    `preempted` an engage must quote that phase's token; the client's engage does."""
    async with stack(mosquitto) as s, s.client() as c:
        await flying(s, c)
        s.sim.pilot_mode_switch("POSCTL")
        await asyncio.wait_for(c.control_lost(), 8)
        asked_before = len(s.sim.record.offboard_requests)
        async with observer(mosquitto.port) as late:
            await late.subscribe(T.reply, 1)
            await late.publish(T.cmd, dumps({
                "v": 1, "id": "late-goto", "cmd": "goto", "engage": True, "arm": True,
                "target": {"kind": "position_ned", "north_m": 20, "east_m": 0,
                           "down_m": -3}}), qos=1)
            refused = body(await next_message(late, T.reply))
        assert refused["code"] == "not_in_control" and refused["resume"]
        await asyncio.sleep(1.5)
        assert len(s.sim.record.offboard_requests) == asked_before  # the pilot keeps it
        assert s.runtime.engine is not None and s.runtime.engine.phase.value == "preempted"
        assert (await c.engage(UP)).ok  # written now: it quotes the token it read
        await c.land()


async def test_after_a_takeover_only_a_land_with_resume_goes(mosquitto: Broker) -> None:
    """Found by review: after a pilot took over, the client quoted the token it read for a
    hold, land, rtl or arm, so a script that never noticed the takeover (written as
    "goto, then land") switched the pilot's vehicle to Land. Without `resume` it is refused
    `not_in_control` and nothing reaches the FC; `land(resume=True)` (acting over the pilot
    on purpose) goes."""
    async with stack(mosquitto) as s, s.client() as c:
        await flying(s, c)
        s.sim.pilot_mode_switch("POSCTL")
        await c.wait_for_state(lambda st: st["phase"] == "preempted", 8)  # read, not told
        asked_before = _mode_requests(s)
        with pytest.raises(ControlLost):  # an arm raises the loss first (it is not a stop)
            await c.arm()
        for late in (c.land, c.hold, c.rtl, c.arm):
            with pytest.raises(CommandRefused) as refused:
                await late()
            assert refused.value.reply.code == "not_in_control", late
        await asyncio.sleep(0.5)
        assert _mode_requests(s) == asked_before
        assert s.sim.vehicle.mode_name == "POSCTL"  # the pilot keeps it
        assert (await c.land(resume=True)).ok  # a deliberate land, quoting the token
        assert _mode_requests(s) > asked_before


async def test_a_land_with_resume_follows_a_token_made_after_its_read(
    mosquitto: Broker,
) -> None:
    """The vehicle taken again between the script's read of the token and its land's
    arrival (an engage from `preempted` that failed goes back there with a new token): the
    refusal names the new token and `land(resume=True)` tries once more with it."""
    async with stack(mosquitto) as s, s.client() as c, observer(mosquitto.port) as pub:
        await flying(s, c)
        s.sim.pilot_mode_switch("POSCTL")
        state = await c.wait_for_state(lambda st: st["phase"] == "preempted", 8)
        await pub.publish(T.state, dumps({**state, "resume_token": "gone-already"}), qos=1,
                          retain=True)
        await c.wait_for_state(lambda st: st.get("resume_token") == "gone-already", 5)
        assert (await c.land(resume=True)).ok


def _mode_requests(s: Stack) -> int:
    return sum(1 for e in s.sim.record.commands if e.command == MAV_CMD_DO_SET_MODE)
