"""sd_notify on a real AF_UNIX datagram socket, as systemd would receive it.

- `offboardd run` as a subprocess (NOTIFY_SOCKET, WATCHDOG_USEC and JOURNAL_STREAM set as
  systemd sets them) beside the sim and a real mosquitto: READY at once, WATCHDOG pings,
  STATUS on transitions, STOPPING on SIGTERM; log lines are JSON with journald priorities.
- In process: a stalled event loop stops feeding the watchdog, and feeding resumes after.

The socket is read by a thread that stamps each datagram on arrival, so a blocked event
loop cannot distort the timing being measured.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from offboardd.client import OffboardClient
from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.setpoints import PositionNed
from offboardd.mavlink.links import parse_link_url
from offboardd.runtime import Runtime
from offboardd.sim import SimConfig, SimServer
from offboardd.systemd import SystemdNotifier
from tests.conftest import Broker, free_port
from tests.sim.client import QUICK_BOOT_S


@dataclass(frozen=True)
class Datagram:
    at_s: float  # time.monotonic() on arrival
    fields: dict[str, str]


class NotifySocket:
    """systemd's side: a bound datagram socket and a thread collecting what arrives."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)
        self.received: list[Datagram] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            fields = dict(line.split("=", 1) for line in data.decode().split("\n") if line)
            self.received.append(Datagram(time.monotonic(), fields))

    def with_field(self, key: str, value: str | None = None) -> list[Datagram]:
        return [d for d in list(self.received)
                if key in d.fields and (value is None or d.fields[key] == value)]

    async def wait_for(self, key: str, value: str | None = None, timeout_s: float = 10.0,
                       count: int = 1) -> list[Datagram]:
        deadline = time.monotonic() + timeout_s
        while len(found := self.with_field(key, value)) < count:
            assert time.monotonic() < deadline, (
                f"no {count} x {key}={value or '*'} within {timeout_s} s; got {self.received}")
            await asyncio.sleep(0.02)
        return found

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def notify_socket() -> Iterator[NotifySocket]:
    # AF_UNIX paths are limited to 108 bytes: pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="obd-", dir="/tmp") as directory:
        listener = NotifySocket(os.path.join(directory, "notify"))
        try:
            yield listener
        finally:
            listener.close()


def _read_all(fd: int, sink: list[bytes]) -> None:
    while chunk := os.read(fd, 65536):
        sink.append(chunk)
    os.close(fd)


async def test_daemon_notifies_ready_watchdog_status_stopping(
    notify_socket: NotifySocket, mosquitto: Broker, tmp_path: Path
) -> None:
    port = free_port()
    config = tmp_path / "offboardd.toml"
    config.write_text(
        f'[mavlink]\nurl = "udpin://127.0.0.1:{port}"\n'
        f'[mqtt]\nhost = "127.0.0.1"\nport = {mosquitto.port}\nvehicle_id = "n1"\n'
    )
    # stderr is "journald": a pipe whose dev:inode is in JOURNAL_STREAM, as systemd does it.
    read_fd, write_fd = os.pipe()
    st = os.fstat(write_fd)
    env = dict(os.environ, NOTIFY_SOCKET=notify_socket.path, WATCHDOG_USEC="2000000",
               JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    env.pop("WATCHDOG_PID", None)
    stderr_chunks: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(read_fd, stderr_chunks), daemon=True)
    reader.start()
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config):
        started_s = time.monotonic()
        daemon = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "offboardd", "run", "--config", str(config),
            stdout=asyncio.subprocess.DEVNULL, stderr=write_fd, env=env)
        os.close(write_fd)
        try:
            ready = (await notify_socket.wait_for("READY", "1", timeout_s=15))[0]
            # READY comes before the FC or the broker is known: it says what it waits for.
            assert ready.fields["STATUS"] == "waiting for the flight controller"
            pings = await notify_socket.wait_for("WATCHDOG", "1", count=3, timeout_s=5)
            gaps = [b.at_s - a.at_s for a, b in itertools.pairwise(pings)]
            assert all(gap < 2.0 for gap in gaps), gaps  # WatchdogSec=2 s: never late
            assert ready.at_s - started_s < 10
            async with OffboardClient("127.0.0.1", mosquitto.port, "n1") as client:
                await client.wait_for_state(
                    lambda s: s.get("com_of_loss_t_s") is not None
                    and bool(s.get("estimates", {}).get("local_position")), timeout_s=15)
                assert (await client.engage(PositionNed(0.0, 0.0, -2.0), arm=True)).ok
            # e.g. "flight controller sysid 1 up (PX4 v1.16.2); broker connected; active (engaged)"
            # (the collector thread may see the datagram a moment after the engage reply)
            def engaged_status() -> bool:
                return any(
                    s.startswith("flight controller sysid 1 up (PX4 v")
                    and "; broker connected; active" in s
                    for s in (d.fields["STATUS"] for d in notify_socket.with_field("STATUS"))
                )

            deadline = time.monotonic() + 5.0
            while not engaged_status():
                statuses = [d.fields["STATUS"] for d in notify_socket.with_field("STATUS")]
                assert time.monotonic() < deadline, statuses
                await asyncio.sleep(0.02)
            daemon.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(daemon.wait(), 15) == 0
        finally:
            if daemon.returncode is None:
                daemon.kill()
                await daemon.wait()
    stopping = await notify_socket.wait_for("STOPPING", "1", count=2, timeout_s=5)
    assert [d.fields["STATUS"] for d in stopping] == ["releasing the vehicle", "stopping"]
    reader.join(5)
    lines = b"".join(stderr_chunks).decode().splitlines()
    assert lines, "the daemon logged nothing"
    for line in lines:  # "<6>{json}": journald priority, then one JSON object
        assert line[0] == "<" and line[2] == ">", line
        record = json.loads(line[3:])
        assert {"event", "level", "timestamp"} <= record.keys()
    assert any(line.startswith("<6>") and '"event": "starting"' in line for line in lines)
    # start-up's heap out of the cycle collector's later walks (offboardd/heap.py)
    frozen = [json.loads(line[3:]) for line in lines if '"event": "heap_frozen"' in line]
    assert len(frozen) == 1 and frozen[0]["objects"] > 10_000, frozen


