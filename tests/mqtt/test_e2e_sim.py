"""The MQTT interface end to end: the real runtime (in this loop) with its bridge, a real
mosquitto, the built-in sim over UDP; and the mosquitto CLI examples of the docs.

What the sim must never see: a setpoint, mode change or arming caused by anything the MQTT
layer refused (retained, malformed, replayed).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from offboardd.client import OffboardClient
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.core.settings import EngineSettings
from offboardd.mavlink.links import parse_link_url
from offboardd.mqtt.topics import Topics
from offboardd.runtime import Runtime
from offboardd.sim import SimConfig, SimServer
from offboardd.sim.px4_versions import DEFAULT_VERSION
from tests.conftest import Broker, free_port
from tests.integration.harness import serving
from tests.mqtt.helpers import (
    body,
    dumps,
    next_message,
    observer,
    request_properties,
    settings_for,
)
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]
VEHICLE = "vehicle1"  # the README example uses the default vehicle id
T = Topics.for_vehicle(VEHICLE)


@dataclass
class Stack:
    sim: SimServer
    runtime: Runtime
    broker: Broker

    def client(self, protocol: str = "5") -> OffboardClient:
        return OffboardClient("127.0.0.1", self.broker.port, VEHICLE,
                              protocol=protocol)  # type: ignore[arg-type]

    @property
    def north_m(self) -> float:
        return float(self.sim.vehicle.position_ned_m[0])


@contextlib.asynccontextmanager
async def stack(broker: Broker, protocol: str = "5", *,
                sim_params: dict[str, float] | None = None, px4_version: str = DEFAULT_VERSION,
                **engine: Any) -> AsyncIterator[Stack]:
    port = free_port()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", params=sim_params or {},
                           boot_ready_s=QUICK_BOOT_S, px4_version=px4_version)
    async with SimServer(sim_config) as sim:
        config = DaemonConfig(
            mavlink=MavlinkSettings(url=parse_link_url(f"udpin://127.0.0.1:{port}")),
            engine=dataclasses.replace(EngineSettings(), **engine),
            mqtt=settings_for(broker.port, protocol, vehicle_id=VEHICLE,
                              mavlink_relay=frozenset({"SYS_STATUS"})),
        )
        async with serving(config, mqtt=True) as runtime:
            yield Stack(sim, runtime, broker)
        assert runtime.internal_errors == 0
        bad = [s for s in sim.record.setpoints if s.verdict != "valid"]
        assert not bad, bad[:3]


async def fc_ready(c: OffboardClient) -> None:
    await c.wait_for_state(
        lambda s: s.get("com_of_loss_t_s") is not None
        and bool(s.get("estimates", {}).get("local_position")), timeout_s=15)


MALFORMED: list[tuple[bytes, str]] = [
    (b"{engage", "malformed_json"),
    (b'{"v":1,"id":"m2","cmd":"engage","arm":true,"setpoint":{"kind":"position_ned",'
     b'"north_m":NaN,"east_m":0,"down_m":-5}}', "not_finite"),
    (dumps({"v": 1, "id": "m3", "cmd": "engage", "arm": "yes"}), "wrong_type"),
    (dumps({"v": 1, "id": "m4", "cmd": "engage", "arm": True, "setpoint": {
        "kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -5e6}}), "out_of_range"),
    (dumps({"v": 1, "id": "m5", "cmd": "take_off"}), "unknown_command"),
    (dumps({"v": 1, "id": "m6", "cmd": "engage", "arm": True, "setpoint": {
        "kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -5, "alt": 3}}),
     "unknown_field"),
    (dumps({"v": 1, "id": "m7", "cmd": "engage", "arm": True, "pad": "x" * 33_000}),
     "payload_too_large"),
    (dumps({"v": 2, "id": "m8", "cmd": "engage"}), "unsupported_version"),
    (dumps({"v": 1, "id": "m9", "cmd": "engage", "arm": True, "setpoint": {
        "kind": "attitude", "w": 0.5, "x": 0, "y": 0, "z": 0, "thrust": 0.6}}),
     "setpoint_invalid"),
    (dumps({"v": 1, "id": "m10", "cmd": "emergency_stop"}), "confirmation_required"),
    (dumps({"v": 1, "id": "m11", "cmd": "release"}), "command_not_allowed"),  # engine: idle
]


async def test_retained_and_malformed_commands_never_reach_the_sim(mosquitto: Broker) -> None:
    async with observer(mosquitto.port) as pub:
        # a retained engage+arm left on the broker before the daemon starts
        await pub.publish(T.cmd, dumps({"v": 1, "id": "stale-engage", "cmd": "engage",
                                        "arm": True}), qos=1, retain=True)
        await pub.subscribe(T.reply, 1)
        async with stack(mosquitto) as s, s.client() as c:
            reply = body(await next_message(pub, T.reply, timeout_s=10))
            assert (reply["id"], reply["code"]) == ("stale-engage", "retained_refused")
            await fc_ready(c)
            for payload, code in MALFORMED:
                await pub.publish(T.cmd, payload, qos=1)
                reply = body(await next_message(pub, T.reply))
                assert (reply["ok"], reply["code"]) == (False, code), (payload[:60], reply)
            await asyncio.sleep(0.5)
            assert s.sim.record.setpoints == []
            assert s.sim.record.offboard_requests == []
            assert not s.sim.vehicle.armed
            assert c.state is not None and c.state["phase"] == "idle"
        await pub.publish(T.cmd, b"", qos=1, retain=True)


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_fly_replay_dropped_broker_restart_then_resume(
    mosquitto: Broker, protocol: str
) -> None:
    async with stack(mosquitto, protocol, hold_s=30.0) as s:
        async with s.client(protocol) as c:
            await fc_ready(c)
            assert (await c.engage(PositionNed(0, 0, -3), arm=True)).ok
            for _ in range(3):
                await c.setpoint(PositionNed(2, 0, -3))
            # a replayed setpoint from earlier in this session is dropped with a reply
            old = {"v": 1, "session": c.session, "seq": 1, "kind": "position_ned",
                   "north_m": -4, "east_m": 0, "down_m": -3}
            async with observer(mosquitto.port) as spy:
                await spy.subscribe(T.reply, 1)
                await spy.publish(T.setpoint, dumps(old))
                stale = body(await next_message(spy, T.reply,
                                                where=lambda m: b"setpoint_stale" in m.payload))
            assert stale["id"] == f"{c.session}:1"
            await s_wait(lambda: abs(s.north_m - 2) < 0.3, 15, "fly to north 2 m")
        # broker away mid-flight: the commander is gone with it, the lease lapses -> holding
        await asyncio.to_thread(mosquitto.stop)
        assert s.runtime.engine is not None
        engine = s.runtime.engine
        await s_wait(lambda: engine.phase.value == "holding", 5, "holding after lease lapse")
        await asyncio.to_thread(mosquitto.start)
        async with s.client(protocol) as c2:
            state = await c2.wait_for_state(lambda st: st["phase"] == "holding", timeout_s=10)
            assert state["armed"] is True  # re-published to the restarted broker
            assert state["resume_token"] == engine.resume_token is not None
            await c2.resume(PositionNed(0, 0, -3))  # quoting the token: a live commander
            await c2.wait_for_state(lambda st: st["phase"] == "active", timeout_s=10)
            await c2.land()
        assert s.runtime.bridge is not None and s.runtime.bridge.connect_count >= 2


async def test_another_clients_heartbeats_never_keep_a_dead_commander_flying(
    mosquitto: Broker,
) -> None:
    """Found by review: a mission client set 2 m/s north and died; a second client (a
    dashboard, a heartbeat loop) renewing the lease kept the vehicle flying it (16.5 m
    after 8 s). The lease is the commander's that flies it: the vehicle holds."""
    async with stack(mosquitto, hold_s=30.0) as s, s.client() as other:
        async with s.client() as mission:
            await fc_ready(mission)
            assert (await mission.engage(PositionNed(0, 0, -3), arm=True)).ok
            assert (await mission.setpoint_confirmed(VelocityNed(2.0, 0.0, 0.0))).ok
            other.keep_lease()  # heartbeats from now on, from another reply route
            await asyncio.sleep(0.5)
        assert s.runtime.engine is not None
        engine = s.runtime.engine
        loop = asyncio.get_running_loop()
        t_gone = loop.time()
        await s_wait(lambda: engine.phase.value == "holding", 3, "holding")
        assert loop.time() - t_gone < 2.0
        assert other.last_heartbeat_error is not None
        assert other.last_heartbeat_error.code == "not_in_control"


