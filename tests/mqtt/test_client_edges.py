"""The client keeps a script right about whether it flies the vehicle (found by review):
a refused command changes nothing; an engage it gives up is released; a stop command is
sent even after a loss; a silent network is a loss; a lost broker is a ClientError."""

from __future__ import annotations

import asyncio

import aiomqtt
import pytest

from offboardd.client import ClientError, CommandRefused, ControlLost, OffboardClient
from offboardd.core.commands import EmergencyStop
from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.mqtt.fake_daemon import FakeEngine, fake_daemon
from tests.mqtt.helpers import settings_for
from tests.mqtt.tcp_proxy import proxy
from tests.mqtt.test_e2e_sim import VEHICLE, Stack, fc_ready, stack
from tests.mqtt.test_motion_e2e import _ctl

pytestmark = pytest.mark.integration
UP = PositionNed(0.0, 0.0, -3.0)


def _state(engine: FakeEngine, **state: str) -> None:
    assert engine.bridge is not None
    engine.bridge.publish_state({**state, "run_id": "r1"})


async def _engaged(engine: FakeEngine, c: OffboardClient) -> None:
    await c.engage(UP)
    _state(engine, phase="active", reason="engaged")
    await c.wait_for_state(lambda s: s.get("run_id") == "r1", 5)


async def _flying(s: Stack, c: OffboardClient) -> None:
    await fc_ready(c)
    await c.engage(UP, arm=True)
    await c.wait_for_state(lambda st: st["phase"] == "active" and st["in_control"], 15)


async def test_a_refused_stop_leaves_control_watched(mosquitto: Broker) -> None:
    """A refused emergency stop once turned the loss watch off while the heartbeats kept
    the lease: a pilot's takeover was never reported."""
    async with fake_daemon(settings_for(mosquitto.port)) as engine, \
            OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        await _engaged(engine, c)
        with pytest.raises(CommandRefused, match="confirmation_required"):
            await c.emergency_stop(confirm=False)
        _state(engine, phase="preempted", reason="preempted_mode")  # a pilot takes over
        lost = await asyncio.wait_for(c.control_lost(), 3)
        assert "preempted" in lost.reason
        with pytest.raises(ControlLost):
            await c.setpoint(UP)


async def test_a_refused_engage_after_a_takeover_sends_no_heartbeats(mosquitto: Broker) -> None:
    """After a takeover a refused engage once cleared the loss the heartbeats stopped for:
    they went out again, each refused not_in_control, until the script ended (found by
    the GNSS cut test, tests/sim/test_gps_loss.py)."""
    async with fake_daemon(settings_for(mosquitto.port)) as engine, \
            OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        await _engaged(engine, c)
        _state(engine, phase="preempted", reason="preempted_mode")  # a failsafe took it
        await asyncio.wait_for(c.control_lost(), 3)
        engine.refuse_engage = True
        with pytest.raises(CommandRefused, match="estimate"):
            await c.engage(UP)
        beats = engine.heartbeats
        await asyncio.sleep(4 * c.heartbeat_period_s)
        assert engine.heartbeats == beats
        assert c.control.ended and not c.control.watching
        with pytest.raises(ControlLost, match="preempted"):  # the loss, still unreported
            await c.setpoint(UP)


async def test_a_stop_command_is_sent_even_after_a_loss(mosquitto: Broker) -> None:
    async with fake_daemon(settings_for(mosquitto.port)) as engine, \
            OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        await _engaged(engine, c)
        _state(engine, phase="holding", reason="lease_lapsed")
        await asyncio.wait_for(c.control_lost(), 3)
        await c.emergency_stop(confirm=True)
        assert any(isinstance(cmd, EmergencyStop) for cmd in engine.commands)


async def test_a_setpoint_after_the_broker_is_gone_raises_a_client_error(
    mosquitto: Broker,
) -> None:
    async with OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        await asyncio.to_thread(mosquitto.stop)
        await asyncio.sleep(0.5)
        assert c.inbox.lost is not None
        for call in (c.setpoint(UP), c.renew_lease()):
            try:
                await call
            except ClientError:
                pass
            except aiomqtt.MqttError as exc:
                pytest.fail(f"raised {type(exc).__name__}, not a ClientError")
            else:
                pytest.fail("returned although the broker is gone")


async def test_a_refused_second_engage_keeps_the_lease_and_its_watch(mosquitto: Broker) -> None:
    async with stack(mosquitto, hold_s=30.0) as s, s.client() as c:
        await _flying(s, c)
        with pytest.raises(CommandRefused):
            await c.engage(UP, arm=True)  # not allowed in active
        with pytest.raises(CommandRefused):
            await c.goto(PositionNed(200_000.0, 0.0, -3.0), engage=True)  # out of range
        await asyncio.sleep(2.5)
        assert s.runtime.engine is not None and s.runtime.engine.phase.value == "active"
        assert c.control.watching


@pytest.mark.parametrize("give_up_after_s", [0.5, 1.3])
async def test_an_engage_given_up_is_released(mosquitto: Broker, give_up_after_s: float) -> None:
    """A script that stopped waiting for its engage (a timeout, a cancellation) once left
    the daemon arming and taking off for nobody: it was at 1.5 m, armed, when PX4's loss
    action took over. The client now releases what it gave up."""
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(give_up_after_s):
                await c.engage(UP, arm=True)
        await asyncio.sleep(3.0)
        assert s.runtime.engine is not None and s.runtime.engine.phase.value == "idle"
        assert s.sim.vehicle.mode_name != "OFFBOARD"
        assert -s.sim.vehicle.position_ned_m[2] < 0.5  # never took off
        if give_up_after_s < 1.0:  # still warming up: OFFBOARD never asked for
            assert s.sim.record.offboard_requests == []


async def test_ctl_engage_that_times_out_is_released(mosquitto: Broker) -> None:
    async with stack(mosquitto) as s, s.client() as watcher:
        await fc_ready(watcher)
        status, _, err = await _ctl(mosquitto.port, "--timeout", "0.3", "engage", "--arm",
                                    "--setpoint", '{"kind":"position_ned","north_m":0,'
                                    '"east_m":0,"down_m":-3}')
        await asyncio.sleep(3.0)
        assert status == 3, err
        assert s.sim.vehicle.mode_name != "OFFBOARD"
        assert -s.sim.vehicle.position_ned_m[2] < 0.5


async def test_a_silent_network_is_a_loss_of_control(mosquitto: Broker) -> None:
    """Wi-Fi gone without a reset: the daemon's lease lapses within a second, and the
    client once believed it flew for the MQTT keepalive's ~90 s."""
    async with stack(mosquitto, hold_s=30.0) as s, proxy(mosquitto.port) as p, \
            OffboardClient("127.0.0.1", p.port, VEHICLE) as c:
        await _flying(s, c)
        p.freeze()
        loop = asyncio.get_running_loop()
        frozen_at = loop.time()
        lost = await asyncio.wait_for(c.control_lost(), 8)
        assert "no state from the daemon" in lost.reason
        assert loop.time() - frozen_at < 5.0
        with pytest.raises(ControlLost):
            await c.setpoint(UP)
        assert s.runtime.engine is not None and s.runtime.engine.phase.value == "holding"
