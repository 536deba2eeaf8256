"""TCP links: `tcpout` (connect, reconnect with capped backoff) and `tcpin` (one client at a time).

Each stream read is one `on_bytes` call (a read may hold part of a frame, or several: the
codec reassembles). Writes use the asyncio transport's buffer and never block; past
`MAX_BACKLOG_BYTES` unsent (a stalled peer), new sends are dropped and counted rather than
queued behind stale ones.

This module must not parse MAVLink nor judge a peer alive beyond "the connection exists".
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any

import structlog

from offboardd.mavlink.links.base import (
    MAX_BACKLOG_BYTES,
    BytesCallback,
    Link,
    StateCallback,
    kernel_outq,
    os_error_text,
)
from offboardd.mavlink.links.url import LinkUrl, format_host_port

log = structlog.get_logger("offboardd.link")

__all__ = ["TcpInLink", "TcpOutLink"]

# A connect to an address that never answers (SYNs lost) would otherwise wait for the
# kernel's ~2 min; 3 s is generous for any link a companion computer uses.
CONNECT_TIMEOUT_S = 3.0
# A peer that vanishes without a FIN (power cut, cable pulled) is noticed by TCP only after
# ~15 min of retransmissions (tcp_retries2). Unacknowledged data for this long, or keepalive
# probes unanswered for about as long when nothing is sent, end the connection instead, so
# the link goes down and reconnects while the flight is still going on.
DEAD_PEER_S = 5


def _detect_dead_peer(sock: Any) -> None:
    """Keepalive 2 s idle + 3 probes 1 s apart, and TCP_USER_TIMEOUT (Linux, tcp(7))."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (
        ("TCP_KEEPIDLE", 2),
        ("TCP_KEEPINTVL", 1),
        ("TCP_KEEPCNT", 3),
        ("TCP_USER_TIMEOUT", DEAD_PEER_S * 1000),
    ):
        if hasattr(socket, name):  # Linux has all of them; elsewhere the defaults stay
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    for level, option, value in options:
        with contextlib.suppress(OSError):
            sock.setsockopt(level, option, value)


class _Stream(asyncio.Protocol):
    def __init__(
        self,
        on_made: Callable[[_Stream], None],
        on_data: Callable[[_Stream, bytes], None],
        on_lost: Callable[[_Stream, Exception | None], None],
    ) -> None:
        self._on_made, self._on_data, self._on_lost = on_made, on_data, on_lost
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.made_s = self.last_data_s = time.monotonic()  # (monotonic) connected, last read
        self.stalled: str | None = None  # why we abandoned it (abandon), if we did
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            _detect_dead_peer(sock)
        peer: Any = transport.get_extra_info("peername")
        if peer:
            self.peer = format_host_port(str(peer[0]), int(peer[1]))
        self._on_made(self)

    def data_received(self, data: bytes) -> None:
        self._on_data(self, data)

    def eof_received(self) -> bool:
        return False  # the peer finished sending: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self._on_lost(self, exc)

    def write(self, data: bytes) -> bool:
        transport = self.transport
        if transport is None or transport.is_closing():
            return False
        if transport.get_write_buffer_size() + len(data) > MAX_BACKLOG_BYTES:
            return False
        transport.write(data)
        return True

    def unsent_bytes(self) -> int:
        transport = self.transport
        if transport is None or transport.is_closing():
            return 0
        sock = transport.get_extra_info("socket")
        queued = kernel_outq(sock.fileno()) if sock is not None else 0
        return transport.get_write_buffer_size() + queued

    def abandon(self, reason: str) -> None:
        """End the connection now (queued bytes die with it); `reason` says why."""
        if self.transport is not None and not self.transport.is_closing():
            self.stalled = reason
            self.transport.abort()

    async def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
            await self.closed


def _lost_reason(stream: _Stream, exc: Exception | None) -> str:
    if stream.stalled is not None:
        return f"abandoned: {stream.stalled}"
    return f"connection lost: {exc}" if exc else "peer closed the connection"