async def test_a_dead_commanders_backlog_never_resumes_from_holding(mosquitto: Broker) -> None:
    """Found by review: setpoints a bridge or a stalled network held back (same session,
    seq growing) arrived after their commander died and resumed flight from `holding`
    (4.65 m -> 6.9 m at 2.9 m/s). Now they are refused with the hold's token, which only
    a live commander can quote; one that does resumes."""
    async with stack(mosquitto, hold_s=30.0) as s:
        async with s.client() as mission:
            await fc_ready(mission)
            assert (await mission.engage(PositionNed(0, 0, -3), arm=True)).ok
            await s_wait(lambda: s.sim.vehicle.position_ned_m[2] < -2.5, 15, "up at 3 m")
            session, seq = mission.session, 100
        assert s.runtime.engine is not None  # the mission died without a word
        engine = s.runtime.engine
        await s_wait(lambda: engine.phase.value == "holding", 3, "holding")
        async with observer(mosquitto.port) as backlog:
            await backlog.subscribe(T.reply, 1)
            for _ in range(20):  # what the network held back arrives, in a burst
                seq += 1
                await backlog.publish(T.setpoint, dumps({
                    "v": 1, "session": session, "seq": seq, "kind": "velocity_ned",
                    "north_m_s": 3.0, "east_m_s": 0.0, "down_m_s": 0.0}))
            refused = body(await next_message(backlog, T.reply))
            await asyncio.sleep(1.0)
        assert refused["code"] == "not_in_control" and refused["resume"] == engine.resume_token
        assert engine.phase.value == "holding"
        assert engine.feed.setpoint is not None and engine.feed.setpoint.kind.value != (
            "velocity_ned")  # the hold streams on, never the backlog's 3 m/s
        assert abs(float(s.sim.vehicle.velocity_ned_m_s[0])) < 0.5
        async with s.client() as live:
            assert (await live.resume(PositionNed(1, 0, -3))).ok
            await s_wait(lambda: engine.phase.value == "active", 3, "resumed")
            await live.land()


