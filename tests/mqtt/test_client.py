"""offboardd.client against a real mosquitto and a fake daemon side (a real bridge)."""

from __future__ import annotations

import asyncio

import pytest

from offboardd.client import ClientError, CommandRefused, OffboardClient, ReplyTimeout
from offboardd.core.commands import Engage, Land, SetSetpoint
from offboardd.core.setpoints import PositionNed, VelocityNed
from tests.conftest import Broker
from tests.mqtt.fake_daemon import fake_daemon
from tests.mqtt.helpers import settings_for

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_mission_script_engage_stream_land(mosquitto: Broker, protocol: str) -> None:
    async with fake_daemon(settings_for(mosquitto.port, protocol)) as engine, \
            OffboardClient("127.0.0.1", mosquitto.port, "v1", protocol=protocol,  # type: ignore[arg-type]
                           heartbeat_period_s=0.05) as c:
        await c.wait_for_state(lambda s: s["phase"] == "idle", timeout_s=5)
        reply = await c.engage(PositionNed(0, 0, -5), arm=True)
        assert reply.ok and reply.message == "engage done"
        await c.wait_for_state(lambda s: s["phase"] == "active", timeout_s=5)
        for i in range(5):
            await c.setpoint(VelocityNed(float(i), 0, 0))
        await asyncio.sleep(0.5)
        assert engine.heartbeats >= 3  # the lease is kept while the script runs
        with pytest.raises(CommandRefused) as refused:
            await c.arm()
        assert refused.value.reply.code == "command_not_allowed"
        assert refused.value.reply.extra == {"phase": "active"}
        await c.land()
        beats = engine.heartbeats
        await asyncio.sleep(0.3)
        assert engine.heartbeats <= beats + 1  # stopped once control was handed back
    engage, *setpoints, _arm, land = engine.commands
    assert engage == Engage(engage.command_id, PositionNed(0, 0, -5), arm=True)
    assert [s.setpoint for s in setpoints if isinstance(s, SetSetpoint)] == [
        VelocityNed(float(i), 0, 0) for i in range(5)]
    assert isinstance(land, Land)
    assert c.last_stream_error is None


async def test_refusal_from_schema_is_raised_with_its_code(mosquitto: Broker) -> None:
    async with fake_daemon(settings_for(mosquitto.port)), \
            OffboardClient("127.0.0.1", mosquitto.port, "v1") as c:
        with pytest.raises(CommandRefused, match="confirmation_required"):
            await c.emergency_stop(confirm=False)


async def test_no_daemon_means_a_reply_timeout(mosquitto: Broker) -> None:
    async with OffboardClient("127.0.0.1", mosquitto.port, "v1", reply_timeout_s=0.3) as c:
        with pytest.raises(ReplyTimeout, match="no reply"):
            await c.hold()
        with pytest.raises(ReplyTimeout, match="no state retained on offboardd/v1/state"):
            await c.wait_for_state(lambda s: True, timeout_s=0.2)


async def test_two_clients_get_only_their_own_replies(mosquitto: Broker) -> None:
    async with fake_daemon(settings_for(mosquitto.port)), \
            OffboardClient("127.0.0.1", mosquitto.port, "v1") as a, \
            OffboardClient("127.0.0.1", mosquitto.port, "v1", protocol="3.1.1") as b:
        replies = await asyncio.gather(a.heartbeat(), b.heartbeat(), a.release(), b.hold())
    assert [r.ok for r in replies] == [True] * 4
    assert len({r.id for r in replies}) == 4


async def test_broker_lost_fails_pending_and_later_calls_at_once(mosquitto: Broker) -> None:
    async with OffboardClient("127.0.0.1", mosquitto.port, "v1", reply_timeout_s=30) as c:
        pending = asyncio.create_task(c.hold())  # no daemon: it would wait 30 s
        await asyncio.sleep(0.2)
        await asyncio.to_thread(mosquitto.stop)
        with pytest.raises(ClientError, match="lost"):
            await asyncio.wait_for(pending, 10)
        with pytest.raises(ClientError, match="lost"):
            await c.land()


async def test_closing_ends_even_when_aiomqtt_swallows_the_cancellation(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python 3.11's wait_for inside aiomqtt's publish can return instead of raising when
    cancelled as the PUBACK arrives (a hang seen in CI); closing the client must still end."""
    async with fake_daemon(settings_for(mosquitto.port)):
        c = OffboardClient("127.0.0.1", mosquitto.port, "v1", heartbeat_period_s=0.02)
        async with c:
            await c.engage(PositionNed(0, 0, -5))
            publish = c._mqtt.publish
            swallowed = 0

            async def publish_swallowing(*args: object, **kwargs: object) -> None:
                nonlocal swallowed
                try:
                    await asyncio.sleep(0.05)
                except asyncio.CancelledError:
                    swallowed += 1  # as 3.11's wait_for does when its wait completes too
                await publish(*args, **kwargs)  # type: ignore[arg-type]

            monkeypatch.setattr(c._mqtt, "publish", publish_swallowing)
            await asyncio.sleep(0.2)  # heartbeats now go through the swallowing publish
            closing = asyncio.get_running_loop().time()
        assert asyncio.get_running_loop().time() - closing < 3.0
        assert swallowed >= 1