class TcpOutLink(Link):
    """Connect to `host:port` as a client; reconnect 0.1 s doubling to 2 s when it drops."""

    def __init__(self, url: LinkUrl, on_bytes: BytesCallback, on_state: StateCallback) -> None:
        super().__init__(url, on_bytes, on_state)
        self._stream: _Stream | None = None
        self._where = format_host_port(*url.address)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                _, stream = await loop.create_connection(
                    lambda: _Stream(self._made, self._data, self._lost), *self.url.address
                )
        except TimeoutError:
            raise OSError(f"no answer within {CONNECT_TIMEOUT_S} s") from None
        self._stream = stream
        self._mark_up(f"connected to {self._where}")

    def _made(self, stream: _Stream) -> None:
        pass  # `_open` marks the link up once create_connection has returned

    def _data(self, stream: _Stream, data: bytes) -> None:
        self._deliver(data)

    def _lost(self, stream: _Stream, exc: Exception | None) -> None:
        self._end_session(f"{self._where}: {_lost_reason(stream, exc)}")

    async def _close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.abort()

    def _open_failed_detail(self, exc: OSError) -> str:
        return f"cannot connect to {self._where}: {os_error_text(exc)}"

    def _write(self, data: bytes) -> bool:
        return self._stream is not None and self._stream.write(data)

    def unsent_bytes(self) -> int:
        return self._stream.unsent_bytes() if self._stream is not None else 0

    def abandon_stalled(self, reason: str) -> None:
        if self._stream is not None:
            self._stream.abandon(reason)


class TcpInLink(Link):
    """Listen on `host:port`; serve one client. A new client replaces a quiet one (a dead
    connection the kernel has not noticed yet, an FC reconnecting) and is turned away while
    the current one is live: a port scan or a GCS connecting must not cut the FC off mid-
    flight (found by review: it did, and the daemon stopped as for an FC lost).

    Up while a client is connected. A replacement is reported as down (old client gone)
    then up (new client), so the runtime can drop a half-received frame from the old one.
    """

    # A client that sent something this recently is live (PX4 sends several messages a
    # second, HEARTBEAT at least once a second).
    live_client_s = 2.0

    def __init__(self, url: LinkUrl, on_bytes: BytesCallback, on_state: StateCallback) -> None:
        super().__init__(url, on_bytes, on_state)
        self._server: asyncio.Server | None = None
        self._client: _Stream | None = None
        self._streams: set[_Stream] = set()  # every accepted connection not yet closed
        self._where = format_host_port(*url.address)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Stream(self._made, self._data, self._lost), *self.url.address
        )
        self._where = format_host_port(*self.bound_address or self.url.address)
        self._mark_down(f"listening on {self._where}, no client yet")

    @property
    def bound_address(self) -> tuple[str, int] | None:
        """(host, port) actually listened on; tells the port the kernel chose for port 0."""
        if self._server is None or not self._server.sockets:
            return None
        host, port = self._server.sockets[0].getsockname()[:2]
        return str(host), int(port)

    def _made(self, stream: _Stream) -> None:
        self._streams.add(stream)
        old = self._client
        if old is not None and stream.made_s - old.last_data_s < self.live_client_s:
            log.warning("tcpin_client_refused", refused=stream.peer, serving=old.peer)
            if stream.transport is not None:
                stream.transport.abort()
            return
        self._client = stream
        if old is not None:
            self._mark_down(f"client {old.peer} replaced by {stream.peer}")
            if old.transport is not None:
                old.transport.abort()
        self._mark_up(f"client {stream.peer} connected to {self._where}")

    def _data(self, stream: _Stream, data: bytes) -> None:
        stream.last_data_s = time.monotonic()
        if stream is self._client:
            self._deliver(data)

    def _lost(self, stream: _Stream, exc: Exception | None) -> None:
        self._streams.discard(stream)
        if stream is self._client:
            self._client = None
            self._mark_down(f"client {stream.peer} left: {_lost_reason(stream, exc)}")

    async def _close(self) -> None:
        server, self._server = self._server, None
        self._client = None
        if server is not None:
            server.close()
        for stream in list(self._streams):
            await stream.abort()
        if server is not None:
            await server.wait_closed()

    def _open_failed_detail(self, exc: OSError) -> str:
        return f"cannot listen on {self._where}: {os_error_text(exc)}"

    def _write(self, data: bytes) -> bool:
        return self._client is not None and self._client.write(data)

    def unsent_bytes(self) -> int:
        return self._client.unsent_bytes() if self._client is not None else 0

    def abandon_stalled(self, reason: str) -> None:
        if self._client is not None:
            self._client.abandon(reason)
