"""The daemon beside a PX4 that is still booting (the sim's boot_ready_s, PX4 SIH main's
timeline: tests/sim/boot_flight.py). An engage before the estimate is valid is refused
with a clear code and nothing armed; the engage sent as soon as the daemon reports the
FC ready (its estimate valid ~2 s in, arming possible only ~3 s in) takes off."""

from __future__ import annotations

from offboardd.core.commands import Engage
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import PositionNed

from .harness import flight


async def test_an_engage_during_px4s_boot_is_refused_then_flies_once_ready() -> None:
    async with flight(sim={"boot_ready_s": 3.0}) as fl:
        await fl.wait_for(lambda: fl.snapshot()["mav_fwdextsp"] is not None, 5.0, "FC params")
        assert not fl.snapshot()["estimates"]["local_position"]
        early = await fl.command(Engage(fl.next_id("e"), PositionNed(0, 0, -3.0), arm=True))
        assert not early.ok and early.reason == Reason.ESTIMATE_MISSING, early
        assert not fl.sim.vehicle.armed
        await fl.wait_fc_ready()
        # ready to engage while PX4 still refuses to arm: the race under test
        assert fl.sim.vehicle.booting(fl.sim.now())
        await fl.takeoff(-3.0)
        assert fl.sim.vehicle.armed and fl.sim.vehicle.mode_name == "OFFBOARD"
        fl.audit_setpoints()
