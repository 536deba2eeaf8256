"""A commander that does not hold the lease is told so (issue 15): a heartbeat, even with
`ack: false`, and a setpoint on the setpoint topic are refused with `not_in_control`,
naming the phase and why control ended, a few times a second at most; every `state`
carries the daemon's run id, new after a restart. Real runtime, bridge and mosquitto."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from offboardd.client import OffboardClient
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.mavlink.links import parse_link_url
from offboardd.mqtt.topics import Topics
from tests.conftest import Broker, free_port
from tests.integration.harness import serving
from tests.mqtt.helpers import dumps, observer, settings_for
from tests.mqtt.test_e2e_sim import fc_ready, stack

pytestmark = pytest.mark.integration
T = Topics.for_vehicle("nic")


def config_for(broker: Broker) -> DaemonConfig:
    return DaemonConfig(
        mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{free_port()}")),
        mqtt=dataclasses.replace(settings_for(broker.port), vehicle_id="nic"))


async def test_heartbeats_and_setpoints_without_a_lease_are_refused_a_few_times_a_second(
    mosquitto: Broker
) -> None:
    async with serving(config_for(mosquitto), mqtt=True), observer(mosquitto.port) as c:
        await c.subscribe(T.reply, 1)
        for i in range(40):  # 2 s of a 20 Hz lease loop and setpoint stream, both unheard
            await c.publish(T.cmd, dumps({"v": 1, "id": f"hb{i}", "cmd": "heartbeat",
                                          "ack": False}))
            await c.publish(T.setpoint, dumps({"v": 1, "session": "s", "seq": i + 1,
                                               "kind": "position_ned", "north_m": 0,
                                               "east_m": 0, "down_m": -3}))
            await asyncio.sleep(0.05)
        replies = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1.0):
                async for message in c.messages:
                    replies.append(json.loads(bytes(message.payload)))
    assert replies and all(r["code"] == "not_in_control" for r in replies), replies[:3]
    assert "phase idle" in replies[0]["message"]
    assert 2 <= len(replies) <= 12, len(replies)  # ~4/s over ~2 s, not 80


async def test_state_names_the_run_and_a_restart_changes_it(mosquitto: Broker) -> None:
    runs = []
    for _ in range(2):
        async with serving(config_for(mosquitto), mqtt=True), \
                OffboardClient("127.0.0.1", mosquitto.port, "nic") as c:
            state = await c.wait_for_state(lambda s: "run_id" in s and s["run_id"] not in runs,
                                           10)
            runs.append(state["run_id"])
            assert state["in_control"] is False
    assert len(set(runs)) == 2


async def test_a_command_that_waits_for_its_reply_gets_it_amid_throttled_refusals(
    mosquitto: Broker
) -> None:
    async with serving(config_for(mosquitto), mqtt=True), observer(mosquitto.port) as c:
        await c.subscribe(T.reply, 1)
        for i in range(5):  # a lease loop the daemon refuses (throttled)...
            await c.publish(T.cmd, dumps({"v": 1, "id": f"hb{i}", "cmd": "heartbeat",
                                          "ack": False}))
        # ... and a setpoint sent as a command, which asked for its reply
        await c.publish(T.cmd, dumps({"v": 1, "id": "want", "cmd": "setpoint", "setpoint": {
            "kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -3}}), qos=1)
        async with asyncio.timeout(5.0):
            async for message in c.messages:
                reply = json.loads(bytes(message.payload))
                if reply["id"] == "want":
                    assert reply["code"] == "not_in_control"
                    break


async def test_a_non_holders_refused_setpoint_never_freezes_the_holders_stream(
    mosquitto: Broker,
) -> None:
    """Found by review: one replay guard for all commanders. A client that did not hold the
    lease sent one setpoint; it was refused `not_in_control`, yet its session replaced the
    holder's, and every later setpoint of the holder's was refused `setpoint_stale` while
    its heartbeats kept the lease: the vehicle flew on at 2 m/s through the holder's stop."""
    async with stack(mosquitto, hold_s=30.0) as s, s.client() as a, s.client() as b:
        await fc_ready(a)
        assert (await a.engage(PositionNed(0, 0, -3), arm=True)).ok
        for _ in range(40):
            await a.setpoint(VelocityNed(2.0, 0.0, 0.0))
            await asyncio.sleep(0.05)
        await b.setpoint(PositionNed(0, 0, -3))  # not the holder: refused not_in_control
        await asyncio.sleep(0.3)
        assert b.last_stream_error is not None
        assert b.last_stream_error.code == "not_in_control"
        for _ in range(40):  # the holder: stop
            await a.setpoint(VelocityNed(0.0, 0.0, 0.0))
            await asyncio.sleep(0.05)
        assert a.last_stream_error is None, a.last_stream_error
        assert abs(float(s.sim.vehicle.velocity_ned_m_s[0])) < 0.5
