"""The sim's battery as PX4 SIH main's (review, 2026-11-29: the sim sent 90 %, 16.2 V and
10 A throughout, so no low-battery logic could be tried against it): full (99 %, 16.2 V)
while disarmed; armed, drained over SIM_BAT_DRAIN (60 s) to SIM_BAT_MIN_PCT (50 %, 15.3 V)
and held; full again once disarmed; no current (PX4 SIH sends -1: `current_a` null)."""

from __future__ import annotations

from offboardd.sim import SimConfig
from offboardd.sim.telemetry import battery_status, sys_status
from offboardd.sim.vehicle import Vehicle


def _read(v: Vehicle, t: float) -> tuple[int, float, int]:
    status, system = battery_status(v, t), sys_status(v, t)
    assert status.battery_remaining == system.battery_remaining
    assert status.current_battery == -1 and system.current_battery == -1
    volts = sum(status.voltages[:4]) / 1000.0
    assert abs(system.voltage_battery / 1000.0 - volts) < 1e-9
    return status.battery_remaining, volts, status.voltages[4]


def test_the_battery_drains_while_armed_to_its_minimum_and_refills_disarmed() -> None:
    v = Vehicle(SimConfig(), 0.0)
    assert _read(v, 5.0)[:2] == (99, 16.2)
    assert v.commander.arm(10.0)
    assert _read(v, 10.0)[:2] == (99, 16.2)
    remaining, volts, _ = _read(v, 25.0)  # 15 s of 60: a quarter gone
    assert remaining == 74 and 15.7 < volts < 15.8
    assert _read(v, 200.0)[:2] == (50, 15.3)  # held at SIM_BAT_MIN_PCT
    v.commander.armed = False
    assert _read(v, 201.0)[:2] == (99, 16.2)
    v.params.set("SIM_BAT_MIN_PCT", 10.0)
    assert v.commander.arm(300.0)
    assert _read(v, 380.0)[0] == 10  # a lower minimum, as a low-battery test sets
