"""A second MAVLink sender on the daemon's udpin port (found by review): a GCS heartbeating
to it, valid MAVLink but not the flight controller's, must not become the address the
setpoints go to. It did: at 50 Hz the sim got 18 of 100 setpoints in 5 s, at 200 Hz none,
and PX4's offboard-loss action followed."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Callable

import pytest

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.mavlink.codec import dialect as d
from tests.integration.harness import flight
from tests.mavlink.conftest import heartbeat

pytestmark = pytest.mark.integration

MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID = 6, 8


async def _heartbeat_from_a_gcs(port: int, seconds: float, rate_hz: float) -> int:
    """Heartbeat at the port; return how many datagrams came back."""
    mav = d.MAVLink(None, srcSystem=42, srcComponent=190)
    heartbeat = d.MAVLink_heartbeat_message(MAV_TYPE_GCS, MAV_AUTOPILOT_INVALID, 0, 0, 4, 3)
    return await _send_to_port(port, lambda: heartbeat.pack(mav), seconds, rate_hz)


async def _send_to_port(port: int, frame: Callable[[], bytes], seconds: float,
                        rate_hz: float) -> int:
    """Send `frame()` to the port at `rate_hz`; return how many datagrams came back."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        end, received = loop.time() + seconds, 0
        while loop.time() < end:
            sock.sendto(frame(), ("127.0.0.1", port))
            try:
                while True:
                    sock.recvfrom(65535)
                    received += 1
            except BlockingIOError:
                pass
            await asyncio.sleep(1 / rate_hz)
        return received


@pytest.mark.parametrize("fc_system_id", [0, 1])
async def test_a_gcs_heartbeating_to_the_daemons_port_never_gets_the_setpoints(
    fc_system_id: int,
) -> None:
    async with flight(mavlink={"fc_system_id": fc_system_id}) as fl:
        await fl.takeoff(-3.0)
        port = fl.runtime.config.mavlink.url.port
        assert port is not None
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        received = await _heartbeat_from_a_gcs(port, 2.0, 50.0)
        times = [s.time_s for s in fl.sim.record.valid_setpoints() if s.time_s >= t0]
        assert received == 0, "the daemon sent to the GCS"
        assert len(times) >= 35 and max(b - a for a, b in itertools.pairwise(times)) < 0.2
        assert fl.sim.vehicle.mode_name == "OFFBOARD" and fl.phase == "active"


async def test_a_camera_of_the_fcs_system_never_takes_the_setpoints() -> None:
    """Found by review: any frame whose system id was the FC's vouched for its sender, so a
    camera of system 1 heartbeating to the port from its own address at 50 Hz got the
    setpoints (12 of ~60 reached the sim in 3 s; at 200 Hz none, and the loss action)."""
    async with flight() as fl:
        await fl.takeoff(-3.0)
        port = fl.runtime.config.mavlink.url.address[1]
        camera = MavlinkCodec(1, 100)  # MAV_COMP_ID_CAMERA of system 1
        base = len(fl.sim.record.setpoints)
        received = await _send_to_port(port, lambda: heartbeat(camera, 1), 2.0, 50.0)
        assert received == 0
        assert len(fl.sim.record.setpoints) - base >= 35  # ~40 in 2 s at 20 Hz
