"""Real PX4: the demo mission, flown by `offboardd scenario` through MQTT."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import VEHICLE, flying_stack


async def test_demo_mission_through_offboardd_scenario(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        await s.fc_ready()
        out = tmp_path / "summary.json"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "offboardd", "scenario", "--broker",
            f"127.0.0.1:{mosquitto.port}", "--vehicle", VEHICLE, "--json", str(out),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        text, _ = await asyncio.wait_for(proc.communicate(), 150)
        assert proc.returncode == 0, text.decode()[-3000:]
        summary = json.loads(out.read_text())
        assert not s.record.is_armed
        measured.update({k: summary[k] for k in ("duration_s", "max_tracking_error_m")
                         if k in summary})
