"""Real PX4: `offboardd doctor` reads the release, says what offboard loss will do, and
names PX4's own flight limits looser than the envelope."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.release import override_param, release_of
from tests.px4.stack import daemon_config


async def test_doctor_names_the_release_and_its_offboard_loss_action(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    config = daemon_config(tmp_path / "offboardd.toml", daemon_port=px4.companion_port,
                           px4=px4, broker_port=mosquitto.port,
                           # tighter than PX4's MPC_XY_VEL_MAX (12 m/s on every release)
                           sections={"envelope": {"max_horizontal_speed_m_s": 5.0}})
    config.chmod(0o640)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "offboardd", "doctor", "--config", str(config), "--user", "root",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    lines = out.decode().splitlines()
    named = {line.split()[1]: line for line in lines if len(line.split()) > 1}
    version, loss = named["PX4"], named["COM_OBL_RC_ACT"]
    assert "PX4 v1." in version, lines
    release = release_of(version)
    # The default COM_OBL_RC_ACT = 0 (Position) without RC: warned on every release, and
    # said as what that release does (release.py: v1.16 descends in POSCTL, v1.17+ Return).
    assert loss.startswith("warn"), lines
    if release >= (1, 17):
        assert "NAV_RCL_ACT=2 (Return)" in loss and "NAV_RCL_ACT" in named, lines
    else:
        assert "descend" in loss and "NAV_RCL_ACT" not in named, lines
    assert override_param(release) in named, lines
    assert not any("could not be read" in line for line in lines), lines
    # PX4 flies a position step at MPC_XY_VEL_MAX, not at the envelope's speed: named, and
    # only that one (the other limits are PX4's defaults, which the envelope's equal).
    limits = [line for line in lines if line.split()[1:2] == ["envelope"]]
    assert len(limits) == 1 and limits[0].startswith("warn"), lines
    assert "MPC_XY_VEL_MAX=12 m/s is above [envelope] max_horizontal_speed_m_s=5" in limits[0]
    measured.update(version_line=version.strip(), loss_line=loss.strip()[:160],
                    limits_line=limits[0].strip()[:160])
