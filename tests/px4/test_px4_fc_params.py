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
from pathlib import Path
from typing import Any

import pytest

from offboardd.client import CommandRefused
from offboardd.core.fc_link import RECHECK_S
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
    None: PX4's broadcast is best effort (2 s and none came; the daemon's re-read, every
    RECHECK_S, catches the change then)."""
    t0 = time.monotonic()
    s.gcs.param_set(name, value)

    def heard(r: Record) -> bool:
        return any(t >= t0 and n == name and abs(v - value) < 1e-6 for t, n, v in r.params)

    with contextlib.suppress(AssertionError):
        return round(await s.until(heard, 2.0, f"PARAM_VALUE {name}={value}") - t0, 3)
    return None


async def test_parameters_a_gcs_sets_in_flight_are_judged_again(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        c, r = s.client, s.record
        await s.take_off(ALT_M)
        assert _warned(c.state or {}, "COM_OBL_RC_ACT=0")  # PX4's default: a surprise
        heard_s: list[float | None] = [await _gcs_sets(s, "COM_OBL_RC_ACT", 5)]
        await c.wait_for_state(lambda st: st["com_obl_rc_act"] == "Hold"
                               and not _warned(st, "COM_OBL_RC_ACT"), RECHECK_S + 1)

        # 0.15 s: the 20 Hz stream's 0.05 s period is above a quarter of it
        heard_s.append(await _gcs_sets(s, "COM_OF_LOSS_T", 0.15))
        state = await c.wait_for_state(lambda st: _warned(st, "COM_OF_LOSS_T/4"), RECHECK_S + 1)
        assert state["phase"] == "active" and r.mode == OFFBOARD
        heard_s.append(await _gcs_sets(s, "COM_OF_LOSS_T", 1.0))
        await c.wait_for_state(lambda st: not _warned(st, "COM_OF_LOSS_T"), RECHECK_S + 1)

        # PX4 ignores our setpoints from now on: said at once, before PX4 falls back
        set_t = time.monotonic()
        heard_s.append(fwd_heard_s := await _gcs_sets(s, "MAV_FWDEXTSP", 0))
        await c.wait_for_state(lambda st: _warned(st, "MAV_FWDEXTSP=0"), RECHECK_S + 1)
        warned_t = time.monotonic()
        if fwd_heard_s is not None:  # PX4 broadcast it: said at once, before the fallback
            assert warned_t - set_t < 0.5, "the retained state said it late"
            assert [m for t, m in r.modes if set_t < t <= warned_t] == [], "said too late"
        loiter_t = await s.until(lambda rec: rec.mode == AUTO_LOITER, 3, "AUTO.LOITER")
        state = await c.wait_for_state(lambda st: st["phase"] == "preempted", 2)
        assert not state["streaming"]
        last_setpoint_t = r.setpoints[-1].t
        await _gcs_sets(s, "MAV_FWDEXTSP", 1)  # PX4 would take our setpoints again
        await c.wait_for_state(lambda st: not _warned(st, "MAV_FWDEXTSP"), RECHECK_S + 1)
        await asyncio.sleep(3.0)
        assert r.setpoints[-1].t == last_setpoint_t, "the daemon streamed on"
        assert [m for t, m in r.modes if t > loiter_t] == [], "control was taken back"
        assert [q for q in r.offboard_requests() if q.t > set_t] == []

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
        # PX4 kept OFFBOARD as the intended mode through its fallback, so the warm-up's
        # first setpoints took it back to OFFBOARD by itself (px4-offboard.md §3); with
        # forwarding off it falls back again, and nothing of ours follows
        await s.until(lambda rec: rec.mode == AUTO_LOITER, 3, "AUTO.LOITER again")
        assert [sp for sp in r.setpoints if sp.t > failed_t + 0.1] == []
        heard = [h for h in heard_s if h is not None]
        measured.update(param_value_on_our_link_s=max(heard) if heard else None,
                        param_value_never_broadcast=len(heard_s) - len(heard),
                        fwdextsp_0_warned_before_fallback_s=round(loiter_t - warned_t, 3),
                        fwdextsp_0_to_fallback_s=round(loiter_t - set_t, 3))
