"""A plain pymavlink script (a user's, blocking, mavutil) flies the px4-offboard.md flow."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from offboardd.sim import SimServer
from tests.conftest import free_port
from tests.sim.client import sim_config

SCRIPT = Path(__file__).parent / "scripts" / "pymavlink_offboard_flight.py"


async def test_plain_pymavlink_script_flies_stream_offboard_arm_climb_loss_reentry() -> None:
    port = free_port()
    async with SimServer(sim_config(udp_remote=("127.0.0.1", port))) as sim:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(SCRIPT), str(port),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 40)
        text = out.decode()
        assert proc.returncode == 0, text
        assert text.strip().endswith("OK")
        rec = sim.record
        assert rec.offboard_requests and rec.first_valid_setpoint_s is not None
        assert rec.offboard_requests[0] - rec.first_valid_setpoint_s >= 0.9  # its warm-up
        causes = [(m.new_mode, m.cause) for m in rec.mode_changes]
        # the sim plays PX4 1.18: without RC the loss action is Return (#26391)
        assert ("AUTO.RTL", "failsafe") in causes and ("OFFBOARD", "offboard resumed") in causes
        assert [s.source_component for s in rec.setpoints[:1]] == [191]
