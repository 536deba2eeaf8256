"""Fly the real daemon runtime against the built-in sim, both in this event loop.

Real parts only: the sim speaks real MAVLink over real UDP on 127.0.0.1 (or a real pty),
the runtime uses its real link, codec, translation and engine. On the way out the harness
asks the sim whether any setpoint the daemon sent was one PX4 would drop or fail safe on:
none ever may be.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.core.actions import Reply
from offboardd.core.commands import Command, CommanderHeartbeat, Engage
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings
from offboardd.mavlink.links import parse_link_url
from offboardd.recorder.settings import RecorderSettings
from offboardd.runtime import Runtime
from offboardd.sim import SimConfig, SimServer
from tests.conftest import free_port
from tests.sim.client import QUICK_BOOT


@dataclass
class Flight:
    sim: SimServer
    runtime: Runtime
    _ids: int = 0
    _keepalive: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def phase(self) -> str:
        assert self.runtime.engine is not None
        return self.runtime.engine.phase.value

    def snapshot(self) -> dict[str, Any]:
        assert self.runtime.engine is not None
        loop = asyncio.get_running_loop()
        return self.runtime.engine.snapshot(loop.time()).as_dict()

    def next_id(self, prefix: str = "c") -> str:
        self._ids += 1
        return f"{prefix}{self._ids}"

    async def command(self, command: Command, timeout_s: float = 15.0) -> Reply:
        return await asyncio.wait_for(self.runtime.submit(command), timeout_s)

    async def wait_for(
        self, predicate: Callable[[], bool], timeout_s: float, what: str = "condition"
    ) -> float:
        """Poll `predicate` every 10 ms; return the loop time it became true."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate():
            if loop.time() > deadline:
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; "
                                     f"phase={self.phase} sim mode={self.sim.vehicle.mode_name}")
            await asyncio.sleep(0.01)
        return loop.time()

    async def wait_fc_ready(self, timeout_s: float = 10.0) -> None:
        """The daemon has heard PX4, read its parameters (PX4's limits, read last, too)
        and has a position estimate."""
        assert self.runtime.engine is not None
        checks = self.runtime.engine.checks
        await self.wait_for(
            lambda: (
                self.snapshot()["com_of_loss_t_s"] is not None
                and self.snapshot()["mav_fwdextsp"] is not None
                and checks.settled()
                and bool(self.snapshot()["estimates"].get("local_position"))
            ),
            timeout_s,
            "FC parameters and position estimate",
        )

    def keep_lease(self, period_s: float = 0.2) -> None:
        """A live commander: renew the lease in the background until `drop_lease()`."""

        async def beat() -> None:
            while True:
                self.runtime.submit(CommanderHeartbeat(self.next_id("hb")))
                await asyncio.sleep(period_s)

        self._keepalive = asyncio.create_task(beat())

    def drop_lease(self) -> None:
        """The commander dies: no more commands of any kind."""
        if self._keepalive is not None:
            self._keepalive.cancel()
            self._keepalive = None

    async def takeoff(self, down_m: float = -3.0, timeout_s: float = 15.0) -> None:
        """Offboard takeoff: engage + arm with a setpoint above the vehicle; wait to get there."""
        await self.wait_fc_ready()
        self.keep_lease()
        reply = await self.command(
            Engage(self.next_id("engage"), PositionNed(0.0, 0.0, down_m), arm=True)
        )
        assert reply.ok, reply
        await self.wait_for(
            lambda: abs(self.sim.vehicle.position_ned_m[2] - down_m) < 0.3,
            timeout_s, f"climb to {down_m} m",
        )

    def audit_setpoints(self) -> None:
        bad = [s for s in self.sim.record.setpoints if s.verdict != "valid"]
        assert not bad, f"the daemon sent setpoints PX4 would drop or fail safe on: {bad[:3]}"


@contextlib.asynccontextmanager
async def flight(
    *,
    engine: dict[str, Any] | None = None,
    sim: dict[str, Any] | None = None,
    link: str = "udp",
    recorder: RecorderSettings | None = None,
    mavlink: dict[str, Any] | None = None,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[Flight]:
    """A sim and a runtime talking over `link` ("udp" or "serial"); torn down on exit.
    `stop`: set it to stop the daemon as SIGTERM does (serving)."""
    # Laid out like PX4 SITL: the vehicle sends to the port the companion listens on.
    companion_port = free_port()
    sim_config = SimConfig(
        udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", companion_port), gcs_bind=None,
        pty=link == "serial", **{"profile": "light", **QUICK_BOOT, **(sim or {})},
    )
    async with SimServer(sim_config) as server:
        url = (
            f"serial://{server.pty_path}:921600" if link == "serial"
            else f"udpin://127.0.0.1:{companion_port}"
        )
        config = DaemonConfig(
            mavlink=MavlinkSettings(url=parse_link_url(url), **(mavlink or {})),
            engine=dataclasses.replace(EngineSettings(), **(engine or {})),
            recorder=recorder or RecorderSettings(),
        )
        async with flying(server, config, stop) as fl:
            yield fl


@contextlib.asynccontextmanager
async def serving(config: DaemonConfig, *, mqtt: bool,
                  stop: asyncio.Event | None = None) -> AsyncIterator[Runtime]:
    """A daemon runtime in this event loop, running (and connected to its broker when
    `mqtt`); stopped as SIGTERM would on the way out, or when the caller sets `stop`.
    It must not stop by itself."""
    runtime = Runtime(config, mqtt=mqtt)
    stopped_by_caller = stop is not None
    stop = stop if stop is not None else asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await asyncio.wait_for(runtime.running.wait(), 5)
        if runtime.bridge is not None:
            await asyncio.wait_for(runtime.bridge.connected.wait(), 10)
        yield runtime
        assert not task.done() or (stopped_by_caller and stop.is_set()), \
            "the daemon stopped by itself"
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


@contextlib.asynccontextmanager
async def flying(server: SimServer, config: DaemonConfig,
                 stop: asyncio.Event | None = None) -> AsyncIterator[Flight]:
    """The daemon runtime (no MQTT) against a running sim; on the way out, no internal
    error and no setpoint PX4 would drop or fail safe on."""
    async with serving(config, mqtt=False, stop=stop) as runtime:
        fl = Flight(server, runtime)
        try:
            yield fl
        finally:
            fl.drop_lease()
    assert runtime.internal_errors == 0
    fl.audit_setpoints()
