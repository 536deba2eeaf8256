"""`offboardd demo` as a user runs it: a subprocess that starts mosquitto, the sim and the
daemon, flies, plots, and leaves no process behind (also on Ctrl-C and on kill -9)."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STARTED = re.compile(r"^demo: started (\w+) \(pid (\d+)\)")


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as gone: it holds no port, no file)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pids: dict[str, int], timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [f"{name} {pid}" for name, pid in pids.items() if _alive(pid)]
        if not left:
            return []
        time.sleep(0.1)
    return left


def _start_demo(out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "offboardd", "demo", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)


def _read_until(demo: subprocess.Popen[str], pattern: str, pids: dict[str, int],
                seen: list[str]) -> None:
    assert demo.stdout is not None
    for line in demo.stdout:
        seen.append(line)
        if match := STARTED.match(line):
            pids[match[1]] = int(match[2])
        if pattern in line:
            return
    raise AssertionError(f"{pattern!r} never appeared:\n{''.join(seen)}")


def test_demo_flies_plots_and_stops_everything(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "offboardd", "demo", "--out", str(out)],
        capture_output=True, text=True, timeout=110, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    pids = {m[1]: int(m[2]) for line in result.stdout.splitlines()
            if (m := STARTED.match(line))}
    assert set(pids) == {"mosquitto", "daemon", "sim"}, result.stdout
    assert _wait_gone(pids, 1.0) == []
    for name, pid in pids.items():
        assert f"demo: stopped {name} (pid {pid}" in result.stdout
    # not a terminal: plain lines, no carriage returns or escape codes
    assert "\r" not in result.stdout and "\x1b" not in result.stdout
    assert "mission 'square' completed" in result.stdout
    assert "[####################] 100%" in result.stdout

    png = (out / "flight.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    assert 800 <= width <= 2400 and 300 <= height <= 1200, (width, height)
    assert 20_000 < len(png) < 2_000_000
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] and len(summary["legs"]) == 6
    assert 20 < summary["total_s"] < 60, "a short demo"
    assert summary["max_tracking_error_m"] < 1.0
    assert (out / "logs" / "daemon.log").stat().st_size > 0
    # the daemon recorded the flight, and the summary names its folder
    (folder,) = (out / "flights").iterdir()
    assert f"the daemon recorded the flight in {folder}" in result.stdout
    recorded = json.loads((folder / "summary.json").read_text())
    assert recorded["complete"] and recorded["max_altitude_m"] > 2.0, recorded
    assert (folder / "flight.tlog").stat().st_size > 50_000


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_interrupted_demo_leaves_no_process_behind(tmp_path: Path, how: str) -> None:
    demo = _start_demo(tmp_path / "out")
    pids: dict[str, int] = {}
    seen: list[str] = []
    try:
        _read_until(demo, "2/6 square path", pids, seen)  # flying
        assert set(pids) == {"mosquitto", "daemon", "sim"}
        if how == "sigterm":  # taken as Ctrl-C (SIGINT): a landing request, then
            demo.send_signal(signal.SIGTERM)  # everything stopped in order
            output, _ = demo.communicate(timeout=30)
            assert demo.returncode == 130, "".join(seen) + output
            assert "everything it started is stopped" in output
            assert _wait_gone(pids, 1.0) == []
        else:  # the demo itself killed: its children get SIGTERM from the kernel
            os.kill(demo.pid, signal.SIGKILL)
            demo.wait(10)
            assert _wait_gone(pids, 15.0) == []
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        for pid in pids.values():  # never leak into the rest of the suite
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
