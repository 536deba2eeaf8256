"""A UART at the wrong baud rate, over a real pty: bytes come, no frame checks out. The
link opens ("up") and the FC is never heard; the daemon said nothing of it (review,
2026-11-29). Now it warns once, and a refused engage says why."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator

import pytest
import structlog

from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.commands import Engage
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import PositionNed
from offboardd.mavlink.links.url import parse_link_url
from tests.integration.harness import serving

pytestmark = pytest.mark.integration


@pytest.fixture
def noisy_pty() -> Iterator[tuple[int, str]]:
    master, slave = os.openpty()
    try:
        yield master, os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)


async def test_bytes_without_mavlink_are_named_as_a_baud_rate_problem(
        noisy_pty: tuple[int, str]) -> None:
    master, path = noisy_pty
    rng = random.Random(7)
    config = DaemonConfig(mavlink=MavlinkSettings(url=parse_link_url(f"serial://{path}:57600")))

    async def babble() -> None:  # what 57,600 baud reads from a 921,600 one: noise
        while True:
            os.write(master, bytes(rng.randrange(256) for _ in range(600)))
            await asyncio.sleep(0.05)

    with structlog.testing.capture_logs() as logs:
        async with serving(config, mqtt=False) as runtime:
            noise = asyncio.create_task(babble())
            try:
                await asyncio.sleep(7.0)  # two windows of 3 s
                reply = await runtime.submit(Engage("e", PositionNed(0, 0, -3)))
            finally:
                noise.cancel()
    warned = [e for e in logs if e["event"] == "engine_warning" and "no MAVLink" in e["message"]]
    assert len(warned) == 1, [e for e in logs if e["log_level"] == "warning"]
    assert "baud rate" in warned[0]["message"] and path in warned[0]["message"]
    assert not reply.ok and reply.reason is Reason.FC_UNKNOWN
    assert "no MAVLink frame" in reply.message, reply.message
