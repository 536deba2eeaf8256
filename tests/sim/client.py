"""A small MAVLink peer for the sim's tests: real UDP on 127.0.0.1, real MAVLink bytes.

Plays the companion (sysid 1, compid 191, as px4-offboard.md §5 says a companion should)
or a GCS (sysid 255). Keeps every received message with its receive time (the loop
clock, the same clock as `sim.record`), and can stream a setpoint at a fixed rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from typing import Any, cast

from offboardd.core.px4_rules import px4_version
from offboardd.mavlink.codec import MavlinkCodec, Message, dialect
from offboardd.sim import SimConfig, SimServer
from offboardd.sim.px4_versions import VERSIONS

d = dialect
NAN = math.nan
# The PX4 release (major, minor) each of the sim's --px4-version plays, as its
# AUTOPILOT_VERSION reports it: what a differential check judges that sim by
SIM_RELEASES: dict[str, tuple[int, int]] = {
    name: px4_version(v.flight_sw_version)[:2] for name, v in VERSIONS.items()
}
# custom_mode values (px4-offboard.md §4)
OFFBOARD = 393216
POSCTL = 196608
LOITER = 50593792
LAND = 100925440
RTL = 84148224
TAKEOFF = 33816576


# For a test that is not about PX4's boot: ready at once, not ~3 s after it starts
# (SimConfig.boot_ready_s).
QUICK_BOOT_S = 0.0
QUICK_BOOT: dict[str, float] = {"boot_ready_s": QUICK_BOOT_S}

# For a test that only needs the vehicle in the air, what a PX4 user would set too:
# MPC_TKO_RAMP_T 0 disables PX4's takeoff ramp (lift-off right after COM_SPOOLUP_TIME,
# not ~3 s after arming; offboardd/sim/takeoff.py).
QUICK_TAKEOFF: dict[str, float] = {"MPC_TKO_RAMP_T": 0.0}


def sim_config(**overrides: Any) -> SimConfig:
    """A SimConfig on kernel-chosen loopback ports, GCS link off unless asked."""
    base: dict[str, Any] = {
        "udp_bind": ("127.0.0.1", 0), "udp_remote": None, "gcs_bind": None,
        "gcs_remote": None, **QUICK_BOOT,
    }  # fmt: skip
    base.update(overrides)
    return SimConfig(**base)


def position_sp(north: float = 0.0, east: float = 0.0, down: float = -5.0,
                mask: int = 2552, frame: int = 1, target: tuple[int, int] = (1, 1),
                **kw: float) -> Message:  # fmt: skip
    vals = {"vx": 0.0, "vy": 0.0, "vz": 0.0, "afx": 0.0, "afy": 0.0, "afz": 0.0,
            "yaw": 0.0, "yaw_rate": 0.0}  # fmt: skip
    vals.update(kw)
    return d.MAVLink_set_position_target_local_ned_message(
        123456, target[0], target[1], frame, mask, north, east, down,
        vals["vx"], vals["vy"], vals["vz"], vals["afx"], vals["afy"], vals["afz"],
        vals["yaw"], vals["yaw_rate"],
    )  # fmt: skip


class Peer(asyncio.DatagramProtocol):
    def __init__(self, system_id: int, component_id: int) -> None:
        self.codec = MavlinkCodec(system_id, component_id)
        self.received: list[tuple[float, Message]] = []
        self.transport: asyncio.DatagramTransport | None = None
        self.remote: tuple[str, int] = ("127.0.0.1", 0)
        self._stream: asyncio.Task[None] | None = None
        self.sent_setpoints: list[float] = []
        self.target_system = 1  # whom command() addresses unless told
        self._waiters: list[tuple[Callable[[Message], bool], asyncio.Future[Message]]] = []

    @classmethod
    async def connect(cls, port: int, system_id: int = 1, component_id: int = 191,
                      local_port: int = 0) -> Peer:  # fmt: skip
        """`local_port`: where PX4 SITL sends its onboard link (14540+N); 0 for the sim."""
        loop = asyncio.get_running_loop()
        _, peer = await loop.create_datagram_endpoint(
            lambda: cls(system_id, component_id), local_addr=("127.0.0.1", local_port)
        )
        peer.remote = ("127.0.0.1", port)
        peer.heartbeat()  # the sim replies to whoever spoke last
        return peer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        now = asyncio.get_running_loop().time()
        for msg in self.codec.decode(data):
            self.received.append((now, msg))
            for pred, fut in list(self._waiters):
                if not fut.done() and pred(msg):
                    fut.set_result(msg)

    def send(self, msg: Message) -> None:
        assert self.transport is not None
        self.transport.sendto(self.codec.encode(msg), self.remote)

    def heartbeat(self, mav_type: int = d.MAV_TYPE_ONBOARD_CONTROLLER) -> None:
        self.send(d.MAVLink_heartbeat_message(mav_type, d.MAV_AUTOPILOT_INVALID, 0, 0, 0, 3))

    def command(self, command: int, *params: float, target: int | None = None) -> None:
        p = [*params, *([0.0] * (7 - len(params)))]
        to = self.target_system if target is None else target
        self.send(d.MAVLink_command_long_message(to, 1, command, 0, *p))

    def set_mode(self, custom_mode: int) -> None:
        main, sub = (custom_mode >> 16) & 0xFF, (custom_mode >> 24) & 0xFF
        self.command(d.MAV_CMD_DO_SET_MODE, 1, main, sub)

    def arm(self, arm: bool = True, force: bool = False) -> None:
        self.command(d.MAV_CMD_COMPONENT_ARM_DISARM, 1 if arm else 0, 21196 if force else 0)

    async def wait_for(self, pred: Callable[[Message], bool], timeout_s: float = 3.0,
                       *, include_past: bool = False) -> Message:  # fmt: skip
        """The next message matching `pred` (or an earlier one, with include_past)."""
        if include_past:
            for _, msg in self.received:
                if pred(msg):
                    return msg
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        entry = (pred, fut)
        self._waiters.append(entry)
        try:
            return await asyncio.wait_for(fut, timeout_s)
        finally:
            self._waiters.remove(entry)

    async def ack(self, command: int, timeout_s: float = 2.0) -> Message:
        return await self.wait_for(
            lambda m: m.get_type() == "COMMAND_ACK" and m.command == command, timeout_s
        )

    async def heartbeat_mode(self, custom_mode: int, timeout_s: float = 3.0) -> Message:
        return await self.wait_for(
            lambda m: m.get_type() == "HEARTBEAT" and m.custom_mode == custom_mode, timeout_s
        )

    def of_type(self, name: str, since_s: float = -math.inf) -> list[tuple[float, Message]]:
        return [(t, m) for t, m in self.received if m.get_type() == name and t >= since_s]

    def stream(self, make: Callable[[], Message], rate_hz: float = 20.0) -> None:
        """Send `make()` every 1/rate_hz s (absolute deadlines) until stop_stream()."""
        self.stop_stream()

        async def run() -> None:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            k = 0
            while True:
                self.send(make())
                self.sent_setpoints.append(loop.time())
                k += 1
                await asyncio.sleep(max(0.0, t0 + k / rate_hz - loop.time()))

        self._stream = asyncio.create_task(run())

    def stop_stream(self) -> float | None:
        """Stop streaming; return when the last setpoint went out."""
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        return self.sent_setpoints[-1] if self.sent_setpoints else None

    async def fallback_after_stop(self, custom_mode: int, timeout_s: float = 3.0
                                  ) -> tuple[float, Message]:
        """Stop streaming and wait for CURRENT_MODE to report `custom_mode` (PX4's offboard
        loss fallback): (seconds from the last setpoint to that report, the message)."""
        last = self.stop_stream()
        assert last is not None, "nothing was streamed"
        msg = await self.wait_for(
            lambda m: m.get_type() == "CURRENT_MODE" and m.custom_mode == custom_mode, timeout_s)
        seen = next(t for t, m in reversed(self.received) if m is msg)
        return seen - last, msg

    def close(self) -> None:
        self.stop_stream()
        if self.transport is not None:
            self.transport.close()


@contextlib.asynccontextmanager
async def running_sim(**overrides: Any) -> Any:
    """(sim, companion peer) on fresh loopback ports."""
    async with SimServer(sim_config(**overrides)) as sim:
        assert sim.udp_port is not None
        peer = await Peer.connect(sim.udp_port)
        try:
            yield sim, peer
        finally:
            peer.close()


async def offboard_and_arm(sim: SimServer, peer: Peer, down: float = -5.0, yaw: float = 0.0
                           ) -> None:  # fmt: skip
    """Stream a position setpoint, request OFFBOARD, arm; wait until armed in OFFBOARD."""
    peer.stream(lambda: position_sp(down=down, yaw=yaw))
    await asyncio.sleep(0.15)
    peer.set_mode(OFFBOARD)
    assert await sim.wait_until(lambda: sim.vehicle.mode_name == "OFFBOARD", 2.0)
    peer.arm()
    ack = await peer.ack(d.MAV_CMD_COMPONENT_ARM_DISARM)
    assert ack.result == d.MAV_RESULT_ACCEPTED


async def climb(sim: SimServer, peer: Peer, down: float = -5.0, tol_m: float = 0.3) -> None:
    await offboard_and_arm(sim, peer, down)
    assert await sim.wait_until(lambda: abs(sim.vehicle.position_ned_m[2] - down) < tol_m, 10)
