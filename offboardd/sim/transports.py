"""The sim's own byte transports: a PX4-SITL-style UDP endpoint and a serial pty.

UDP: bind a local port, send to a default remote, and from then on reply to whoever
spoke last (PX4 SITL's mavlink module does the same). PTY: the sim owns the master end
of `os.openpty()` and serves it with `loop.add_reader`; the slave's path (optionally a
symlink to it) is what the daemon opens as a serial port. Bytes only: no MAVLink here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tty
from collections.abc import Callable
from typing import Any, Protocol, cast

Endpoint = tuple[str, int]
_MAX_DATAGRAM = 1400  # batch frames into datagrams below a typical MTU, as PX4 does


class FrameSender(Protocol):
    def send_frames(self, frames: list[bytes]) -> None: ...


class TcpSender:
    """Frames out through an `offboardd.mavlink.links` link (TCP): one write per batch."""

    def __init__(self, link: Any) -> None:
        self._link = link

    def send_frames(self, frames: list[bytes]) -> None:
        self._link.send(b"".join(frames))


class UdpEndpoint(asyncio.DatagramProtocol):
    def __init__(self, on_bytes: Callable[[bytes], None], remote: Endpoint | None) -> None:
        self._on_bytes = on_bytes
        self.remote = remote
        self.transport: asyncio.DatagramTransport | None = None
        self.send_errors = 0

    @classmethod
    async def open(cls, bind: Endpoint, remote: Endpoint | None,
                   on_bytes: Callable[[bytes], None]) -> UdpEndpoint:  # fmt: skip
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_datagram_endpoint(
            lambda: cls(on_bytes, remote), local_addr=bind
        )
        return proto

    @property
    def bound(self) -> Endpoint:
        assert self.transport is not None
        host, port = self.transport.get_extra_info("sockname")[:2]
        return str(host), int(port)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.remote = (str(addr[0]), int(addr[1]))  # follow the last peer
        self._on_bytes(data)

    def error_received(self, exc: Exception) -> None:
        self.send_errors += 1  # e.g. ICMP port unreachable: nobody listens yet

    def send_frames(self, frames: list[bytes]) -> None:
        """Send frames packed into as few datagrams as fit under the MTU."""
        if self.transport is None or self.remote is None or self.transport.is_closing():
            return
        batch = bytearray()
        for frame in frames:
            if batch and len(batch) + len(frame) > _MAX_DATAGRAM:
                self.transport.sendto(bytes(batch), self.remote)
                batch.clear()
            batch += frame
        if batch:
            self.transport.sendto(bytes(batch), self.remote)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


_RX_CHUNK = 64  # bytes: resume reading once this much fits on the emulated line
# A flight controller's UART buffers, as NuttX configures PX4's telemetry ports (FMUv5 and
# v6X defconfigs: RX 600 bytes; TX 1500 on the smallest, 3000-10000 on others). PX4 sends
# a message only while its TX buffer has room for all of it (Mavlink::send_bytes), so a
# burst of streams falling due together fits in that buffer and is not dropped; a buffer
# of a tenth of a second's bytes (576) dropped such bursts that PX4 carries. What the
# buffer holds is handed on at once: the line's delay is not modelled, only its rate and
# what it drops.
_RX_BUFFER_BYTES = 600
_TX_BUFFER_BYTES = 1500


class _Allowance:
    """Bytes a line of `bytes_per_s` may carry now (None: unlimited): what its UART buffer
    of `buffer_bytes` has room for, refilled at the line's rate. A gap since the last call
    longer than the buffer takes to drain is this process late (a loaded host stalls the
    sim; a flight controller does not stall), not a quiet line: what the line carried
    meanwhile may go now."""

    def __init__(self, bytes_per_s: float | None, buffer_bytes: int) -> None:
        self.bytes_per_s = bytes_per_s
        self.buffer_bytes = buffer_bytes
        self._credit = 0.0
        self._stamp_s: float | None = None

    def take(self, now: float, wanted: int) -> int:
        if self.bytes_per_s is None:
            return wanted
        if self._stamp_s is None:  # an idle line: its buffer empty
            self._credit = float(self.buffer_bytes)
        else:
            carried = max(0.0, now - self._stamp_s) * self.bytes_per_s
            self._credit = min(max(self.buffer_bytes, carried), self._credit + carried)
        self._stamp_s = now
        granted = min(wanted, int(self._credit))
        self._credit -= granted
        return granted

    def give_back(self, unused: int) -> None:
        self._credit += unused

    def wait_s(self, wanted: int) -> float:
        if self.bytes_per_s is None:
            return 0.0
        return max(0.001, (wanted - self._credit) / self.bytes_per_s)


class PtyEndpoint:
    """The master end of a pty pair; `path` is the slave the daemon opens."""

    def __init__(self, on_bytes: Callable[[bytes], None], symlink: str | None,
                 baud: int | None = None) -> None:
        self._on_bytes = on_bytes
        # A UART at `baud` carries baud/10 bytes a second (8N1) each way: we read no
        # faster, so a companion writing more backs up in its serial buffer as on a real
        # radio link, and we write no more (the rest is dropped, as a full UART drops).
        self._bytes_per_s = None if baud is None else baud / 10.0
        self._rx = _Allowance(self._bytes_per_s, _RX_BUFFER_BYTES)
        self._tx = _Allowance(self._bytes_per_s, _TX_BUFFER_BYTES)
        self._paused = False
        self.master_fd, self._slave_fd = os.openpty()
        tty.setraw(self._slave_fd)  # no echo, no line editing: a plain byte pipe
        os.set_blocking(self.master_fd, False)
        self.slave_path = os.ttyname(self._slave_fd)
        self.symlink = symlink
        if symlink:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(symlink)
            os.symlink(self.slave_path, symlink)
        self.dropped_bytes = 0
        self.bytes_from_companion = 0  # what the line carried each way (bench/slow_link.py)
        self.bytes_to_companion = 0
        asyncio.get_running_loop().add_reader(self.master_fd, self._readable)

    @property
    def path(self) -> str:
        return self.symlink or self.slave_path

    def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        allowed = self._rx.take(loop.time(), 65536)
        if allowed == 0:  # over the baud rate: stop reading until the line has room again
            loop.remove_reader(self.master_fd)
            self._paused = True
            loop.call_later(self._rx.wait_s(_RX_CHUNK), self._resume)
            return
        try:
            data = os.read(self.master_fd, allowed)
        except (BlockingIOError, InterruptedError):
            data = b""
        except OSError:  # EIO: no process has the slave open; keep our own slave fd
            data = b""
        self._rx.give_back(allowed - len(data))
        if data:
            self.bytes_from_companion += len(data)
            self._on_bytes(data)

    def _resume(self) -> None:
        if self._paused:
            self._paused = False
            with contextlib.suppress(OSError, ValueError):
                asyncio.get_running_loop().add_reader(self.master_fd, self._readable)

    def send_frames(self, frames: list[bytes]) -> None:
        """Whole frames while the line has room; the rest dropped whole, as PX4 drops a
        message its TX buffer has no room for (Mavlink::send_bytes), never half of one."""
        room = self._tx.take(asyncio.get_running_loop().time(), sum(map(len, frames)))
        fitting = []
        for frame in frames:
            if len(frame) <= room:
                fitting.append(frame)
                room -= len(frame)
            else:
                self.dropped_bytes += len(frame)
        self._tx.give_back(room)
        self._write(b"".join(fitting))

    def send_bytes(self, data: bytes) -> None:
        """Bytes with no frames to respect (a line relaying another's bytes): what the
        line has room for goes, the rest is dropped."""
        allowed = self._tx.take(asyncio.get_running_loop().time(), len(data))
        self.dropped_bytes += len(data) - allowed
        self._write(data[:allowed])

    def _write(self, data: bytes) -> None:
        try:
            written = os.write(self.master_fd, data)
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError:
            written = 0
        self.dropped_bytes += len(data) - written  # a full serial buffer drops, as a UART
        self.bytes_to_companion += written

    def close(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(self.master_fd)
        for fd in (self.master_fd, self._slave_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.symlink:
            with contextlib.suppress(OSError):
                os.unlink(self.symlink)
