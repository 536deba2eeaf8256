"""Real PX4: the flight controller reboots (its process restarted) under the daemon."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.px4.tee import OFFBOARD

ALT_M = 3.0


async def test_fc_reboot_is_noticed_relearnt_and_never_reengaged_by_itself(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        c, r = s.client, s.record
        await s.take_off(ALT_M)
        px4.stop()  # PX4 gone in flight (a reboot, a brown-out)
        lost = await c.wait_for_state(lambda st: st["fc_link"] == "lost", 10)
        assert not lost["in_control"]
        stopped_t = r.setpoints[-1].t
        px4.start()  # same working directory: same parameters
        boot_s = await asyncio.to_thread(px4.wait_ready)
        back = await s.fc_ready(timeout_s=30)
        assert back["phase"] in ("idle", "preempted", "failsafe"), back["phase"]
        await asyncio.sleep(2.0)
        assert all(sp.t <= stopped_t for sp in r.setpoints), "streamed after the reboot unasked"
        await s.take_off(ALT_M)  # a new explicit engage
        assert r.mode == OFFBOARD
        measured.update(phase_after_reboot=back["phase"], reason=back["reason"],
                        px4_boot_s=round(boot_s, 1))
