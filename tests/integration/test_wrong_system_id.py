"""A mistyped `mavlink.fc_system_id`: PX4 is heard, under another id, and not followed.
The daemon said nothing at all and refused an engage "no flight controller heard"
(review, 2026-11-29). Now it names the system it hears, once, and in the refusal."""

from __future__ import annotations

import asyncio

import pytest
import structlog

from offboardd.core.commands import Engage
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import PositionNed
from tests.integration.harness import flight

pytestmark = pytest.mark.integration


async def test_an_autopilot_under_another_system_id_is_named() -> None:
    with structlog.testing.capture_logs() as logs:
        async with flight(mavlink={"fc_system_id": 2}) as fl:  # the sim is system 1
            await asyncio.sleep(2.5)  # a few of its heartbeats
            engine = fl.runtime.engine
            assert engine is not None and not engine.fc_up
            reply = await fl.runtime.submit(Engage("e", PositionNed(0, 0, -3)))
    named = [e["message"] for e in logs if e["event"] == "engine_warning"
             and "system 1" in e["message"]]
    assert named == ["an autopilot of system 1 is heard on the link, but "
                     "mavlink.fc_system_id = 2: not followed (set it to 1, or to 0 for the "
                     "first PX4 heard)"]
    assert not reply.ok and reply.reason is Reason.FC_UNKNOWN
    assert "mavlink.fc_system_id = 2" in reply.message, reply.message
