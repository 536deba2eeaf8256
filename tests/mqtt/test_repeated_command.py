"""A command delivered twice while its first delivery awaits its outcome (QoS 1 delivers
at least once; a client retries) gets one reply, the outcome. An engage repeated in its
warm-up was answered refused (phase_not_allowed), then ok: a client matching replies by id
read "engage failed" while the vehicle armed and climbed (review, 2026-11-29). Real
runtime, bridge, mosquitto and sim."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.conftest import Broker
from tests.mqtt.helpers import dumps, observer
from tests.mqtt.test_e2e_sim import T, fc_ready, stack

pytestmark = pytest.mark.integration

ENGAGE = {"v": 1, "id": "E9", "cmd": "engage", "arm": True,
          "setpoint": {"kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -3}}
# as offboardd.client sends it: with its session and seq (the replay guard's), which once
# made the copy `setpoint_stale` before the repeat rule saw it (review, 2026-11-29)
SEQUENCED = {**ENGAGE, "session": "c0ffee", "seq": 1}
ENGAGES = pytest.mark.parametrize("engage", [ENGAGE, SEQUENCED], ids=["plain", "sequenced"])


@ENGAGES
async def test_an_engage_delivered_twice_in_its_warm_up_gets_one_reply(
        mosquitto: Broker, engage: dict[str, object]) -> None:
    async with stack(mosquitto) as st, st.client() as c, observer(mosquitto.port) as o:
        await fc_ready(c)
        await o.subscribe(T.reply, 1)

        async def lease() -> None:  # the same route as the engage: the shared reply topic
            for i in range(1000):
                await o.publish(T.cmd, dumps({"v": 1, "id": f"hb{i}", "cmd": "heartbeat",
                                              "ack": False}))
                await asyncio.sleep(0.2)

        heartbeats = asyncio.create_task(lease())
        try:
            await o.publish(T.cmd, dumps(engage), qos=1)
            await asyncio.sleep(0.3)
            await o.publish(T.cmd, dumps(engage), qos=1)  # the same, again: a retry
            replies = []
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(8.0):
                    async for message in o.messages:
                        reply = json.loads(bytes(message.payload))
                        if reply.get("id") == "E9":
                            replies.append(reply)
            state = await c.wait_for_state(lambda s: s["phase"] == "active", timeout_s=5)
        finally:
            heartbeats.cancel()
    assert [(r["ok"], r["reason"]) for r in replies] == [(True, "engaged")], replies
    assert state["armed"]


@ENGAGES
async def test_an_engage_that_succeeded_is_answered_again_and_does_not_act_twice(
        mosquitto: Broker, engage: dict[str, object]) -> None:
    """A copy of an engage delivered after its reply (a retry whose reply was lost, a late
    copy): the same reply again, marked `repeat`, and the vehicle is left alone (before, it
    was refused phase_not_allowed). A stop is never answered from memory: it acts again."""
    release = {"v": 1, "id": "R9", "cmd": "release"}
    async with stack(mosquitto) as st, st.client() as c, observer(mosquitto.port) as o:
        await fc_ready(c)
        await o.subscribe(T.reply, 1)

        async def lease() -> None:
            for i in range(1000):
                await o.publish(T.cmd, dumps({"v": 1, "id": f"hb{i}", "cmd": "heartbeat",
                                              "ack": False}))
                await asyncio.sleep(0.2)

        async def reply_to(command_id: str) -> dict[str, object]:
            async with asyncio.timeout(10.0):
                async for message in o.messages:
                    reply: dict[str, object] = json.loads(bytes(message.payload))
                    if reply.get("id") == command_id:
                        return reply
            raise AssertionError("unreachable")

        heartbeats = asyncio.create_task(lease())
        try:
            await o.publish(T.cmd, dumps(engage), qos=1)
            first = await reply_to("E9")
            await o.publish(T.cmd, dumps(engage), qos=1)  # the late copy
            again = await reply_to("E9")
            state = await c.wait_for_state(lambda s: s["phase"] == "active", timeout_s=5)
            await o.publish(T.cmd, dumps(release), qos=1)
            released = await reply_to("R9")
            await o.publish(T.cmd, dumps(release), qos=1)
            released_again = await reply_to("R9")
        finally:
            heartbeats.cancel()
    assert (first["ok"], first["reason"], "repeat" in first) == (True, "engaged", False)
    assert again == {**first, "repeat": True}
    assert state["armed"]
    assert released["ok"] and "repeat" not in released
    assert (released_again["ok"], released_again["reason"]) == (False, "phase_not_allowed")
