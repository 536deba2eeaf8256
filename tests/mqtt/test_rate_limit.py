"""A commander flooding `cmd` (issue 15): beyond its rate it is refused with `rate_limited`,
a few times a second, not once per command; others are not affected; the daemon serves on.
The real runtime with its bridge and a real mosquitto (no FC: heartbeats need none)."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
import structlog

from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.mavlink.links import parse_link_url
from offboardd.mqtt.inbound_gate import InboundGate
from offboardd.mqtt.rates import Admit, CommanderRates, Lane, RateSettings, lane_of
from offboardd.mqtt.schema import CommandDecoder
from offboardd.mqtt.settings import MqttSettings
from offboardd.mqtt.topics import Topics
from tests.conftest import Broker, free_port
from tests.integration.harness import serving
from tests.mqtt.helpers import dumps, observer, request_properties, settings_for

pytestmark = pytest.mark.integration
T = Topics.for_vehicle("flood")


def test_buckets_per_commander_with_refusals_themselves_limited() -> None:
    rates = CommanderRates(RateSettings(cmd_rate_hz=10.0, cmd_burst=2, refusal_gap_s=0.25))
    a, b = ("inbox/a", Lane.CMD), ("inbox/b", Lane.CMD)
    assert [rates.admit(a, 0.0) for _ in range(4)] == [
        Admit.ACCEPT, Admit.ACCEPT, Admit.REFUSE, Admit.DROP]
    assert rates.admit(b, 0.0) is Admit.ACCEPT  # another commander has its own bucket
    assert rates.admit(a, 0.1) is Admit.ACCEPT  # one token back after 0.1 s at 10/s
    assert rates.admit(a, 0.1) is Admit.DROP  # refused 0.1 s ago: not said again yet
    assert rates.admit(a, 0.3) is Admit.ACCEPT
    assert rates.admit(("inbox/a", Lane.SETPOINT), 0.0) is Admit.ACCEPT  # the setpoint topic's
    assert rates.admit(("inbox/a", Lane.SAFETY), 0.0) is Admit.ACCEPT  # land & co have their own


def test_the_lane_of_a_command() -> None:
    assert lane_of("land", on_setpoint_topic=False) is Lane.SAFETY
    assert lane_of("emergency_stop", on_setpoint_topic=False) is Lane.SAFETY
    assert lane_of("heartbeat", on_setpoint_topic=False) is Lane.CMD
    assert lane_of("setpoint", on_setpoint_topic=True) is Lane.SETPOINT
    assert lane_of("setpoint", on_setpoint_topic=False) is Lane.CMD


async def test_a_flooding_commander_is_refused_with_rate_limited(mosquitto: Broker) -> None:
    config = DaemonConfig(
        mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{free_port()}")),
        mqtt=dataclasses.replace(settings_for(mosquitto.port), vehicle_id="flood"))
    async with serving(config, mqtt=True), observer(mosquitto.port) as flooder, \
            observer(mosquitto.port) as polite:
        await flooder.subscribe("flooder/inbox", 1)
        await polite.subscribe("polite/inbox", 1)
        props = request_properties("flooder/inbox", b"x")
        for i in range(400):
            await flooder.publish(T.cmd, dumps({"v": 1, "id": f"f{i}", "cmd": "hold"}),
                                  qos=0, properties=props)  # no FC: each refused fc_timeout
        codes: list[str | None] = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(2.0):
                async for message in flooder.messages:
                    codes.append(json.loads(bytes(message.payload))["code"])
        handled, limited = codes.count("fc_timeout"), codes.count("rate_limited")
        assert 40 <= handled < 150 and 1 <= limited <= 20, (handled, limited, len(codes))
        await polite.publish(T.cmd, dumps({"v": 1, "id": "p1", "cmd": "hold"}), qos=1,
                             properties=request_properties("polite/inbox", b"y"))
        async with asyncio.timeout(5.0):
            async for message in polite.messages:  # handled by the engine, not rate-limited
                assert json.loads(bytes(message.payload))["code"] == "fc_timeout"
                break


async def test_a_flood_of_heartbeats_never_gets_a_land_refused(mosquitto: Broker) -> None:
    """Found by review: commanders sharing a reply route (every MQTT 3.1.1 client does) share
    its bucket, and one that floods got another's `land` refused. Land & co have a bucket
    of their own per route."""
    config = DaemonConfig(
        mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{free_port()}")),
        mqtt=dataclasses.replace(settings_for(mosquitto.port), vehicle_id="flood"))
    async with serving(config, mqtt=True), observer(mosquitto.port) as client:
        await client.subscribe("shared/inbox", 1)
        props = request_properties("shared/inbox", b"x")
        for i in range(400):
            await client.publish(T.cmd, dumps({"v": 1, "id": f"h{i}", "cmd": "heartbeat"}),
                                 qos=0, properties=props)
        await client.publish(T.cmd, dumps({"v": 1, "id": "land", "cmd": "land"}), qos=1,
                             properties=props)
        async with asyncio.timeout(10.0):
            async for message in client.messages:
                reply = json.loads(bytes(message.payload))
                if reply["id"] == "land":
                    break
        assert reply["code"] == "fc_timeout", reply  # the engine's answer: no FC here


async def test_a_flood_of_garbage_is_answered_and_logged_a_few_times_a_second(
    mosquitto: Broker,
) -> None:
    """Found by review: every malformed message cost a parse, a WARNING line and a reply;
    50,000 of them in a burst flooded the journal (which then drops the daemon's own lines).
    Beyond the commands' rate per reply route the refusals are counted, not answered."""
    config = DaemonConfig(
        mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{free_port()}")),
        mqtt=dataclasses.replace(settings_for(mosquitto.port), vehicle_id="flood"))
    async with serving(config, mqtt=True) as runtime, observer(mosquitto.port) as junk, \
            observer(mosquitto.port) as polite:
        await junk.subscribe("junk/inbox", 1)
        await polite.subscribe("polite/inbox", 1)
        props = request_properties("junk/inbox", b"x")
        for _ in range(2000):
            await junk.publish(T.cmd, b"{engage", qos=0, properties=props)
        codes: list[str | None] = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(2.0):
                async for message in junk.messages:
                    codes.append(json.loads(bytes(message.payload))["code"])
        assert set(codes) == {"malformed_json"} and 40 <= len(codes) <= 150, len(codes)
        assert runtime.bridge is not None
        gate = runtime.bridge.gate
        assert gate.refused_count == 2000 and gate.suppressed_count == 2000 - len(codes)
        await polite.publish(T.cmd, b"[1]", qos=1,  # another route: answered at once
                             properties=request_properties("polite/inbox", b"y"))
        async with asyncio.timeout(5.0):
            async for message in polite.messages:
                assert json.loads(bytes(message.payload))["code"] == "not_an_object"
                break


def test_rotating_response_topics_get_answers_but_never_a_journal_line_each() -> None:
    """Found by review: each new response topic got a fresh bucket, so 5,000 garbage
    messages over 300 topics were each answered and logged (5,043 WARNING lines)."""
    now = [0.0]
    answers: list[str] = []
    gate = InboundGate(MqttSettings(), T, CommandDecoder(), lambda c: None,
                       lambda route, **kw: answers.append(route.topic), clock=lambda: now[0])
    with structlog.testing.capture_logs() as lines:
        for i in range(5000):
            gate.handle("cmd", b"{engage", retain=False,
                        properties=request_properties(f"rot/{i % 300}", b"x"))
            now[0] += 0.0002  # a second in all
    logged = [line for line in lines if line["event"] == "mqtt_refused"]
    # answered at four commanders' worth in all (a burst of 160, then 80 a second: review),
    # logged at one's (a burst, then 20 a second)
    assert 160 <= len(answers) <= 160 + 81 and len(logged) <= 40 + 21
    summed = sum(line.get("not_logged_before", 0) for line in logged) + len(logged)
    assert 5000 - 300 < summed <= 5000  # the last ones are summed up by the next line


def test_a_busy_commanders_bucket_is_never_the_one_forgotten() -> None:
    rates = CommanderRates(RateSettings(cmd_rate_hz=1.0, cmd_burst=1, max_commanders=4))
    busy = ("busy/inbox", Lane.CMD)
    assert rates.admit(busy, 0.0) is Admit.ACCEPT
    for i in range(20):  # a flooder rotating its response topic
        rates.admit((f"rot/{i}", Lane.CMD), 0.0)
        assert rates.admit(busy, 0.0) is not Admit.ACCEPT  # its empty bucket is kept


async def test_rotating_response_topics_meet_one_rate_for_all(mosquitto: Broker) -> None:
    """Found by review: the buckets are per reply route, and an MQTT 5 client names its
    response topic per message: with a fresh one each time every command met a full
    bucket (20,000 in one instant, all accepted). All routes together now share four
    commanders' worth, the lease holder's and the safety commands apart."""
    config = DaemonConfig(
        mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{free_port()}")),
        mqtt=dataclasses.replace(settings_for(mosquitto.port), vehicle_id="flood"))
    async with serving(config, mqtt=True) as runtime, observer(mosquitto.port) as flooder:
        for i in range(600):
            await flooder.publish(T.cmd, dumps({"v": 1, "id": f"r{i}", "cmd": "heartbeat"}),
                                  qos=0, properties=request_properties(f"rot/{i}", b"x"))
        await flooder.publish(T.cmd, dumps({"v": 1, "id": "last", "cmd": "heartbeat"}),
                              qos=1, properties=request_properties("rot/last", b"x"))
        await asyncio.sleep(1.0)
        turned_away = runtime.all_rates.refused + runtime.all_rates.dropped
        assert turned_away >= 350, turned_away  # at most a burst of 160 and 80/s went on
