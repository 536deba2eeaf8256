"""A GNSS cut in flight on the sim, end to end (the daemon's runtime, a real mosquitto, the
sim over real UDP), judged by the checks the real-PX4 tier uses
(tests/sim/gps_loss_flight.py, tests/px4/test_px4_gps_loss.py)."""

from __future__ import annotations

import asyncio

import pytest

from offboardd.core.setpoints import PositionNed
from offboardd.mavlink.codec import Message
from offboardd.sim import telemetry
from offboardd.sim.vehicle import Vehicle
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.test_e2e_sim import VEHICLE, fc_ready, stack
from tests.sim.gps_loss_flight import (
    ALT_M,
    GpsLossSeen,
    check_gps_loss,
    fly_the_cut,
    position_rates,
    published_positions,
    published_validity,
)

pytestmark = pytest.mark.integration


async def test_a_gnss_cut_in_flight_hands_the_vehicle_to_px4s_descend(
    mosquitto: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    positions_t: list[float] = []
    build = telemetry.BUILDERS["LOCAL_POSITION_NED"]

    def counted(v: Vehicle, now_s: float) -> Message | None:
        positions_t.append(loop.time())
        return build(v, now_s)

    monkeypatch.setitem(telemetry.BUILDERS, "LOCAL_POSITION_NED", counted)
    shown: list[tuple[float, str]] = []  # what the sim reports (Descend, not its Land)

    async def watch_modes(vehicle: Vehicle) -> None:
        while True:
            if not shown or shown[-1][1] != vehicle.shown_mode.name:
                shown.append((loop.time(), vehicle.shown_mode.name))
            await asyncio.sleep(0.01)

    # px4_version "main": the tier's PX4
    async with stack(mosquitto, px4_version="main") as s, s.client() as c, \
            published_positions(mosquitto.port, VEHICLE) as published:
        await fc_ready(c)
        assert (await c.engage(PositionNed(0.0, 0.0, -ALT_M), arm=True)).ok
        vehicle, record = s.sim.vehicle, s.sim.record
        await wait_until(lambda: abs(-vehicle.position_ned_m[2] - ALT_M) < 0.4, "up", 20)
        watcher = asyncio.create_task(watch_modes(vehicle))
        await asyncio.sleep(1.0)
        cut_t, daemon = await fly_the_cut(c, lambda: s.sim.set_gnss(False),
                                          lambda: s.sim.set_gnss(True))
        watcher.cancel()
        modes = [(t - cut_t, m) for t, m in shown if t > cut_t]
        left_s = modes[0][0] if modes else None
        seen = GpsLossSeen.of(
            daemon, left_offboard_s=left_s, modes_after=[m for _, m in modes],
            last_setpoint_s=record.setpoints[-1].time_s - cut_t,
            offboard_requests_after=len([t for t in record.offboard_requests if t > cut_t]),
            **position_rates([t - cut_t for t in positions_t], left_s),
            **published_validity(published, cut_t, left_s))
    check_gps_loss(seen, descend="AUTO.DESCEND", loss_action="AUTO.RTL")