@pytest.mark.parametrize("resume_with", ["setpoint", "goto"])
async def test_after_a_live_resume_the_dead_commanders_backlog_takes_nothing(
    mosquitto: Broker, resume_with: str,
) -> None:
    """Found by review: once a live commander resumed, the rest of the dead one's backlog
    (its reply route, its session, seq growing; a goto it had sent) was accepted in
    `active`, took the lease and flew 3 m/s north (5.1 m in 2 s). It is refused: the
    commander whose lease lapsed is gone until it quotes a hold's token itself."""
    async with stack(mosquitto, hold_s=30.0) as s:
        async with s.client() as mission:
            await fc_ready(mission)
            assert (await mission.engage(PositionNed(0, 0, -3), arm=True)).ok
            await s_wait(lambda: s.sim.vehicle.position_ned_m[2] < -2.5, 15, "up at 3 m")
            session, inbox = mission.session, mission._inbox
        assert s.runtime.engine is not None
        engine = s.runtime.engine
        await s_wait(lambda: engine.phase.value == "holding", 3, "holding")
        async with observer(mosquitto.port) as backlog, s.client() as live:
            if resume_with == "goto":
                await live.goto(PositionNed(0, 0, -3), speed_m_s=1.0, resume=True)
            else:
                assert (await live.resume(PositionNed(0, 0, -3))).ok
            assert engine.phase.value == "active"
            north0 = s.north_m
            for seq in range(100, 140):  # 2 s more of what the network held back
                await backlog.publish(T.setpoint, dumps({
                    "v": 1, "session": session, "seq": seq, "kind": "velocity_ned",
                    "north_m_s": 3.0, "east_m_s": 0.0, "down_m_s": 0.0}),
                    properties=request_properties(inbox, f"{session}:{seq}".encode()))
                await asyncio.sleep(0.05)
            await backlog.publish(T.cmd, dumps({
                "v": 1, "id": "old-goto", "cmd": "goto", "speed_m_s": 3.0,
                "target": {"kind": "position_ned", "north_m": 20, "east_m": 0, "down_m": -3}}),
                qos=1, properties=request_properties(inbox, b"old-goto"))
            await asyncio.sleep(1.0)
            assert engine.phase.value == "active" and engine.lease.holder == live._inbox
            assert abs(s.north_m - north0) < 0.5  # neither 3 m/s nor the old goto flown
            with pytest.raises(TimeoutError):  # the live commander never lost control
                await asyncio.wait_for(live.control_lost(), 0.5)
            await live.land()


