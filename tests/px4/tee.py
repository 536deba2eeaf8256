"""A recording UDP tee between real PX4 and the daemon: the tier's oracle.

PX4's onboard link sends from 14580+N to 14540+N. The tee binds 14540+N, forwards what PX4
sends to the daemon (listening on its own loopback port, `udpin`), and what the daemon
answers back to PX4. Every frame both ways is decoded (pymavlink, `development` dialect) and
stamped with `time.monotonic()` as it arrives, so the tests judge what PX4 really reported
(mode, armed, position) and what the daemon really sent (setpoints, commands), never what
the daemon says about itself. It never changes a byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from pymavlink.dialects.v20 import development as mavlink

from offboardd.mavlink.params import decode_param_value, encode_param_value, param_id_str

SETPOINT_TYPES = frozenset({"SET_POSITION_TARGET_LOCAL_NED", "SET_POSITION_TARGET_GLOBAL_INT",
                            "SET_ATTITUDE_TARGET"})  # fmt: skip
# PX4 custom_mode values (main mode << 16 | sub mode << 24, px4_custom_mode.h)
OFFBOARD = 6 << 16
POSCTL = 3 << 16
AUTO_LOITER = 4 << 16 | 3 << 24
AUTO_RTL = 4 << 16 | 5 << 24
MAV_MODE_FLAG_SAFETY_ARMED = 128


def main_mode(custom_mode: int) -> int:
    return (custom_mode >> 16) & 0xFF


@dataclass(frozen=True)
class Sent:
    t: float
    name: str
    fields: dict[str, Any]


@dataclass
class Record:
    setpoints: list[Sent] = field(default_factory=list)
    commands: list[Sent] = field(default_factory=list)  # COMMAND_LONG from the daemon
    acks: list[Sent] = field(default_factory=list)  # COMMAND_ACK from PX4
    modes: list[tuple[float, int]] = field(default_factory=list)  # changes of custom_mode
    armed: list[tuple[float, bool]] = field(default_factory=list)  # changes
    statuses: list[tuple[float, int]] = field(default_factory=list)  # HEARTBEAT MAV_STATE changes
    statustexts: list[tuple[float, int, str]] = field(default_factory=list)
    params: list[tuple[float, str, float]] = field(default_factory=list)  # PARAM_VALUE heard
    # CURRENT_MODE's (custom_mode, intended_custom_mode), on change: a failsafe keeps the
    # intended mode, a GCS's or pilot's mode change replaces it
    current_modes: list[tuple[float, int, int]] = field(default_factory=list)
    position_ned_m: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    track: list[tuple[float, tuple[float, float, float]]] = field(default_factory=list)
    velocity_ned_m_s: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    attitude_rad: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    global_position: tuple[float, float, float] = (math.nan, math.nan, math.nan)  # deg, deg, m AMSL
    relative_alt_m: float = math.nan
    home_alt_m: list[tuple[float, float]] = field(default_factory=list)  # HOME_POSITION, AMSL
    landed_state: int = 0  # MAV_LANDED_STATE: 1 on ground, 2 in air
    undecodable: int = 0
    received: Counter[str] = field(default_factory=Counter)  # PX4's messages by name

    @property
    def mode(self) -> int | None:
        return self.modes[-1][1] if self.modes else None

    @property
    def is_armed(self) -> bool:
        return bool(self.armed) and self.armed[-1][1]

    def intended_in(self, custom_mode: int, since: float) -> int | None:
        """The intended mode CURRENT_MODE last reported with `custom_mode` from `since` on
        (PX4 boots in AUTO.LOITER, intended so), if it did."""
        found = [i for t, m, i in self.current_modes if m == custom_mode and t >= since]
        return found[-1] if found else None

    def offboard_requests(self) -> list[Sent]:
        return [c for c in self.commands if c.fields["command"] == 176
                and int(c.fields["param2"]) == 6]


class TeeRecorder:
    """Decodes and records what crosses between PX4 and the daemon, both ways: the oracle.
    Subclasses carry the bytes (a UDP tee here, a serial line in serial_line.py) and hand
    each chunk to `from_px4` / `from_daemon` as it passes."""

    def __init__(self) -> None:
        self.record = Record()
        self._from_px4 = mavlink.MAVLink(None)
        self._from_daemon = mavlink.MAVLink(None)
        for parser in (self._from_px4, self._from_daemon):
            parser.robust_parsing = True
        self.changed = asyncio.Event()

    def close(self) -> None:
        raise NotImplementedError

    def from_px4(self, data: bytes, now: float) -> None:
        self._decode(self._from_px4, data, now, self._on_px4)
        self.changed.set()

    def from_daemon(self, data: bytes, now: float) -> None:
        self._decode(self._from_daemon, data, now, self._on_daemon)
        self.changed.set()

    def _decode(self, parser: Any, data: bytes, now: float,
                handle: Callable[[Any, float], None]) -> None:
        try:
            msgs = parser.parse_buffer(data) or []
        except Exception:  # a frame pymavlink cannot decode: counted, never fatal
            self.record.undecodable += 1
            return
        for msg in msgs:
            if msg.get_type().startswith("UNKNOWN") or msg.get_type() == "BAD_DATA":
                self.record.undecodable += 1
                continue
            handle(msg, now)

    def _on_daemon(self, msg: Any, now: float) -> None:
        name = msg.get_type()
        if name in SETPOINT_TYPES:
            self.record.setpoints.append(Sent(now, name, msg.to_dict()))
        elif name == "COMMAND_LONG":
            self.record.commands.append(Sent(now, name, msg.to_dict()))

    def _on_px4(self, msg: Any, now: float) -> None:
        r, name = self.record, msg.get_type()
        r.received[name] += 1
        if name == "HEARTBEAT" and msg.get_srcComponent() == 1:
            self._mode(now, int(msg.custom_mode))
            armed = bool(msg.base_mode & MAV_MODE_FLAG_SAFETY_ARMED)
            if not r.armed or r.armed[-1][1] != armed:
                r.armed.append((now, armed))
            if not r.statuses or r.statuses[-1][1] != msg.system_status:
                r.statuses.append((now, int(msg.system_status)))
        elif name == "CURRENT_MODE":
            self._mode(now, int(msg.custom_mode))
            pair = (int(msg.custom_mode), int(msg.intended_custom_mode))
            if not r.current_modes or r.current_modes[-1][1:] != pair:
                r.current_modes.append((now, *pair))
        elif name == "LOCAL_POSITION_NED":
            r.position_ned_m = (msg.x, msg.y, msg.z)
            r.track.append((now, r.position_ned_m))  # the flown path, as PX4 reports it
            r.velocity_ned_m_s = (msg.vx, msg.vy, msg.vz)
        elif name == "ATTITUDE":
            r.attitude_rad = (msg.roll, msg.pitch, msg.yaw)
        elif name == "GLOBAL_POSITION_INT":
            r.global_position = (msg.lat * 1e-7, msg.lon * 1e-7, msg.alt * 1e-3)
            r.relative_alt_m = msg.relative_alt * 1e-3
        elif name == "HOME_POSITION":
            r.home_alt_m.append((now, msg.altitude * 1e-3))
        elif name == "EXTENDED_SYS_STATE":
            r.landed_state = int(msg.landed_state)
        elif name == "STATUSTEXT":
            r.statustexts.append((now, int(msg.severity), str(msg.text)))
        elif name == "COMMAND_ACK":
            r.acks.append(Sent(now, name, msg.to_dict()))
        elif name == "PARAM_VALUE":
            r.params.append((now, param_id_str(msg.param_id),
                             decode_param_value(msg.param_value, msg.param_type)))

    def _mode(self, now: float, custom_mode: int) -> None:
        if self.record.mode != custom_mode:
            self.record.modes.append((now, custom_mode))

    async def wait_for(self, predicate: Callable[[Record], bool], timeout_s: float,
                       what: str) -> float:
        """Wait until `predicate(record)` holds; the monotonic time it first did."""
        deadline = time.monotonic() + timeout_s
        while not predicate(self.record):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                r = self.record
                raise AssertionError(
                    f"timed out after {timeout_s} s waiting for {what}; PX4 mode "
                    f"{r.mode} armed {r.is_armed} position {r.position_ned_m} "
                    f"statustexts {r.statustexts[-5:]}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(remaining, 0.2))
        return time.monotonic()


class Px4Tee(TeeRecorder, asyncio.DatagramProtocol):
    def __init__(self, px4_port: int, daemon_port: int) -> None:
        super().__init__()
        self.px4 = ("127.0.0.1", px4_port)
        self.daemon = ("127.0.0.1", daemon_port)
        self.transport: asyncio.DatagramTransport | None = None
        # until then (time.monotonic()) nothing passes either way, as on a radio out of
        # range; PX4's frames are still decoded, so the record knows what PX4 reported
        self.blackout_until = 0.0

    @classmethod
    async def open(cls, listen_port: int, px4_port: int, daemon_port: int) -> Px4Tee:
        loop = asyncio.get_running_loop()
        _, tee = await loop.create_datagram_endpoint(
            lambda: cls(px4_port, daemon_port), local_addr=("127.0.0.1", listen_port))
        return tee

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        assert self.transport is not None
        now = time.monotonic()
        dark = now < self.blackout_until
        if addr[1] == self.px4[1]:
            if not dark:
                self.transport.sendto(data, self.daemon)
            self.from_px4(data, now)
        elif not dark:
            self.transport.sendto(data, self.px4)
            self.from_daemon(data, now)


class GcsPeer:
    """A second MAVLink peer on PX4's GCS link (UDP 18570+N): what QGroundControl does."""

    def __init__(self, gcs_port: int, target_system: int) -> None:
        self.address = ("127.0.0.1", gcs_port)
        self.target_system = target_system
        self.mav = mavlink.MAVLink(None, 255, 190)  # a GCS's usual system / component ids
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))

    def set_mode(self, main: int, sub: int = 0) -> None:
        msg = self.mav.command_long_encode(self.target_system, 1, 176, 0, 1, main, sub,
                                           0, 0, 0, 0)
        self.sock.sendto(msg.pack(self.mav), self.address)
        self.mav.seq = (self.mav.seq + 1) % 256

    def _send(self, msg: Any) -> None:
        self.sock.sendto(msg.pack(self.mav), self.address)
        self.mav.seq = (self.mav.seq + 1) % 256

    def command(self, command: int, *params: float) -> None:
        """A COMMAND_LONG to PX4 (component 1), params 1-7 (missing ones 0)."""
        p = [*params, *[0.0] * (7 - len(params))]
        self._send(self.mav.command_long_encode(self.target_system, 1, command, 0, *p))

    def param_set(self, name: str, value: int | float) -> None:
        """PARAM_SET as QGroundControl sends it: an int parameter byte-wise (§5)."""
        param_type = 6 if isinstance(value, int) else 9  # MAV_PARAM_TYPE_INT32 / REAL32
        self._send(self.mav.param_set_encode(self.target_system, 1, name.encode(),
                                             encode_param_value(value, param_type), param_type))

    def close(self) -> None:
        self.sock.close()
