"""UDP links: `udpin` (bind, reply to the peer that spoke) and `udpout` (send to host:port).

One datagram in is one `on_bytes` call (polled: one per run of datagrams from one sender);
no framing, no parsing here. Sends go straight to
the socket through asyncio's datagram transport (which buffers only if the kernel says
EAGAIN); past `MAX_BACKLOG_BYTES` of such buffering, sends are dropped, not queued.

Polled (`polled=True`, what the daemon uses): the socket is not watched by the event loop
at all; the owner calls `poll()` once per control cycle and every datagram the kernel holds
is delivered then, and sends go straight to the non-blocking socket (a datagram the kernel
cannot take at once is dropped and counted: a late setpoint is worth less than none). PX4
sends ~100 datagrams/s of telemetry; waking the loop for each cost more CPU than everything
else the daemon does (bench/README.md), and nothing it decides needs a flight controller
message sooner than the next cycle.

This module must not decode MAVLink or decide whether a peer is alive (the runtime does,
from HEARTBEAT): udpin is up from its first datagram on, udpout from the moment its socket
exists, until the socket fails.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import structlog

from offboardd.mavlink.links.base import MAX_BACKLOG_BYTES, BytesCallback, Link, StateCallback
from offboardd.mavlink.links.url import LinkUrl, format_host_port

__all__ = ["UdpInLink", "UdpOutLink"]

log = structlog.get_logger("offboardd.link")

_MAX_DATAGRAM_BYTES = 65_535
# What one poll() delivers at most: a flood cannot hold the event loop (the rest wait in
# the kernel for the next poll, which drops what its buffer cannot hold). PX4 sends ~5
# datagrams and ~1.3 kB per 50 ms cycle (~400 messages a second); the heavy profile ~100
# datagrams. Bytes matter as much as datagrams: crafted garbage (a MAVLink 1 header every
# two bytes) costs the framer ~0.6 us a byte, so 32 KiB is ~20 ms of a cycle at worst;
# 1,000 datagrams of 64 KiB each once held the stream for 4.4 s (review).
_MAX_DATAGRAMS_PER_POLL = 1_000
_MAX_BYTES_PER_POLL = 32 * 1024
# Asked for, capped by the kernel (net.core.rmem_max, 208 KiB by default): room for what
# arrives between two polls many times over.
_RECEIVE_BUFFER_BYTES = 1 << 20


def _buffered_bytes(transport: asyncio.DatagramTransport) -> int:
    """Datagrams asyncio holds because the kernel said EAGAIN (typeshed lacks the method)."""
    size: int = getattr(transport, "get_write_buffer_size", lambda: 0)()
    return size


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, link: _UdpLink) -> None:
        self._link = link
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self._link._datagram(data, addr)

    def error_received(self, exc: Exception) -> None:
        # ICMP "port unreachable" on the connected udpout socket while the peer is not
        # listening yet: normal for UDP, the socket stays usable.
        pass

    def connection_lost(self, exc: Exception | None) -> None:
        self._link._end_session(f"socket closed: {exc}" if exc else "socket closed")
        if not self.closed.done():
            self.closed.set_result(None)


class _UdpLink(Link):
    """Shared socket handling; subclasses say how to open and where replies go."""

    can_poll = True
    whole_frames = True

    def __init__(self, url: LinkUrl, on_bytes: BytesCallback, on_state: StateCallback) -> None:
        super().__init__(url, on_bytes, on_state)
        self._transport: asyncio.DatagramTransport | None = None
        self._protocol: _Protocol | None = None
        self._sock: socket.socket | None = None  # read by poll() when polled
        self._peer: Any = None  # where sends go: a (host, port, ...) tuple, or None

    def _prepare(self, sock: socket.socket, address: Any) -> None:
        """Bind (udpin) or connect (udpout) the new socket to `address`."""
        raise NotImplementedError

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        host, port = self.url.address
        family, kind, proto, _, address = (
            await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM))[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECEIVE_BUFFER_BYTES)
            self._prepare(sock, address)
            if not self.polled:
                self._transport, self._protocol = await loop.create_datagram_endpoint(
                    lambda: _Protocol(self), sock=sock)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._opened(sock)

    def poll(self) -> int:
        """Deliver what waits, a datagram at a time. Each is framed on its own: a MAVLink
        frame never spans datagrams, so what one datagram holds must not complete a frame
        begun in the one before. (Consecutive datagrams of one sender were once joined into
        one chunk, a callback per poll: then a lone magic byte and a frame short of its own
        made a whole frame, and the link replied to their sender: found by the end-to-end
        fuzz.)"""
        sock = self._sock if self.polled else None
        received = taken_bytes = 0
        while (sock is not None and received < _MAX_DATAGRAMS_PER_POLL
               and taken_bytes < _MAX_BYTES_PER_POLL):
            try:
                data, addr = sock.recvfrom(_MAX_DATAGRAM_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                continue  # ICMP: udpout's peer is not listening yet; normal for UDP
            except OSError as exc:
                self._end_session(f"socket error: {exc}")
                break
            received += 1
            taken_bytes += len(data)
            self._datagram(data, addr)
            if self._session_over():  # the callback failed: run() ends with its error
                break
        return received

    def _opened(self, sock: socket.socket) -> None:
        raise NotImplementedError

    async def _close(self) -> None:
        transport, protocol, sock = self._transport, self._protocol, self._sock
        self._transport = self._protocol = self._sock = None
        if transport is not None and protocol is not None:
            transport.abort()  # close() would wait for buffered datagrams: stale, drop them
            await protocol.closed  # (the transport closes the socket)
        elif sock is not None:
            sock.close()

    def _datagram(self, data: bytes, addr: Any) -> None:
        self._deliver(data)

    def _write(self, data: bytes) -> bool:
        if self._peer is None:
            return False
        if self.polled:
            return self._send_now(data)
        transport = self._transport
        if transport is None or transport.is_closing():
            return False
        if _buffered_bytes(transport) + len(data) > MAX_BACKLOG_BYTES:
            return False
        transport.sendto(data, self._transport_address())
        return True

    def _transport_address(self) -> Any:
        """Where the transport sends to (udpout: None, see there)."""
        return self._peer

    def _send_now(self, data: bytes) -> bool:
        """Polled: one non-blocking send; what the kernel refuses now is dropped."""
        sock = self._sock
        if sock is None:
            return False
        try:
            sock.sendto(data, self._peer)
        except OSError:  # EAGAIN (buffer full), or an ICMP error reported on this send
            return False
        return True


class UdpInLink(_UdpLink):
    """Bind `host:port`; up once a datagram arrives; replies go to the last sender.

    With `confirm_peers` (the daemon sets it) a new sender becomes the peer only when the
    consumer calls `confirm_sender()` for its datagram, i.e. once it decoded as valid
    MAVLink: otherwise one datagram of garbage from anyone who can reach the port would
    divert the setpoint stream until the FC spoke again (found by fuzzing). And while the
    confirmed peer is live (it sent something in the last `live_peer_s`), another
    sender's datagrams are dropped unread, as tcpin turns a second client away: five
    forged frames with the FC's ids and an older `time_boot_ms`, from any address that
    reaches the port, read as an FC reboot and ended a flight (found by review). After
    `live_peer_s` of silence a new sender may take over: an FC that came back elsewhere.
    """

    confirm_peers = False
    # PX4 sends tens of messages a second, HEARTBEAT at least once a second (tcpin's too)
    live_peer_s = 2.0
    ignored_datagrams = 0  # from other senders while the peer was live
    _sender: Any = None  # the sender of the datagram being delivered, not yet the peer
    _peer_heard_s = float("-inf")  # (monotonic) the peer's last datagram
    _MAX_REPORTED = 16  # distinct ignored senders logged, then only counted

    def _prepare(self, sock: socket.socket, address: Any) -> None:
        sock.bind(address)

    def _opened(self, sock: socket.socket) -> None:
        self._peer, self._peer_heard_s = None, float("-inf")  # a new socket heard no one yet
        self.ignored_datagrams = 0
        self._reported: set[Any] = set()
        self._mark_down(f"listening on {format_host_port(*self.url.address)}")

    def _datagram(self, data: bytes, addr: Any) -> None:
        now_s = time.monotonic()
        if addr == self._peer:
            self._peer_heard_s = now_s
        elif not self.confirm_peers:
            self._adopt(addr, now_s)
        elif now_s - self._peer_heard_s < self.live_peer_s:
            self._ignore(addr)
            return
        else:
            self._sender = addr
        try:
            self._deliver(data)
        finally:
            self._sender = None

    def _ignore(self, addr: Any) -> None:
        self.ignored_datagrams += 1
        if addr not in self._reported and len(self._reported) < self._MAX_REPORTED:
            self._reported.add(addr)
            log.warning("udpin_sender_ignored", sender=_where(addr), peer=_where(self._peer),
                        why=f"the peer spoke within {self.live_peer_s:g} s")

    def confirm_sender(self) -> None:
        if self._sender is not None:
            self._adopt(self._sender, time.monotonic())
            self._sender = None

    def _adopt(self, addr: Any, now_s: float) -> None:
        self._peer, self._peer_heard_s = addr, now_s
        if not self.up:
            self._mark_up(f"peer {_where(addr)} spoke")


def _where(addr: Any) -> str:
    return "nobody" if addr is None else format_host_port(str(addr[0]), int(addr[1]))


class UdpOutLink(_UdpLink):
    """Send to `host:port` from a kernel-chosen port; replies arrive on the same socket.

    The socket is connected, so the kernel drops datagrams from anyone but the peer.
    """

    def _prepare(self, sock: socket.socket, address: Any) -> None:
        sock.connect(address)  # non-blocking, but UDP's connect only records the peer

    def _opened(self, sock: socket.socket) -> None:
        local = sock.getsockname()
        self._peer = sock.getpeername()
        where = format_host_port(*self.url.address)
        self._mark_up(f"sending to {where} from port {local[1]}")

    def _transport_address(self) -> Any:
        return None  # connected socket: no address (asyncio refuses a differing one)
