"""The demo's private deployment: mosquitto, `offboardd sim` and `offboardd run`, each a
child process on free loopback ports, and the guarantee that all of them are stopped.

`Deployment` is a context manager: whatever happens inside (a failed start, a failed
flight, Ctrl-C), leaving it stops what was started, newest first, SIGTERM then SIGKILL.
Children run in their own session, so a Ctrl-C on the terminal reaches only the demo, which
then lands and stops them in order; on Linux they also get SIGTERM if the demo itself is
killed (PR_SET_PDEATHSIG), so not even `kill -9` leaves one behind.

It owns processes and files under `workdir` only; it never talks MQTT or MAVLink.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

VEHICLE_ID = "demo"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 5.0


class DemoError(Exception):
    """A part of the deployment could not start; the message says what to do."""


def free_port(kind: int) -> int:
    """A port the kernel just gave us on 127.0.0.1 (free for `kind` at that moment)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def mosquitto_binary() -> str:
    found = shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if Path(p).exists()),
        None)
    if found is None:
        raise DemoError("mosquitto is not installed: run `make demo` (it installs it) or "
                        "`sudo apt-get install mosquitto`")
    return found


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass(frozen=True)
class Child:
    name: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid


class Deployment:
    def __init__(self, workdir: Path, *, profile: str = "light",
                 flights_dir: Path | None = None) -> None:
        self.workdir = workdir
        self.flights_dir = flights_dir if flights_dir is not None else workdir / "flights"
        self.profile = profile
        self.children: list[Child] = []
        self.broker_port = 0
        self.vehicle_id = VEHICLE_ID

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- start --------------------------------------------------------------------------
    def start(self) -> None:
        """Broker, then the daemon (it must be listening before the sim talks), then sim."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._start_broker()
        fc_port = free_port(socket.SOCK_DGRAM)
        self._start_daemon(fc_port)
        sim = self._spawn("sim", [
            sys.executable, "-m", "offboardd", "sim", "--bind", "127.0.0.1:0",
            "--remote", f"127.0.0.1:{fc_port}", "--gcs-bind", "none", "--profile", self.profile])
        self._wait(sim, lambda: "serving" in sim.log_path.read_text(errors="replace"),
                   "the simulated vehicle to serve")

    def _start_broker(self) -> None:
        binary = mosquitto_binary()
        for _ in range(3):  # another program may take the free port before mosquitto does
            port = free_port(socket.SOCK_STREAM)
            config = self.workdir / "mosquitto.conf"
            config.write_text(
                "# the demo's private broker: loopback only, anonymous, nothing kept on disk;\n"
                "# it runs as the demo's user (started as root, mosquitto would switch to its\n"
                "# own user, and the kernel would forget to stop it if the demo were killed)\n"
                f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                "set_tcp_nodelay true\n"
                f"user {pwd.getpwuid(os.getuid()).pw_name}\n")
            broker = self._spawn("mosquitto", [binary, "-c", str(config)])
            try:
                self._wait(broker, functools.partial(_accepts, port), "mosquitto to listen")
            except DemoError:
                if broker.process.poll() is None:
                    raise
                self.children.remove(broker)
                continue
            self.broker_port = port
            return
        raise DemoError(f"mosquitto would not start; see {self.workdir / 'mosquitto.log'}")

    def _start_daemon(self, fc_port: int) -> None:
        config = self.workdir / "offboardd.toml"
        config.write_text(
            "# generated by `offboardd demo`: the daemon listens where the sim sends (as PX4\n"
            "# SITL sends to 14540) and talks to the demo's private broker\n"
            f'[mavlink]\nurl = "udpin://127.0.0.1:{fc_port}"\n\n'
            f'[mqtt]\nhost = "127.0.0.1"\nport = {self.broker_port}\n'
            f'vehicle_id = "{self.vehicle_id}"\n'
            "motion_state_interval_s = 0.1  # the planned point of a path / orbit, 10 Hz\n\n"
            "[mqtt.telemetry_rates_hz]\nposition = 10.0   # a smoother flown path in the plot\n\n"
            '[log]\nformat = "json"\n\n'
            "# the flight recorder: the demo's flight, in the output folder (`offboardd log`)\n"
            f'[recorder]\ndir = "{self.flights_dir}"\npost_s = 2.0\n')
        self._spawn("daemon", [sys.executable, "-m", "offboardd", "run", "--config", str(config)])

    def _spawn(self, name: str, argv: list[str]) -> Child:
        log_path = self.workdir / f"{name}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_die_with_parent)  # noqa: PLW1509
        child = Child(name, process, log_path)
        self.children.append(child)
        return child

    def _wait(self, child: Child, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not ready():
            if child.process.poll() is not None:
                raise DemoError(f"{child.name} exited with {child.process.returncode} "
                                f"while waiting for {what}; see {child.log_path}")
            if time.monotonic() > deadline:
                raise DemoError(f"timed out waiting for {what}; see {child.log_path}")
            time.sleep(0.05)

    # -- stop ---------------------------------------------------------------------------
    def stop(self) -> list[Child]:
        """Stop every child, newest first; return them (all reaped)."""
        stopped = list(reversed(self.children))
        for child in stopped:
            if child.process.poll() is None:
                child.process.terminate()
                try:
                    child.process.wait(_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    child.process.kill()
                    child.process.wait()
        self.children.clear()
        return stopped


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
