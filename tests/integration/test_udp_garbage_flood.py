"""Garbage flooding the daemon's udpin port (found by review): the port takes datagrams
from anyone who can reach it. 1 MB/s of crafted garbage ("FE 00" repeated: a MAVLink 1
HEARTBEAT header every two bytes, each once handed to pymavlink and refused with an
exception) held the control cycle so long that no setpoint reached the FC for 4.4 s and
PX4's loss action followed; random bytes of the same rate did nothing. The framer now
checks CRCs itself and a poll reads a bounded number of bytes."""

from __future__ import annotations

import asyncio
import itertools
import sys

import pytest

from tests.integration.harness import flight

pytestmark = pytest.mark.integration

FLOOD = r"""
import os, socket, sys, time
port, rate, kind = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = (b"\xfe\x00" if kind == "crafted" else os.urandom(2)) * 16000
t0 = time.monotonic(); sent = 0
while time.monotonic() - t0 < 2.0:
    if sent < (time.monotonic() - t0) * rate:
        s.sendto(payload, ("127.0.0.1", port)); sent += len(payload)
    else:
        time.sleep(0.002)
"""


@pytest.mark.parametrize("kind", ["random", "crafted"])
async def test_a_garbage_flood_does_not_stall_the_stream(kind: str) -> None:
    async with flight() as fl:
        await fl.takeoff(-3.0)
        port = fl.runtime.config.mavlink.url.address[1]
        base = len(fl.sim.record.setpoints)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FLOOD, str(port), "1000000", kind)
        await proc.wait()
        end_s = asyncio.get_running_loop().time()
        times = [s.time_s for s in fl.sim.record.setpoints[base - 1:]] + [end_s]
        worst_s = max(b - a for a, b in itertools.pairwise(times))
        assert worst_s < 0.3, f"{kind}: a {worst_s * 1000:.0f} ms gap in the stream"
        assert fl.phase == "active"
