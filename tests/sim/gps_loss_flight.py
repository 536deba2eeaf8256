"""A GNSS cut while the daemon flies, judged the same way on real PX4 SIH
(tests/px4/test_px4_gps_loss.py, MAV_CMD_INJECT_FAILURE) and on the sim with the daemon and
a real broker (tests/sim/test_gps_loss.py, its `gps_off` fault): a differential test.

Hovering in OFFBOARD at ALT_M, the GNSS is cut; BACK_S later it comes back. What must follow,
on either vehicle: PX4 flies on for EKF2_NOAID_TOUT (5 s) on dead reckoning, then drops its
horizontal estimate and leaves OFFBOARD for Descend (AUTO.DESCEND on main); the daemon
streams until that report and never after, asks for nothing, and is `preempted`; its state
says the position estimate is gone although LOCAL_POSITION_NED goes on coming (PX4 #20389:
PX4 sends it whether the estimate is valid or not), and an engage is refused for the
estimate. Once the fix is back PX4's estimate follows, the daemon says so, and PX4 takes its
offboard-loss action (Return, without RC) by itself: the daemon, preempted, stays out of it.

[SITL main 2026-11-29] five runs: Descend 5.16-5.32 s after the cut, the last setpoint
0.01-0.03 s before that report, LOCAL_POSITION_NED 29.0-29.5/s before the cut and
29.4-29.7/s without the estimate, telemetry/position published on with `local_valid`
false; an engage refused `estimate_missing`; the fix back 6.5 s after the cut (three runs):
the daemon had the estimate again 0.76-0.88 s later; 8 s after (two runs, as now): 2.29-2.30
s later; PX4 took Return. The sim (its `gps_off` fault, PX4 main played), five runs:
Descend 5.04-5.05 s, LOCAL_POSITION_NED 5.0/s before and after (its light profile; no
stream plan in that stack), the estimate back in the daemon's state 1.96-2.06 s after the
fix (0.8 s, then ESTIMATOR_STATUS and the state once a second each), Return 1 s after
the estimate (PX4 commander's probation; PX4 main ~1.1 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from typing import Any

import aiomqtt

from offboardd.client import CommandRefused, OffboardClient
from offboardd.mqtt.topics import Topics

ALT_M = 5.0
BACK_S = 8.0  # the fix back, s after the cut: during the Descend, ~3 m up
NOAID_S = 5.0  # EKF2_NOAID_TOUT


def position_rates(positions_s: list[float], left_offboard_s: float | None
                   ) -> dict[str, float]:  # fmt: skip
    """LOCAL_POSITION_NED a second before the cut and without the estimate (from PX4's
    report of Descend to the fix back), from their arrival times in s from the cut."""
    end_s = BACK_S if left_offboard_s is None else left_offboard_s
    without = [t for t in positions_s if end_s < t < BACK_S]
    return {"positions_per_s_before": len([t for t in positions_s if -2.0 < t < 0.0]) / 2.0,
            "positions_per_s_without_estimate": len(without) / max(BACK_S - end_s, 1e-3)}


@contextlib.asynccontextmanager
async def published_positions(broker_port: int, vehicle_id: str
                              ) -> AsyncIterator[list[tuple[float, dict[str, Any]]]]:
    """The daemon's telemetry/position documents as they come: (loop time, document)."""
    loop = asyncio.get_running_loop()
    seen: list[tuple[float, dict[str, Any]]] = []

    async def read(client: aiomqtt.Client) -> None:
        async for message in client.messages:
            seen.append((loop.time(), json.loads(bytes(message.payload))))

    async with aiomqtt.Client("127.0.0.1", broker_port) as client:
        await client.subscribe(Topics.for_vehicle(vehicle_id).telemetry("position"))
        reader = asyncio.create_task(read(client))
        try:
            yield seen
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def published_validity(positions: list[tuple[float, dict[str, Any]]], cut_t: float,
                       left_offboard_s: float | None) -> dict[str, list[bool]]:
    """`local_valid` of the published positions before the cut and without the estimate
    (from PX4's report of Descend to the fix back)."""
    end_s = BACK_S if left_offboard_s is None else left_offboard_s
    return {
        "published_valid_before": [bool(d.get("local_valid")) for t, d in positions
                                   if -2.0 < t - cut_t < 0.0],
        # (not the first 1.5 s: ESTIMATOR_STATUS may come a second after PX4's report)
        "published_valid_without_estimate": [bool(d.get("local_valid")) for t, d in positions
                                             if end_s + 1.5 < t - cut_t < BACK_S],
    }


@dataclass(frozen=True)
class DaemonSide:
    """What the daemon said through MQTT, times in s from the cut."""

    estimate_lost_seen: bool
    engage_refused: str
    at_fix: dict[str, Any]  # its state when the fix came back
    estimate_back_s: float | None
    phase_after_fix: str


