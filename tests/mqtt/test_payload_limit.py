"""Oversized payloads never reach the daemon's memory: with MQTT 5 it announces a Maximum
Packet Size in CONNECT (four times max_payload_bytes plus headers), so the broker drops a
10 MB "command" instead of delivering it, while one a few times too large is answered.
Measured on the daemon as a process (`offboardd run`) with a real mosquitto: its RSS after
the attack stays within 2 MB of before."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiomqtt
import pytest

from offboardd.client import OffboardClient
from offboardd.core.commands import Hold
from offboardd.mqtt.connection import max_packet_bytes
from offboardd.mqtt.settings import MqttSettings
from offboardd.mqtt.topics import Topics
from tests.conftest import Broker, free_port

pytestmark = pytest.mark.integration


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_max_packet_size_follows_max_payload_bytes() -> None:
    assert max_packet_bytes(4096) == 4 * 4096 + 1024


def test_the_secure_broker_config_keeps_the_same_limit() -> None:
    conf = (Path(__file__).resolve().parents[2] / "config" / "mosquitto-secure.conf").read_text()
    (line,) = [ln for ln in conf.splitlines() if ln.startswith("message_size_limit ")]
    assert int(line.split()[1]) == max_packet_bytes(MqttSettings().max_payload_bytes)


async def test_a_10_mb_command_is_dropped_by_the_broker_not_read_by_the_daemon(
    mosquitto: Broker, tmp_path: Path
) -> None:
    config = tmp_path / "offboardd.toml"
    config.write_text(f'[mavlink]\nurl = "udpin://127.0.0.1:{free_port()}"\n'
                      f'signing_timestamp_file = ""\n'
                      f'[mqtt]\nhost = "127.0.0.1"\nport = {mosquitto.port}\nvehicle_id = "big"\n')
    daemon = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "offboardd", "run", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    topics = Topics.for_vehicle("big")
    try:
        async with OffboardClient("127.0.0.1", mosquitto.port, "big") as c:
            await c.wait_for_state(lambda s: s.get("phase") == "idle", 15)
            assert (await c.send(Hold(c.new_command_id()), check=False)).code  # it answers
            await asyncio.sleep(1.0)
            before_kb = rss_kb(daemon.pid)
            async with aiomqtt.Client("127.0.0.1", mosquitto.port,
                                      protocol=aiomqtt.ProtocolVersion.V5) as attacker:
                await attacker.subscribe(topics.reply, 1)
                big = json.dumps({"v": 1, "id": "big", "cmd": "hold",
                                  "pad": "x" * 10_000_000}).encode()
                for _ in range(3):
                    await attacker.publish(topics.cmd, big, qos=1)
                replies = []
                with pytest.raises(TimeoutError):  # never delivered, so never answered
                    async with asyncio.timeout(2.0):
                        async for message in attacker.messages:
                            replies.append(json.loads(bytes(message.payload)))
                assert not [r for r in replies if r.get("code") == "payload_too_large"], replies
                mid = json.dumps({"v": 1, "id": "mid", "cmd": "hold",
                                  "pad": "x" * 100_000}).encode()  # 3 x the limit
                await attacker.publish(topics.cmd, mid, qos=1)
                async with asyncio.timeout(5.0):
                    async for message in attacker.messages:
                        answer = json.loads(bytes(message.payload))
                        break
                assert answer["code"] == "payload_too_large", answer  # (never read: no id)
            mid_doc = {"cmd": "hold", "pad": "x" * 100_000}
            reply = await c.send_document(mid_doc)  # matched by its correlation data
            assert reply.code == "payload_too_large" and reply.id is not None
            assert (await c.send(Hold(c.new_command_id()), check=False)).code  # still serving
            after_kb = rss_kb(daemon.pid)
            assert after_kb - before_kb < 2048, (before_kb, after_kb)
    finally:
        daemon.terminate()
        await asyncio.wait_for(daemon.wait(), 15)
