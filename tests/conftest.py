"""Shared fixtures: ephemeral loopback ports and a real mosquitto broker.

Every socket in the suite is on 127.0.0.1 and every port is chosen by the kernel, so
test files can run in parallel (pytest-xdist) without colliding.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The real-PX4 tier (tests/px4) needs a PX4 SITL build and runs only from
# `make test-px4 PX4_SITL=...`, which sets OFFBOARDD_PX4_TIER=1. The normal suite leaves the
# folder out rather than skipping its tests: no test passes by skipping a dependency.
collect_ignore = [] if os.environ.get("OFFBOARDD_PX4_TIER") == "1" else ["px4"]

# The flight recorder writes under $STATE_DIRECTORY/flights when [recorder] dir is unset
# (recorder/settings.py), as systemd's StateDirectory= gives it. Every daemon a test starts,
# in this process or as a child, records into this worker's own temporary folder instead
# of /var/lib/offboardd; a test that reads flights back sets its own dir.
os.environ["STATE_DIRECTORY"] = tempfile.mkdtemp(prefix="offboardd-test-state-")


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A port the kernel just gave us on 127.0.0.1 (free for UDP or TCP as asked)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def datagrams_from(sock: socket.socket, port: int) -> tuple[list[bytes], int]:
    """What waits on `sock` from 127.0.0.1:`port` (read until the socket has nothing more,
    or its timeout passes), and how many datagrams came from anyone else. Tests run two at
    a time: a port the kernel just handed out may still be streamed to by a finished test's
    daemon, so what a test asserts about a socket must look at the sender."""
    ours: list[bytes] = []
    strays = 0
    with contextlib.suppress(BlockingIOError, TimeoutError):
        while True:
            data, addr = sock.recvfrom(65_536)
            if addr[:2] == ("127.0.0.1", port):
                ours.append(data)
            else:
                strays += 1
    return ours, strays


@pytest.fixture
def udp_port() -> int:
    return free_port(socket.SOCK_DGRAM)


@pytest.fixture
def tcp_port() -> int:
    return free_port(socket.SOCK_STREAM)


def mosquitto_binary() -> str:
    found = shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None
    )
    if found is None:  # never skip: the suite needs a real broker (make test installs it)
        raise RuntimeError("mosquitto is not installed; run `make test`, which installs it")
    return found


@dataclass
class Broker:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    config_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=5)

    def start(self) -> None:
        """(Re)start on the same port, e.g. to test reconnects."""
        self.stop()
        self.process = _spawn_mosquitto(self.config_path, self.port)


def _spawn_mosquitto(config_path: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [mosquitto_binary(), "-c", str(config_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"mosquitto exited with {proc.returncode}") from None
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("mosquitto did not start listening within 10 s")


def write_mosquitto_config(directory: Path, port: int, extra: str = "") -> Path:
    config = directory / "mosquitto.conf"
    config.write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
        f"set_tcp_nodelay true\n{extra}"
    )
    return config


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[Broker]:
    """A private mosquitto on a free loopback port, anonymous, no persistence."""
    port = free_port(socket.SOCK_STREAM)
    config = write_mosquitto_config(tmp_path, port)
    broker = Broker("127.0.0.1", port, _spawn_mosquitto(config, port), config)
    try:
        yield broker
    finally:
        broker.stop()
