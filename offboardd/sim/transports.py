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


class PtyEndpoint:
    """The master end of a pty pair; `path` is the slave the daemon opens."""

    def __init__(self, on_bytes: Callable[[bytes], None], symlink: str | None) -> None:
        self._on_bytes = on_bytes
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
        asyncio.get_running_loop().add_reader(self.master_fd, self._readable)

    @property
    def path(self) -> str:
        return self.symlink or self.slave_path

    def _readable(self) -> None:
        try:
            data = os.read(self.master_fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # EIO: no process has the slave open; keep our own slave fd
            return
        if data:
            self._on_bytes(data)

    def send_frames(self, frames: list[bytes]) -> None:
        data = b"".join(frames)
        try:
            written = os.write(self.master_fd, data)
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError:
            written = 0
        self.dropped_bytes += len(data) - written  # a full serial buffer drops, as a UART

    def close(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(self.master_fd)
        for fd in (self.master_fd, self._slave_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.symlink:
            with contextlib.suppress(OSError):
                os.unlink(self.symlink)