async def test_stalled_event_loop_misses_its_watchdog(notify_socket: NotifySocket) -> None:
    period_s = 1.0
    notifier = SystemdNotifier(notify_socket.path,
                               environ={"WATCHDOG_USEC": str(int(period_s * 1e6))})
    url = parse_link_url(f"udpin://127.0.0.1:{free_port()}")  # no FC: the idle daemon
    runtime = Runtime(DaemonConfig(mavlink=MavlinkSettings(url=url)), mqtt=False,
                      notifier=notifier)
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    stall: dict[str, float] = {}

    def block_the_loop() -> None:  # a blocking call on the event loop, e.g. a slow disk
        stall["start"] = time.monotonic()
        time.sleep(2 * period_s)
        stall["end"] = time.monotonic()

    try:
        await notify_socket.wait_for("WATCHDOG", "1", count=2, timeout_s=5)
        asyncio.get_running_loop().call_soon(block_the_loop)
        await asyncio.sleep(0)  # the stall runs here
        resumed = len(notify_socket.with_field("WATCHDOG")) + 2
        await notify_socket.wait_for("WATCHDOG", "1", count=resumed, timeout_s=5)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        notifier.close()
    pings = [d.at_s for d in notify_socket.with_field("WATCHDOG", "1")]
    during = [t for t in pings if stall["start"] < t < stall["end"]]
    assert not during, "a blocked loop must not feed the watchdog"
    before = max(t for t in pings if t <= stall["start"])
    after = min(t for t in pings if t >= stall["end"])
    assert after - before > period_s, "systemd would have seen the watchdog expire"
    assert after - stall["end"] < period_s, "feeding resumes as soon as the loop runs"
    await notify_socket.wait_for("STOPPING", "1", timeout_s=5)


async def test_watchdog_is_fed_every_half_period_while_telemetry_flows(
    notify_socket: NotifySocket,
) -> None:
    """sd_watchdog_enabled(3): ping every WatchdogSec/2. Telemetry arriving all the time
    must not postpone the runtime's timer (and with it the ping) again and again."""
    period_s = 1.0
    notifier = SystemdNotifier(notify_socket.path,
                               environ={"WATCHDOG_USEC": str(int(period_s * 1e6))})
    port = free_port()
    url = parse_link_url(f"udpin://127.0.0.1:{port}")
    runtime = Runtime(DaemonConfig(mavlink=MavlinkSettings(url=url)), mqtt=False,
                      notifier=notifier)
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", boot_ready_s=QUICK_BOOT_S)
    stop = asyncio.Event()
    async with SimServer(sim_config):
        task = asyncio.create_task(runtime.run(stop))
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            while not (runtime.engine is not None and runtime.engine.fc_up):
                assert loop.time() < deadline, "the runtime never heard the sim"
                await asyncio.sleep(0.02)
            flowing_since = time.monotonic()  # telemetry now reaches the engine all the time
            before = len(notify_socket.with_field("WATCHDOG", "1"))
            await notify_socket.wait_for("WATCHDOG", "1", count=before + 7, timeout_s=15)
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)
            notifier.close()
    pings = [d for d in notify_socket.with_field("WATCHDOG", "1") if d.at_s > flowing_since]
    gaps = sorted(b.at_s - a.at_s for a, b in itertools.pairwise(pings))
    median_gap_s = gaps[len(gaps) // 2]  # robust to a hiccup of the loaded test machine
    assert median_gap_s < 0.75 * period_s, gaps


def test_notifier_is_a_no_op_without_systemd() -> None:
    notifier = SystemdNotifier(environ={})
    assert not notifier.enabled
    assert notifier.watchdog_period_s is None
    assert not notifier.ready("x") and not notifier.watchdog() and not notifier.stopping()


def test_watchdog_period_only_for_this_process(notify_socket: NotifySocket) -> None:
    mine = SystemdNotifier(notify_socket.path, environ={"WATCHDOG_USEC": "4000000",
                                                        "WATCHDOG_PID": str(os.getpid())})
    other = SystemdNotifier(notify_socket.path, environ={"WATCHDOG_USEC": "4000000",
                                                         "WATCHDOG_PID": "1"})
    zero = SystemdNotifier(notify_socket.path, environ={"WATCHDOG_USEC": "0"})
    assert mine.watchdog_period_s == 4.0
    assert other.watchdog_period_s is None and zero.watchdog_period_s is None
    for n in (mine, other, zero):
        n.close()


async def test_status_text_cannot_forge_fields(notify_socket: NotifySocket) -> None:
    notifier = SystemdNotifier(notify_socket.path, environ={})
    assert notifier.status("engaging\nREADY=1")
    got = (await notify_socket.wait_for("STATUS"))[0]
    assert got.fields == {"STATUS": "engaging READY=1"}
    notifier.close()


async def test_abstract_namespace_socket() -> None:
    name = f"offboardd-test-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        notifier = SystemdNotifier(environ={"NOTIFY_SOCKET": "@" + name})
        assert notifier.ready("up")
        assert sock.recv(100) == b"READY=1\nSTATUS=up"
        notifier.close()
