"""`offboardd sim` as a process, and the pty and TCP transports with real bytes."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import termios
import tty
from pathlib import Path

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.sim import SimServer
from tests.conftest import free_port
from tests.sim.client import OFFBOARD, d, position_sp, sim_config

CLI = [sys.executable, "-m", "offboardd", "sim"]


def test_cli_help_lists_the_options() -> None:
    out = subprocess.run([*CLI, "--help"], check=False, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    for option in ("--bind", "--gcs-bind", "--tcp", "--pty", "--profile", "--single-ack",
                   "--double-ack", "--px4-version",
                   "--fault", "--param"):  # fmt: skip
        assert option in out.stdout


def test_cli_runs_until_sigint_or_sigterm_and_exits_0() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        port = free_port()
        proc = subprocess.Popen(
            [*CLI, "--bind", f"127.0.0.1:{port}", "--gcs-bind", "none", "--remote", "none",
             "--fault", "estimator_invalid@0.2"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            assert f"127.0.0.1:{port}" in proc.stdout.readline()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(3)
                codec = MavlinkCodec(1, 191)
                s.sendto(codec.encode(d.MAVLink_heartbeat_message(18, 8, 0, 0, 0, 3)),
                         ("127.0.0.1", port))  # fmt: skip
                msgs = codec.decode(s.recv(4096))
                assert msgs and all(m.get_srcSystem() == 1 for m in msgs)
            proc.send_signal(sig)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def test_cli_rejects_a_bad_fault_spec() -> None:
    out = subprocess.run([*CLI, "--fault", "meteor@3"], check=False, capture_output=True,
                         text=True, timeout=30)  # fmt: skip
    assert out.returncode == 2 and "unknown fault" in out.stderr


def test_cli_names_the_port_it_cannot_bind_and_exits_1() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        out = subprocess.run(
            [*CLI, "--bind", f"127.0.0.1:{port}", "--gcs-bind", "none", "--remote", "none"],
            check=False, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"the udp link cannot bind UDP 127.0.0.1:{port}: Address already in use" in out.stderr
    assert "--bind" in out.stderr


async def test_pty_serves_mavlink_on_the_slave_path_and_symlink(tmp_path: Path) -> None:
    link = tmp_path / "ttyPX4"
    cfg = sim_config(udp_bind=None, pty=True, pty_symlink=str(link), profile="light")
    async with SimServer(cfg) as sim:
        assert sim.pty_path == str(link) and link.is_symlink()
        fd = os.open(link, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            tty.setraw(fd)
            termios.tcflush(fd, termios.TCIOFLUSH)
            codec = MavlinkCodec(1, 191)
            os.write(fd, codec.encode(position_sp()))
            os.write(fd, codec.encode(d.MAVLink_command_long_message(
                1, 1, d.MAV_CMD_DO_SET_MODE, 0, 1, 6, 0, 0, 0, 0, 0)))  # fmt: skip
            got: list[str] = []
            for _ in range(100):
                await asyncio.sleep(0.02)
                try:
                    got += [m.get_type() for m in codec.decode(os.read(fd, 65536))]
                except BlockingIOError:
                    continue
                if "COMMAND_ACK" in got and "HEARTBEAT" in got:
                    break
            assert "COMMAND_ACK" in got and "HEARTBEAT" in got
            assert sim.vehicle.mode_name == "OFFBOARD"
            assert sim.record.setpoints[0].verdict == "valid"
        finally:
            os.close(fd)
    assert not link.exists()


async def test_tcp_serves_mavlink_to_a_client() -> None:
    port = free_port(socket.SOCK_STREAM)
    async with SimServer(sim_config(udp_bind=None, tcp_port=port, profile="light")) as sim:
        for _ in range(50):
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.05)
        codec = MavlinkCodec(1, 191)
        writer.write(codec.encode(d.MAVLink_command_long_message(
            1, 1, d.MAV_CMD_DO_SET_MODE, 0, 1, 6, 0, 0, 0, 0, 0)))  # fmt: skip
        got: list[int] = []
        while d.MAVLINK_MSG_ID_COMMAND_ACK not in got:
            data = await asyncio.wait_for(reader.read(4096), 3)
            got += [m.get_msgId() for m in codec.decode(data)]
        writer.close()
        assert sim.vehicle.commander.mode.custom_mode == OFFBOARD
