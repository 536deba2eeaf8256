"""systemd/install.sh into a scratch root, then systemd-analyze on the unit as installed.

Everything but useradd/usermod/chown/systemctl really runs: a virtualenv is created and
offboardd is built from this checkout and installed into it (`--no-deps`: offline, with
this interpreter's setuptools + wheel, so the test needs no network), the config and the
unit are written. A second run must keep an edited config (re-runnable).
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INSTALL = REPO / "systemd" / "install.sh"
UNIT = REPO / "systemd" / "offboardd.service"
MAX_EXPOSURE = 2.0


def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:  # never skip: the unit must be verified
        raise RuntimeError("systemd-analyze is missing: apt-get install systemd")
    return found


def _install(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(INSTALL), "--root", str(root), "--no-deps", "--python", sys.executable],
        capture_output=True, text=True, timeout=180, check=False,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("root")
    result = _install(root)
    assert result.returncode == 0, result.stdout + result.stderr
    return root, result.stdout


def test_install_writes_venv_config_and_unit(installed: tuple[Path, str]) -> None:
    root, output = installed
    version = subprocess.run([str(root / "opt/offboardd/venv/bin/offboardd"), "--version"],
                             capture_output=True, text=True, check=True, timeout=30)
    assert version.stdout.strip() == "offboardd 0.1.0"
    unit = root / "etc/systemd/system/offboardd.service"
    assert unit.read_text() == UNIT.read_text()
    assert stat.S_IMODE(unit.stat().st_mode) == 0o644
    etc = root / "etc/offboardd"
    assert stat.S_IMODE(etc.stat().st_mode) == 0o750
    for name in ("offboardd.toml", "env"):
        assert stat.S_IMODE((etc / name).stat().st_mode) == 0o640, name
    assert (etc / "offboardd.toml").read_text() == (REPO / "config/offboardd.toml").read_text()
    assert "OFFBOARDD_MQTT_PASSWORD" in (etc / "env").read_text()
    for skipped in ("useradd", "usermod", "chown root:offboardd", "systemctl enable"):
        assert re.search(rf"skipped \(--root\):.*{skipped}", output), skipped


def test_install_is_rerunnable_and_keeps_the_config(installed: tuple[Path, str]) -> None:
    root, _ = installed
    config = root / "etc/offboardd/offboardd.toml"
    config.write_text('[mavlink]\nurl = "serial:///dev/serial0:921600"\n')
    result = _install(root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "keeping existing" in result.stdout and "is up to date" in result.stdout
    assert config.read_text() == '[mavlink]\nurl = "serial:///dev/serial0:921600"\n'


def test_systemd_analyze_verifies_the_installed_unit(installed: tuple[Path, str]) -> None:
    root, _ = installed
    # verify resolves the unit's dependencies (sysinit.target...) inside --root: give the
    # scratch root systemd's own units, as a real system has them.
    units = next(p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))
                 if p.is_dir())
    target = root / "usr/lib/systemd/system"
    if not target.exists():
        shutil.copytree(units, target, symlinks=True)
    verify = subprocess.run([_systemd_analyze(), "verify", f"--root={root}", "--man=no",
                             "offboardd.service"], capture_output=True, text=True, timeout=60,
                            check=False)
    # verify exits 0 even for a directive it ignores: any message at all is a failure.
    assert verify.returncode == 0 and not verify.stdout + verify.stderr, verify.stderr
    security = subprocess.run([_systemd_analyze(), "security", "--offline=true",
                               f"--root={root}", "offboardd.service"],
                              capture_output=True, text=True, timeout=60, check=False)
    match = re.search(r"Overall exposure level for offboardd.service: ([0-9.]+)",
                      security.stdout)
    assert match, security.stdout + security.stderr
    exposure = float(match.group(1))
    assert exposure < MAX_EXPOSURE
    assert f"rates this unit {exposure}" in UNIT.read_text(), "keep the unit's comment true"


def test_help_and_bad_options() -> None:
    shown = subprocess.run(["bash", str(INSTALL), "--help"], capture_output=True, text=True,
                           timeout=30, check=False)
    assert shown.returncode == 0
    for option in ("--root DIR", "--no-deps", "--python", "--system-site-packages"):
        assert option in shown.stdout
    bad = subprocess.run(["bash", str(INSTALL), "--frobnicate"], capture_output=True,
                         text=True, timeout=30, check=False)
    assert bad.returncode != 0 and "unknown option: --frobnicate" in bad.stderr
