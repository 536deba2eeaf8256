"""`offboardd ctl` run as a subprocess against mosquitto and a fake daemon side."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiomqtt
import pytest

from offboardd.core.commands import Arm, Disarm, Engage, Hold, Land, Rtl, SetSetpoint
from offboardd.core.motion_commands import Goto
from offboardd.core.setpoints import PositionNed, VelocityNed
from tests.conftest import Broker, free_port
from tests.mqtt.fake_daemon import FakeEngine, fake_daemon
from tests.mqtt.helpers import settings_for

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]
HOVER = '{"kind":"position_ned","north_m":0,"east_m":0,"down_m":-5}'


async def ctl(port: int, *argv: str, protocol: str = "5") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "offboardd", "ctl", "--port", str(port), "--vehicle", "v1",
        "--protocol", protocol, "--timeout", "3", *argv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO_ROOT,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def engine(mosquitto: Broker) -> AsyncIterator[FakeEngine]:
    async with fake_daemon(settings_for(mosquitto.port)) as fake:
        yield fake


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_simple_command_prints_reply_and_exits_0(
    mosquitto: Broker, engine: FakeEngine, protocol: str
) -> None:
    status, out, _ = await ctl(mosquitto.port, "hold", protocol=protocol)
    reply = json.loads(out)
    assert status == 0 and reply["ok"] is True and reply["message"] == "hold done"
    assert isinstance(engine.commands[-1], Hold)


async def test_engage_setpoint_disarm_and_refusals(mosquitto: Broker, engine: FakeEngine) -> None:
    status, out, _ = await ctl(mosquitto.port, "engage", "--arm", "--setpoint", HOVER)
    assert status == 0 and json.loads(out)["ok"]
    assert engine.commands[-1] == Engage(engine.commands[-1].command_id, PositionNed(0, 0, -5),
                                         arm=True)
    setpoint = '{"kind":"velocity_ned","north_m_s":1,"east_m_s":0,"down_m_s":0}'
    status, out, _ = await ctl(mosquitto.port, "setpoint", setpoint)
    assert status == 0 and engine.commands[-1].setpoint == VelocityNed(1, 0, 0)
    status, out, _ = await ctl(mosquitto.port, "arm")  # the fake engine refuses it when active
    assert status == 1 and json.loads(out)["code"] == "command_not_allowed"
    status, out, _ = await ctl(mosquitto.port, "emergency-stop")
    assert status == 1 and json.loads(out)["code"] == "confirmation_required"
    status, out, _ = await ctl(mosquitto.port, "disarm", "--force")
    assert status == 0 and isinstance(engine.commands[-1], Disarm) and engine.commands[-1].force
    count = len(engine.commands)
    status, _, err = await ctl(mosquitto.port, "setpoint", '{"kind":"position_ned","north_m":1}')
    assert status == 2 and "missing_field" in err
    status, out, _ = await ctl(mosquitto.port, "send", '{"cmd":"warp"}')
    assert status == 1 and json.loads(out)["code"] == "unknown_command"
    assert len(engine.commands) == count  # nothing invalid reached the engine


async def test_engage_keep_lease_heartbeats_then_releases(
    mosquitto: Broker, engine: FakeEngine
) -> None:
    status, out, _ = await ctl(mosquitto.port, "engage", "--keep-lease", "--duration", "1.0",
                               "--then", "land")
    engage_reply, land_reply = (json.loads(line) for line in out.splitlines())
    assert status == 0 and engage_reply["ok"] and land_reply["message"] == "land done"
    assert engine.heartbeats >= 2


async def test_state_and_watch(mosquitto: Broker, engine: FakeEngine) -> None:
    status, out, _ = await ctl(mosquitto.port, "state")
    assert status == 0 and json.loads(out) == {"v": 1, "phase": "idle", "armed": False}

    async def telemetry() -> None:
        assert engine.bridge is not None
        while True:
            engine.bridge.publish_telemetry("position", {"north_m": 1.5})
            await asyncio.sleep(0.1)

    feeder = asyncio.create_task(telemetry())
    try:
        status, out, _ = await ctl(mosquitto.port, "watch", "--count", "3", "--duration", "20")
    finally:
        feeder.cancel()
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert status == 0 and lines["availability"] == "online", out
    assert json.loads(lines["state"])["phase"] == "idle"
    assert json.loads(lines["telemetry/position"]) == {"v": 1, "north_m": 1.5}


async def test_state_of_an_offline_daemon_says_so_and_exits_7(mosquitto: Broker) -> None:
    """What a daemon retained as it stopped is its last word, not the vehicle now (a
    new-user walk-through read `fc_link: up, armed: true` from a stopped daemon, exit 0)."""
    async with aiomqtt.Client("127.0.0.1", mosquitto.port) as pub:
        await pub.publish("offboardd/v1/state", b'{"v":1,"phase":"idle","armed":true}',
                          qos=1, retain=True)  # fmt: skip
        await pub.publish("offboardd/v1/availability", b"offline", qos=1, retain=True)
    status, out, err = await ctl(mosquitto.port, "state")
    assert status == 7 and json.loads(out)["armed"] is True
    assert "the daemon is offline" in err
    status, _, err = await ctl(mosquitto.port, "--vehicle", "nosuch", "state")
    assert status == 3 and "no state retained on offboardd/nosuch/state" in err


async def test_no_daemon_times_out_and_no_broker_is_unreachable(mosquitto: Broker) -> None:
    status, _, err = await ctl(mosquitto.port, "release")
    assert status == 3 and "no reply" in err
    status, _, err = await ctl(mosquitto.port, "hold")  # no state to read: sent as it is
    assert status == 3 and "no reply" in err
    status, _, err = await ctl(free_port(socket.SOCK_STREAM), "hold")
    assert status == 4 and "broker" in err


async def test_setpoint_and_goto_resume_quote_the_holds_token(
    mosquitto: Broker, engine: FakeEngine
) -> None:
    setpoint = '{"kind":"velocity_ned","north_m_s":1,"east_m_s":0,"down_m_s":0}'
    count = len(engine.commands)
    status, _, err = await ctl(mosquitto.port, "setpoint", "--resume", setpoint)
    assert status == 1 and "no token to take control with (phase idle)" in err  # nothing sent
    assert len(engine.commands) == count
    assert engine.bridge is not None
    engine.bridge.publish_state({"phase": "holding", "resume_token": "tok-1"})
    status, out, _ = await ctl(mosquitto.port, "setpoint", "--resume", setpoint)
    assert status == 0 and json.loads(out)["ok"]
    assert engine.commands[-1] == SetSetpoint(engine.commands[-1].command_id,
                                              VelocityNed(1, 0, 0), resume="tok-1")
    engine.bridge.publish_state({"phase": "holding", "resume_token": "tok-2"})  # a new hold
    status, out, err = await ctl(mosquitto.port, "goto", "3", "0", "-5", "--resume")
    assert status == 0, (out, err)
    # the reply's line as every subcommand prints it (a motion's once lacked `code`)
    assert set(json.loads(out)) >= {"id", "ok", "code", "message"}
    assert isinstance(engine.commands[-1], Goto)
    assert engine.commands[-1].resume == "tok-2"


async def test_arm_hold_land_rtl_and_engage_quote_the_token_they_read(
    mosquitto: Broker, engine: FakeEngine
) -> None:
    """After a pilot, a GCS or a failsafe took the vehicle the daemon takes these only with
    that phase's token (mqtt-api.md): an operator's `ctl` reads the state first and quotes
    it there; elsewhere none is sent."""
    assert engine.bridge is not None
    status, _, _ = await ctl(mosquitto.port, "hold")
    assert status == 0 and engine.commands[-1] == Hold(engine.commands[-1].command_id)
    for action, kind in (("arm", Arm), ("hold", Hold), ("land", Land), ("rtl", Rtl)):
        engine.bridge.publish_state({"phase": "preempted", "resume_token": f"tok-{action}"})
        status, out, err = await ctl(mosquitto.port, action)
        assert status == 0, (action, out, err)
        sent = engine.commands[-1]
        assert sent == kind(sent.command_id, resume=f"tok-{action}"), sent
    engine.bridge.publish_state({"phase": "holding", "resume_token": "tok-hold"})
    status, _, _ = await ctl(mosquitto.port, "land")  # not taken: nothing quoted (a daemon
    assert status == 0 and engine.commands[-1].resume is None  # before 11-28 refused it)
    engine.bridge.publish_state({"phase": "failsafe", "resume_token": "tok-engage"})
    status, out, err = await ctl(mosquitto.port, "engage")
    assert status == 0, (out, err)
    assert isinstance(engine.commands[-1], Engage) and engine.commands[-1].resume == "tok-engage"
