"""The real-PX4 tier's flying stack: PX4 SIH, the tee, a private mosquitto, `offboardd run`.

The daemon is the installed command in its own process (as systemd runs it), configured
by a TOML file written here; it listens on its own loopback port and the tee carries its
traffic to PX4's onboard link. The test flies it through MQTT with `OffboardClient`, as a
mission script would, and judges by what the tee saw PX4 report.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offboardd.client import OffboardClient
from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker, free_port
from tests.px4.px4_process import Px4Sitl
from tests.px4.tee import OFFBOARD, GcsPeer, Px4Tee, Record, TeeRecorder

VEHICLE = "px4"


def _toml_value(value: Any) -> str:
    return json.dumps(value)  # strings, numbers, booleans and lists of them read the same


def daemon_config(path: Path, *, daemon_port: int, px4: Px4Sitl, broker_port: int,
                  sections: dict[str, dict[str, Any]]) -> Path:
    base: dict[str, dict[str, Any]] = {
        "mavlink": {"url": f"udpin://127.0.0.1:{daemon_port}", "fc_system_id": px4.system_id,
                    "signing_timestamp_file": ""},
        "mqtt": {"host": "127.0.0.1", "port": broker_port, "vehicle_id": VEHICLE,
                 "motion_state_interval_s": 0.1},  # the scenario plots state.motion
        "log": {"format": "json", "level": "info"},
    }
    for name, keys in sections.items():
        base.setdefault(name, {}).update(keys)
    lines = []
    for name, keys in base.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in keys.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class Daemon:
    config: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    runs: int = 0

    def start(self) -> None:
        self.runs += 1
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "offboardd", "run", "--config", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        self.process.wait(timeout=15)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGTERM)

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out


@dataclass
class Stack:
    px4: Px4Sitl
    tee: TeeRecorder
    daemon: Daemon
    broker: Broker
    client: OffboardClient
    gcs: GcsPeer = field(init=False)

    def __post_init__(self) -> None:
        self.gcs = GcsPeer(self.px4.gcs_port, self.px4.system_id)

    @property
    def record(self) -> Record:
        return self.tee.record

    def new_client(self) -> OffboardClient:
        return OffboardClient("127.0.0.1", self.broker.port, VEHICLE)

    async def fc_ready(self, client: OffboardClient | None = None,
                       timeout_s: float = 20.0) -> dict[str, Any]:
        """The daemon heard PX4, read its parameters and version, and has a position."""
        c = client or self.client
        return await c.wait_for_state(
            lambda s: s.get("com_of_loss_t_s") is not None and s.get("fc_version") is not None
            and bool(s.get("estimates", {}).get("local_position")), timeout_s=timeout_s)

    async def until(self, predicate: Any, timeout_s: float, what: str) -> float:
        return await self.tee.wait_for(predicate, timeout_s, what)

    async def at_altitude(self, up_m: float, timeout_s: float = 20.0, tol_m: float = 0.4) -> float:
        return await self.until(lambda r: abs(-r.position_ned_m[2] - up_m) < tol_m,
                                timeout_s, f"altitude {up_m} m")

    async def take_off(self, up_m: float, commander: OffboardClient | None = None) -> None:
        """Offboard take-off through MQTT: engage a position `up_m` above the origin with
        arming, and wait until PX4 reports the vehicle there."""
        await self.fc_ready()
        client = commander or self.client
        assert (await client.engage(PositionNed(0.0, 0.0, -up_m), arm=True)).ok
        await self.at_altitude(up_m)

    async def in_offboard(self, timeout_s: float = 10.0) -> float:
        return await self.until(lambda r: r.mode == OFFBOARD, timeout_s, "PX4 in OFFBOARD")


@contextlib.asynccontextmanager
async def flying_stack(px4: Px4Sitl, broker: Broker, tmp_path: Path,
                       sections: dict[str, dict[str, Any]] | None = None,
                       tee: TeeRecorder | None = None) -> AsyncIterator[Stack]:
    """Tee + daemon + client around a running, ready PX4; torn down on the way out. By
    default the daemon reaches PX4's onboard UDP link through a UDP tee; `tee` is another
    way (a serial line, whose url `sections` gives), closed here as well."""
    daemon_port = free_port()
    if tee is None:
        tee = await Px4Tee.open(px4.companion_port, px4.px4_port, daemon_port)
    config = daemon_config(tmp_path / "offboardd.toml", daemon_port=daemon_port, px4=px4,
                           broker_port=broker.port, sections=sections or {})
    daemon = Daemon(config, tmp_path / "offboardd.log")
    daemon.start()
    stack: Stack | None = None
    try:
        async with OffboardClient("127.0.0.1", broker.port, VEHICLE) as client:
            stack = Stack(px4, tee, daemon, broker, client)
            yield stack
    except BaseException:
        sys.stderr.write(f"--- daemon log (tail) ---\n{daemon.log_path.read_text()[-6000:]}\n"
                         f"--- PX4 log (tail) ---\n{px4.log_text()[-3000:]}\n")
        raise
    finally:
        daemon.stop()
        tee.close()
        if stack is not None:
            stack.gcs.close()
