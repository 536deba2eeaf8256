"""Real PX4: parameters a GCS sets while the daemon flies.

PX4 sends the new PARAM_VALUE to every link when a parameter changes, so the daemon hears a
GCS's PARAM_SET on its own link and judges again: the state's loss action and warnings
follow, MAV_FWDEXTSP=0 and a COM_OF_LOSS_T too short for the stream are said while PX4
still flies OFFBOARD, and a warm-up they spoil never asks for OFFBOARD. The daemon never
fights: when PX4 falls back (it ignores our setpoints at MAV_FWDEXTSP=0) it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from offboardd.client import CommandRefused
from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import Stack, flying_stack
from tests.px4.tee import AUTO_LOITER, OFFBOARD, Record

ALT_M = 5.0


def _warned(state: dict[str, Any], text: str) -> bool:
    return any(text in w for w in state["warnings"])


async def _gcs_sets(s: Stack, name: str, value: int | float) -> float | None:
    """The GCS's PARAM_SET; how long PX4's PARAM_VALUE took to reach the daemon's link, or
    None: PX4's broadcast is best effort (2 s and none came: on main, 1 in 5 here)."""
    t0 = time.monotonic()
    s.gcs.param_set(name, value)

    def heard(r: Record) -> bool:
        return any(t >= t0 and n == name and abs(v - value) < 1e-6 for t, n, v in r.params)

    with contextlib.suppress(AssertionError):
        return round(await s.until(heard, 2.0, f"PARAM_VALUE {name}={value}") - t0, 3)
    return None


async def _judged(s: Stack, name: str, value: int | float,
                  state_says: Callable[[dict[str, Any]], bool]) -> float | None:
    """Set by the GCS; when PX4 told the daemon's link, the state says so within 1 s."""
    heard_s = await _gcs_sets(s, name, value)
    if heard_s is not None:
        await s.client.wait_for_state(state_says, 1.0)
    return heard_s


async def test_parameters_a_gcs_sets_in_flight_are_judged_again(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        c, r = s.client, s.record
        await s.take_off(ALT_M)
        assert _warned(c.state or {}, "COM_OBL_RC_ACT=0")  # PX4's default: a surprise
        heard_s = [await _judged(s, "COM_OBL_RC_ACT", 5, lambda st: st["com_obl_rc_act"]
                                 == "Hold" and not _warned(st, "COM_OBL_RC_ACT"))]

        # 0.15 s: the 20 Hz stream's 0.05 s period is above a quarter of it
        heard_s.append(await _judged(s, "COM_OF_LOSS_T", 0.15,
                                     lambda st: _warned(st, "COM_OF_LOSS_T/4")))
        assert (c.state or {})["phase"] == "active" and r.mode == OFFBOARD
        heard_s.append(await _judged(s, "COM_OF_LOSS_T", 1.0,
                                     lambda st: not _warned(st, "COM_OF_LOSS_T")))

        # PX4 ignores our setpoints from now on: said as soon as PX4 tells (within 1 s of
        # its PARAM_VALUE: _judged), which is before PX4 falls back when it tells at once
        set_t = time.monotonic()
        heard_s.append(await _judged(s, "MAV_FWDEXTSP", 0,
                                     lambda st: _warned(st, "MAV_FWDEXTSP=0")))
        warned_t = time.monotonic()
        loiter_t = await s.until(lambda rec: rec.mode == AUTO_LOITER, 3, "AUTO.LOITER")
        state = await c.wait_for_state(lambda st: st["phase"] == "preempted", 2)
        assert not state["streaming"]
        last_setpoint_t = r.setpoints[-1].t
        await _judged(s, "MAV_FWDEXTSP", 1,  # PX4 would take our setpoints again
                      lambda st: not _warned(st, "MAV_FWDEXTSP"))
        await asyncio.sleep(3.0)
        assert r.setpoints[-1].t == last_setpoint_t, "the daemon streamed on"
        assert [m for t, m in r.modes if t > loiter_t] == [], "control was taken back"
        assert [q for q in r.offboard_requests() if q.t > set_t] == []

        # An engage reads the gate's parameters again: what PX4 never broadcast (on all
        # three releases, COM_OF_LOSS_T set back to 1.0 right after 0.15) costs at most
        # one refusal, and the next engage flies
        refused = []
        for _ in range(2):
            try:
                assert (await c.engage(PositionNed(0.0, 0.0, -ALT_M))).ok
                break
            except CommandRefused as exc:
                refused.append(exc.reply.message)
                await asyncio.sleep(0.3)
        assert len(refused) <= 1, refused
        await s.in_offboard()
        assert (await c.release()).ok
        await c.wait_for_state(lambda st: st["phase"] == "idle", 5)

        # a warm-up spoilt by the GCS: OFFBOARD is never asked for
        engage_t = time.monotonic()
        engage = asyncio.create_task(c.engage(PositionNed(0.0, 0.0, -ALT_M)))
        await asyncio.sleep(0.3)
        warmup_heard_s = await _gcs_sets(s, "MAV_FWDEXTSP", 0)
        assert warmup_heard_s is not None, "PX4 did not broadcast it: no case for the warm-up"
        with pytest.raises(CommandRefused, match="MAV_FWDEXTSP=0"):
            await engage
        failed_t = time.monotonic()
        assert [q for q in r.offboard_requests() if q.t > engage_t] == []
        await asyncio.sleep(1.0)
        assert [sp for sp in r.setpoints if sp.t > failed_t + 0.1] == []
        assert r.mode == AUTO_LOITER  # where the release left it
        heard = [h for h in heard_s if h is not None]
        measured.update(param_value_on_our_link_s=max(heard) if heard else None,
                        param_value_never_broadcast=len(heard_s) - len(heard),
                        engage_refused_on_a_stale_value=refused,
                        fwdextsp_0_warned_before_fallback_s=None if heard_s[3] is None
                        else round(loiter_t - warned_t, 3),
                        fwdextsp_0_to_fallback_s=round(loiter_t - set_t, 3))
