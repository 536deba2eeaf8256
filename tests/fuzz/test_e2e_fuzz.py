"""End-to-end fuzz: mosquitto -> daemon (the real Runtime, in this loop) -> sim over UDP.

The vehicle is engaged and flying inside a geofence; then ≥ 500 hypothesis-generated
payloads (e2e_payloads.py) go to the command and setpoint topics, re-engaging whenever
the fuzz has landed, released or disarmed it; then, hovering again, garbage datagrams
are sent to the daemon's MAVLink port. Afterwards:
- the daemon is still running and answers a command; no exception escaped
  (`runtime.internal_errors == 0`, no `internal_error` reply);
- every setpoint the sim received is one PX4 flies (`verdict == "valid"`) and inside
  the envelope: limits, and positions inside the fence (EnvelopeJudge, with home from
  the HOME_POSITION the sim sent);
- during the MAVLink garbage the daemon kept flying: still ACTIVE, the sim in OFFBOARD,
  and valid setpoints reaching the sim without a gap PX4 would fail safe on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import math
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiomqtt
import pytest

from offboardd.aio import raise_if_cancelling
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.settings import EngineSettings
from offboardd.errors import ErrorCode
from offboardd.mavlink.codec import MavlinkCodec, Message
from offboardd.mavlink.links import parse_link_url
from offboardd.mqtt.topics import Topics
from offboardd.mqtt.wire import MqttErrorCode
from offboardd.runtime import Runtime
from offboardd.sim import SimConfig, SimServer
from tests.conftest import Broker, datagrams_from, free_port
from tests.integration.harness import serving
from tests.mqtt.helpers import observer, settings_for
from tests.sim.client import QUICK_BOOT_S

from .budget import BUDGET, Cases
from .e2e_payloads import E2E_TEST, mavlink_garbage, mqtt_payloads
from .judge import EnvelopeJudge, HomeFix

pytestmark = pytest.mark.integration
VEHICLE = "fuzz1"
T = Topics.for_vehicle(VEHICLE)
ENVELOPE = EnvelopeSettings(max_distance_m=40.0, max_altitude_m=30.0, min_altitude_m=-1.0,
                            breach_tolerance_m=2.0, max_horizontal_speed_m_s=8.0)
CODES = {str(c) for c in MqttErrorCode} | {str(c) for c in ErrorCode}
ENGAGED = ("warmup", "engaging", "arming", "active", "holding")
# PX4 fails safe after COM_OF_LOSS_T (default 1 s) without a setpoint: keep clear of it.
MAX_SETPOINT_GAP_S = 0.8


@dataclasses.dataclass
class Fuzzing:
    sim: SimServer
    runtime: Runtime
    port: int  # the daemon's MAVLink UDP port
    # every SET_* message the sim got: (sim time, message, vehicle position then)
    received: list[tuple[float, Message, tuple[float, float, float]]]

    def phase(self) -> str:
        assert self.runtime.engine is not None
        return self.runtime.engine.phase.value

    def snapshot(self) -> dict[str, Any]:
        assert self.runtime.engine is not None
        return self.runtime.engine.snapshot(self.sim.now()).as_dict()


@contextlib.asynccontextmanager
async def daemon_and_sim(broker: Broker) -> AsyncIterator[Fuzzing]:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim:
        received: list[tuple[float, Message, tuple[float, float, float]]] = []
        handle = sim.vehicle.handle

        def spy(msg: Message, now_s: float, link_id: int) -> Any:
            if msg.get_type().startswith("SET_"):
                received.append((now_s, msg, sim.vehicle.position_ned_m))
            return handle(msg, now_s, link_id)

        sim.vehicle.handle = spy  # type: ignore[method-assign]
        config = DaemonConfig(
            mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{port}")),
            engine=dataclasses.replace(EngineSettings(), envelope=ENVELOPE, hold_s=3.0),
            mqtt=settings_for(broker.port, "5", vehicle_id=VEHICLE, max_payload_bytes=4096),
        )
        async with serving(config, mqtt=True) as runtime:
            yield Fuzzing(sim, runtime, port, received)


async def wait_for(predicate: Any, timeout_s: float, what: str, fz: Fuzzing | None = None
                   ) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        if loop.time() > deadline:
            state = "" if fz is None else (
                f": phase {fz.phase()}, sim {fz.sim.vehicle.mode_name} armed "
                f"{fz.sim.vehicle.armed} at {fz.sim.vehicle.position_ned_m}, "
                f"streaming {fz.snapshot()['setpoint_kind']}")
            raise AssertionError(f"timed out waiting for {what}{state}")
        await asyncio.sleep(0.02)


def fc_ready(snapshot: dict[str, Any]) -> bool:
    """Everything the engage gate needs: home and a position estimate come with the first
    telemetry, the parameter replies can come after them (an engage sent in between was
    refused with fc_params_unknown and the take-off never came)."""
    params = ("com_of_loss_t_s", "com_obl_rc_act", "mav_fwdextsp")
    return (all(snapshot[name] is not None for name in params) and snapshot["home_known"]
            and bool(snapshot["estimates"].get("local_position")))


def engage_payload(n: int, fz: Fuzzing | None = None) -> bytes:
    """An engage written now: it quotes the daemon's token, as a commander reading `state`
    does (after a failsafe or a takeover an engage without it is refused)."""
    token = None if fz is None else fz.snapshot()["resume_token"]
    return json.dumps({"v": 1, "id": f"engage-{n}", "cmd": "engage", "arm": True,
                       "setpoint": {"kind": "position_ned", "north_m": 0.0, "east_m": 0.0,
                                    "down_m": -5.0},
                       **({} if token is None else {"resume": token})}).encode()


async def collect_replies(client: aiomqtt.Client, replies: list[dict[str, Any]]) -> None:
    async for message in client.messages:
        if message.topic.matches(T.reply) and isinstance(message.payload, bytes):
            replies.append(json.loads(message.payload))


async def keep_lease(client: aiomqtt.Client) -> None:
    """A live commander: heartbeats every 0.25 s (the lease is 1 s)."""
    for n in range(1_000_000):
        await client.publish(T.cmd, json.dumps({"v": 1, "id": f"hb-{n}",
                                                "cmd": "heartbeat"}).encode(), qos=1)
        # Python 3.11's wait_for inside aiomqtt's publish can swallow the cancellation that
        # ends this loop; without the check the test would wait on it until its timeout.
        raise_if_cancelling()
        await asyncio.sleep(0.25)


async def test_fuzzed_mqtt_and_mavlink_traffic_end_to_end(
    mosquitto: Broker, cases: Cases
) -> None:
    publications = mqtt_payloads(BUDGET[E2E_TEST])
    garbage = mavlink_garbage(200)  # ~100 datagrams: the ones holding no intact frame
    replies: list[dict[str, Any]] = []
    async with daemon_and_sim(mosquitto) as fz, observer(mosquitto.port) as client:
        await client.subscribe(T.reply, qos=1)
        background = [asyncio.create_task(collect_replies(client, replies)),
                      asyncio.create_task(keep_lease(client))]
        try:
            await wait_for(lambda: fc_ready(fz.snapshot()), 15, "FC ready with a home")
            await client.publish(T.cmd, engage_payload(0), qos=1)
            await wait_for(lambda: fz.phase() == "active"
                           and fz.sim.vehicle.position_ned_m[2] < -3.0, 20, "take-off")
            await fuzz_mqtt(fz, client, publications, cases)
            await hover_again(fz, client)
            await fuzz_mavlink_link(fz, garbage, cases)
            await client.publish(T.cmd, b'{"v":1,"id":"still-there","cmd":"heartbeat"}', qos=1)
            await wait_for(lambda: any(r.get("id") == "still-there" and r["ok"]
                                       for r in replies), 5, "the daemon answering")
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            for topic in (T.cmd, T.setpoint):  # clear what the fuzz left retained
                await client.publish(topic, b"", qos=1, retain=True)
        assert fz.runtime.internal_errors == 0
        assert not [r for r in replies if r.get("code") == "internal_error"]
        uncoded = [r for r in replies if not r["ok"] and r.get("code") not in CODES]
        assert not uncoded, uncoded[:3]  # every refusal carries a documented code
        audit(fz)
    assert cases.count >= BUDGET[E2E_TEST]


async def fuzz_mqtt(fz: Fuzzing, client: aiomqtt.Client, publications: list[Any],
                    cases: Cases) -> None:
    loop = asyncio.get_running_loop()
    last_engage_s = loop.time()
    for seq, publication in enumerate(publications, start=1):
        topic = T.cmd if publication.channel == "cmd" else T.setpoint
        qos = 1 if publication.channel == "cmd" else 0
        await client.publish(topic, publication.payload(seq), qos=qos, retain=publication.retain)
        cases.add()
        if fz.phase() == "active":
            cases.note("published_while_active")
        if fz.phase() not in ENGAGED and loop.time() - last_engage_s > 0.5:
            # the fuzz landed, released, disarmed or drove into the fence: fly again
            await client.publish(T.cmd, engage_payload(seq, fz), qos=1)
            last_engage_s = loop.time()
            cases.note("re_engaged")
        await asyncio.sleep(0.015)
    cases.notes["setpoints_flown"] = sum(
        1 for s in fz.sim.record.setpoints if s.verdict == "valid")


async def hover_again(fz: Fuzzing, client: aiomqtt.Client) -> None:
    """Back to a calm hover inside the fence, whatever state the fuzz left (landed,
    disarmed by an operator disarm while still engaged, failsafe...): release, engage."""
    for attempt in range(3):
        if fz.phase() in (*ENGAGED, "releasing"):
            await client.publish(T.cmd, json.dumps({"v": 1, "id": f"calm-release-{attempt}",
                                                    "cmd": "release"}).encode(), qos=1)
            with contextlib.suppress(AssertionError):
                await wait_for(lambda: fz.phase() not in (*ENGAGED, "releasing"), 8, "release")
        await client.publish(T.cmd, engage_payload(10_000 + attempt, fz), qos=1)
        with contextlib.suppress(AssertionError):
            await wait_for(lambda: fz.phase() == "active" and fz.sim.vehicle.armed
                           and fz.sim.vehicle.position_ned_m[2] < -3.0, 15, "hovering")
            return
    await wait_for(lambda: False, 0, "hovering again", fz)


async def fuzz_mavlink_link(fz: Fuzzing, garbage: list[bytes], cases: Cases) -> None:
    """Garbage datagrams at ~25 Hz to the daemon's port while it flies: the daemon keeps
    its stream to the autopilot (a udpin link replies only to senders of valid MAVLink)."""
    loop = asyncio.get_running_loop()
    start_s = fz.sim.now()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        for datagram in garbage:
            sock.sendto(datagram, ("127.0.0.1", fz.port))
            await asyncio.sleep(0.04)
            assert fz.phase() == "active", f"garbage on the link ended the flight: {fz.phase()}"
        from_daemon, strays = datagrams_from(sock, fz.port)
    codec = MavlinkCodec(1, 1)  # (named in the failure message)
    diverted = [" ".join(m.get_type() for m in codec.decode(d)) or d.hex() for d in from_daemon]
    cases.notes["mavlink_garbage_datagrams"] = len(garbage)
    cases.notes["setpoints_diverted_to_the_garbage_sender"] = len(diverted)
    cases.notes["stray_datagrams_from_other_senders"] = strays
    assert not diverted, f"{len(diverted)} datagrams went to the garbage sender: {diverted[:3]}"
    assert fz.sim.vehicle.mode_name == "OFFBOARD" and fz.sim.vehicle.armed
    times = [t for t, _, _ in fz.received if t >= start_s] + [fz.sim.now()]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    cases.notes["worst_setpoint_gap_ms_under_garbage"] = round(max(gaps) * 1000)
    assert times[0] - start_s < MAX_SETPOINT_GAP_S and max(gaps) < MAX_SETPOINT_GAP_S, max(gaps)
    assert loop.time() > start_s


def audit(fz: Fuzzing) -> None:
    bad = [s for s in fz.sim.record.setpoints if s.verdict != "valid"]
    assert not bad, f"setpoints PX4 would drop or fail safe on: {bad[:3]}"
    assert fz.runtime.engine is not None
    home = fz.runtime.engine.envelope.home  # what the sim's HOME_POSITION said
    assert home is not None
    judge = EnvelopeJudge(ENVELOPE, HomeFix(home.lat_deg, home.lon_deg, home.alt_amsl_m,
                                            home.north_m, home.east_m, home.down_m))
    for _, msg, here in fz.received:
        problems = judge.problems(msg)
        if problems and is_hold_at(msg, here):
            continue  # "stay where you are" after a drift out: the breach action's moment
        assert not problems, (msg, problems)


# How far the vehicle's true position may be from what the daemon last heard: telemetry
# at 5 Hz (the "light" profile) at up to ~15 m/s, plus a tick of latency.
HOLD_DISTANCE_M = 4.0


def is_hold_at(msg: Message, here: tuple[float, float, float]) -> bool:
    """A zero-velocity local position at (about) where the vehicle was when it arrived."""
    if msg.get_type() != "SET_POSITION_TARGET_LOCAL_NED" or msg.type_mask & 7:
        return False
    if msg.type_mask & 56 != 56 and max(abs(msg.vx), abs(msg.vy), abs(msg.vz)) > 0.0:
        return False
    distance = math.dist((msg.x, msg.y, msg.z), here)
    return distance <= HOLD_DISTANCE_M