async def s_wait(predicate: Any, timeout_s: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def readme_mosquitto_example(page: str = "README.md") -> str:
    """The README's mosquitto example block, exactly as printed there."""
    text = (REPO_ROOT / page).read_text()
    begin = text.index("<!-- mosquitto-example:begin")
    block = text[text.index("```sh\n", begin) + len("```sh\n"):]
    return block[: block.index("```")]


def test_the_api_docs_print_the_readmes_mosquitto_example() -> None:
    """docs/mqtt-api.md carries the same block; what is run here is what both print."""
    assert readme_mosquitto_example("docs/mqtt-api.md") == readme_mosquitto_example()


def _tools_at(broker: Broker, home: Path) -> dict[str, str]:
    """mosquitto_pub/sub/rr read default options from $XDG_CONFIG_HOME/<tool>: point them
    at the test broker so the script runs exactly as the docs print it."""
    for tool in ("mosquitto_pub", "mosquitto_sub", "mosquitto_rr"):
        (home / tool).write_text(f"-h 127.0.0.1\n-p {broker.port}\n")
    return {**os.environ, "XDG_CONFIG_HOME": str(home)}


def _group_alive(pgid: int) -> bool:
    """A live process (not a zombie: PID 1 may never reap orphans here) in the group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)"
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


async def test_docs_mosquitto_examples_fly_the_sim(mosquitto: Broker, tmp_path: Path) -> None:
    env = _tools_at(mosquitto, tmp_path)
    async with stack(mosquitto) as s, s.client() as c:
        await fc_ready(c)
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", readme_mosquitto_example(), env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err.decode()
        leg1, leg2, land_line = out.decode().splitlines()[-3:]
        assert abs(json.loads(leg1)["north_m"] - 5) < 0.5
        assert json.loads(leg2)["north_m"] > 6.5  # 3 s at 1 m/s north on the setpoint topic
        land = json.loads(land_line)
        assert (land["id"], land["ok"]) == ("l1", True)
        assert s.sim.record.changes_to("OFFBOARD") and s.sim.vehicle.mode_name == "AUTO.LAND"


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
async def test_docs_mosquitto_example_killed_mid_flight_leaves_the_vehicle_holding(
    mosquitto: Broker, tmp_path: Path, signum: int,
) -> None:
    """Found by review: the example's heartbeat loop (`mosquitto_pub -l &`, the mission's own
    identity) outlived a mission shell that died during its velocity leg, kept the lease,
    and the vehicle flew on north at 1 m/s for as long as the loop lived. The loop now lives
    only as long as the script: the vehicle holds, and nothing of the script is left."""
    env = _tools_at(mosquitto, tmp_path)
    async with stack(mosquitto, hold_s=30.0) as s, s.client() as c:
        await fc_ready(c)
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", readme_mosquitto_example(), env=env, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        try:
            await s_wait(lambda: s.sim.vehicle.velocity_ned_m_s[0] > 0.7, 40, "the 1 m/s leg")
            proc.send_signal(signum)  # the mission shell dies; what it started is orphaned
            await proc.wait()
            assert s.runtime.engine is not None
            engine = s.runtime.engine
            # the orphaned 3 s stream may still renew the lease, then it lapses
            await s_wait(lambda: engine.phase.value == "holding", 8, "holding")
            await s_wait(lambda: abs(s.sim.vehicle.velocity_ned_m_s[0]) < 0.3, 5, "stopped")
            await s_wait(lambda: not _group_alive(proc.pid), 5, "the script's processes gone")
            await asyncio.sleep(2.0)  # nobody renews the lease any more
            assert engine.phase.value == "holding"
            assert abs(float(s.sim.vehicle.velocity_ned_m_s[0])) < 0.3
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


async def test_ctl_watch_shows_state_telemetry_and_relay(mosquitto: Broker) -> None:
    async with stack(mosquitto):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "offboardd", "ctl", "--port", str(mosquitto.port),
            "--vehicle", VEHICLE, "watch", "--duration", "3",
            stdout=asyncio.subprocess.PIPE, cwd=REPO_ROOT)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    topics = {line.split(" ", 1)[0] for line in out.decode().splitlines()}
    assert {"state", "availability", "telemetry/position", "mavlink/SYS_STATUS"} <= topics
