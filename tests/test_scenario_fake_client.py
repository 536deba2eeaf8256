"""The runner's decisions against a fake client (no broker, no daemon): what it refuses
to start, what it says it waits for, and that a refused engage is never followed by a
landing request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from offboardd.client import CommandRefused, OffboardClient, Reply, ReplyTimeout, Watched
from offboardd.core.setpoints import Setpoint
from offboardd.mqtt.topics import Topics
from offboardd.scenario import MISSIONS, RunnerSettings, ScenarioRunner

READY = {"phase": "idle", "fc_link": "up", "com_of_loss_t_s": 1.0, "armed": False,
         "landed_state": "on_ground", "estimates": {"local_position": True}}
FAST = RunnerSettings(tick_s=0.01, ready_timeout_s=1.0)


class FakeClient:
    """What the runner uses of OffboardClient; state and position are set by the test."""

    def __init__(self, state: dict[str, Any], *, engage_ok: bool = True) -> None:
        self.topics = Topics.for_vehicle("fake")
        self.state: dict[str, Any] | None = state
        self.engage_ok = engage_ok
        self.sent: list[str] = []

    async def wait_for_state(self, predicate: Callable[[dict[str, Any]], bool],
                             timeout_s: float) -> dict[str, Any]:
        if self.state is None or not predicate(self.state):
            raise ReplyTimeout(f"state did not match within {timeout_s} s")
        return self.state

    async def watch(self, filters: Sequence[str] | None = None) -> AsyncIterator[Watched]:
        topic = self.topics.telemetry("position")
        payload = json.dumps({"north_m": 0.0, "east_m": 0.0, "down_m": 0.0}).encode()
        while True:
            yield Watched(topic, "telemetry/position", payload, False)
            await asyncio.sleep(0.01)

    async def engage(self, setpoint: Setpoint | None = None, *, arm: bool = False) -> Reply:
        self.sent.append("engage")
        if not self.engage_ok:
            raise CommandRefused(Reply("1", False, "fc_refused", "MAV_FWDEXTSP=0: set it to 1"))
        return Reply("1", True, None, "engaged")

    async def land(self) -> Reply:
        self.sent.append("land")
        return Reply("2", True, None, "landing")


def _runner(client: FakeClient) -> ScenarioRunner:
    return ScenarioRunner(client, MISSIONS["short"], settings=FAST)  # type: ignore[arg-type]


async def test_a_refused_engage_fails_the_mission_without_a_landing_request() -> None:
    client = FakeClient(dict(READY), engage_ok=False)
    summary = await _runner(client).run()
    assert not summary.ok and "MAV_FWDEXTSP" in (summary.failure or "")
    assert client.sent == ["engage"], "nothing to land: the vehicle never left idle"
    assert [(leg.name, leg.ok) for leg in summary.legs] == [("takeoff", False)]


async def test_it_will_not_start_in_the_air_or_beside_another_commander() -> None:
    for state, words in [({**READY, "armed": True, "landed_state": "in_air"}, "on the ground"),
                         ({**READY, "phase": "active"}, "busy")]:
        client = FakeClient(state)
        summary = await _runner(client).run()
        assert not summary.ok and words in (summary.failure or ""), summary.failure
        assert client.sent == [] and summary.legs == ()


async def test_not_ready_says_what_it_still_waits_for() -> None:
    # EXTENDED_SYS_STATE not heard yet: "undefined" is not "on the ground"
    client = FakeClient({**READY, "landed_state": "undefined", "estimates": {}})
    summary = await _runner(client).run()
    assert summary.failure == ("the daemon is not ready to fly after 1 s; still waiting for "
                               "a local position estimate, its landed state")
    client = FakeClient({})
    client.state = None  # no daemon publishing under this vehicle id
    summary = await _runner(client).run()
    assert "no state from the daemon" in (summary.failure or "") and client.sent == []


def test_the_fake_offers_what_the_runner_uses() -> None:
    used = {"topics", "state", "wait_for_state", "watch", "engage", "land"}
    assert used <= set(dir(OffboardClient)) | {"topics", "state"}
    assert used <= set(dir(FakeClient(READY))) | {"topics", "state"}
