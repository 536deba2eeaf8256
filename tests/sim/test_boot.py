"""The sim boots as PX4 SIH does (SimConfig.boot_ready_s): UNINIT and arming refused for
~3 s, the estimate valid after ~2 s, the global position after ~1.5 s; judged by the
checks the real-PX4 tier uses (tests/sim/boot_flight.py, tests/px4/test_px4_boot.py)."""

from __future__ import annotations

from offboardd.sim import SimServer
from offboardd.sim.telemetry import estimator_status, global_position_int, heartbeat
from offboardd.sim.vehicle import Vehicle
from tests.sim.boot_flight import HORIZ, check_boot, watch_boot
from tests.sim.client import Peer, d, sim_config
from tests.sim.test_model import Harness


async def test_the_sim_boots_over_udp_as_px4_does() -> None:
    async with SimServer(sim_config(boot_ready_s=3.0)) as sim:
        assert sim.udp_port is not None
        peer = await Peer.connect(sim.udp_port)
        try:
            seen = await watch_boot(peer)
        finally:
            peer.close()
    check_boot(seen)


def _timeline(v: Vehicle, t: float) -> tuple[int, bool, bool]:
    flags = int(estimator_status(v, t).flags)
    return (int(heartbeat(v, t).system_status), flags & HORIZ == HORIZ,
            global_position_int(v, t) is not None)  # fmt: skip


def test_a_reboot_boots_again_and_zero_is_ready_at_once() -> None:
    h = Harness(boot_ready_s=3.0)
    assert _timeline(h.v, 0.1) == (d.MAV_STATE_UNINIT, False, False)
    assert _timeline(h.v, 1.6) == (d.MAV_STATE_UNINIT, False, True)
    assert _timeline(h.v, 2.1) == (d.MAV_STATE_UNINIT, True, True)
    h.run(3.1)
    assert _timeline(h.v, h.t) == (d.MAV_STATE_STANDBY, True, True)
    h.v.reboot(h.t)
    assert _timeline(h.v, h.t + 0.1) == (d.MAV_STATE_UNINIT, False, False)
    h.command(d.MAV_CMD_COMPONENT_ARM_DISARM, 1)
    assert not h.v.armed
    quick = Harness()  # the tests' QUICK_BOOT
    assert _timeline(quick.v, 0.0) == (d.MAV_STATE_STANDBY, True, True)