async def fly_the_cut(client: OffboardClient, cut: Callable[[], None],
                      restore: Callable[[], None]) -> tuple[float, DaemonSide]:
    """Cut the GNSS now, watch the daemon's state, try an engage once it has no estimate,
    give the fix back at BACK_S and watch 6 s more. Returns the cut's loop time."""
    loop = asyncio.get_running_loop()
    cut_t = loop.time()
    cut()
    lost, refused, back_s, at_fix = False, "", None, None
    while (now_s := loop.time() - cut_t) < BACK_S + 6.0:
        await asyncio.sleep(0.1)
        state = client.state or {}
        local = bool(state.get("estimates", {}).get("local_position"))
        if at_fix is None:
            if not local and state.get("phase") == "preempted":
                lost = True
                if not refused:
                    refused = await _engage_refused(client)
            if now_s >= BACK_S:
                at_fix = dict(state)
                restore()
        elif local and back_s is None:
            back_s = now_s
    final = client.state or {}
    return cut_t, DaemonSide(lost, refused, at_fix or {}, back_s, str(final.get("phase")))


async def _engage_refused(client: OffboardClient) -> str:
    try:
        await client.engage(None)  # hold here: the daemon has no "here"
    except CommandRefused as refused:
        return str(refused.reply.extra.get("reason"))
    return "accepted"


@dataclass(frozen=True)
class GpsLossSeen:
    """What a run saw, times in s from the cut."""

    left_offboard_s: float | None  # the first report of another mode
    modes_after: list[str]  # mode changes reported after the cut (labels)
    last_setpoint_s: float  # the last setpoint the daemon sent
    offboard_requests_after: int
    positions_per_s_before: float  # LOCAL_POSITION_NED in the 2 s before the cut
    positions_per_s_without_estimate: float  # ...from Descend to the fix
    # telemetry/position's local_valid as the daemon published it, before and without
    published_valid_before: list[bool]
    published_valid_without_estimate: list[bool]
    phase: str  # the daemon's state when the fix came back
    reason: str
    streaming: bool
    estimate_lost_seen: bool  # the daemon's state said local_position false before the fix
    engage_refused: str  # an engage while the estimate is gone: the reason
    estimate_back_s: float | None  # the daemon's state said local_position true again
    phase_after_fix: str

    @classmethod
    def of(cls, daemon: DaemonSide, **vehicle: Any) -> GpsLossSeen:
        at_fix = daemon.at_fix
        return cls(phase=str(at_fix.get("phase")), reason=str(at_fix.get("reason")),
                   streaming=bool(at_fix.get("streaming")),
                   estimate_lost_seen=daemon.estimate_lost_seen,
                   engage_refused=daemon.engage_refused,
                   estimate_back_s=daemon.estimate_back_s,
                   phase_after_fix=daemon.phase_after_fix, **vehicle)

    def figures(self) -> dict[str, object]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, float):
                out[key] = round(value, 3)
            elif key.startswith("published_valid"):  # a count of each, not the list
                out[key] = {"true": sum(value), "false": len(value) - sum(value)}
        return out


def check_gps_loss(seen: GpsLossSeen, *, descend: str, loss_action: str | None) -> None:
    """`loss_action`: the mode PX4 takes once its estimate is back (None: not judged)."""
    figures = seen.figures()
    assert seen.left_offboard_s is not None, figures
    assert NOAID_S - 0.2 < seen.left_offboard_s < NOAID_S + 1.0, figures
    assert seen.modes_after[:1] == [descend], figures
    if loss_action is not None:
        assert seen.modes_after[1:2] == [loss_action], figures
    # the stream stops at the report: its last setpoint before it (a tick's slack)
    assert seen.last_setpoint_s < seen.left_offboard_s + 0.1, figures
    assert seen.offboard_requests_after == 0, figures
    # PX4 streams it whether its estimate is valid or not
    assert seen.positions_per_s_before > 4.0, figures
    assert (seen.positions_per_s_without_estimate
            > 0.8 * seen.positions_per_s_before), figures
    assert seen.estimate_lost_seen, figures
    # the position goes on being published, and says it does not count
    assert seen.published_valid_before and all(seen.published_valid_before), figures
    assert (seen.published_valid_without_estimate
            and not any(seen.published_valid_without_estimate)), figures
    assert seen.engage_refused == "estimate_missing", figures
    assert (seen.phase, seen.reason, seen.streaming) == ("preempted", "preempted_mode",
                                                         False), figures
    # the fix back at BACK_S, the estimate ~2 s later (PX4, after an 8 s cut), then
    # ESTIMATOR_STATUS (1-2/s) and the daemon's state (1/s)
    assert seen.estimate_back_s is not None and seen.estimate_back_s < BACK_S + 4.5, figures
    assert seen.phase_after_fix == "preempted", figures
