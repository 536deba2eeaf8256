"""What every link transport shares: state, counters, the send contract, callback guarding.

A link moves bytes only. It never frames, parses or numbers MAVLink (codec.py does), never
logs (it reports through `on_state`, the runtime turns that into events) but for a sender
it turns away (tcpin, udpin), and never reads a clock for anything but its own reconnect
waits and whether its peer spoke lately (tcpin, udpin).

Contract for subclasses (`run()` here drives them):
- `_open()` opens and raises OSError on failure; the transport ends the session with
  `_end_session(reason)`; `_close()` closes everything, even half-opened, and returns only
  once descriptors are closed (it awaits the transport's close callback), so nothing
  outlives `run()`, cancellation included.
- `_write(data)` pushes bytes without blocking and says whether they were taken.
- Received bytes go through `_deliver`, transitions through `_mark_up` / `_mark_down`;
  `on_state` also hears, while the link stays down, each new reason it cannot (re)open
  (once per reason until it is up again: a missing device, then one held by another
  program, is two reports, not one per retry; the owner logs why the peer does not come
  back). Both guard the caller's callbacks: an exception from one is not swallowed but ends
  `run()` with it (a bug in the runtime must be loud, not retried forever).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
import struct
import termios
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from offboardd.mavlink.links.url import LinkUrl

__all__ = [
    "MAX_BACKLOG_BYTES",
    "BytesCallback",
    "Link",
    "LinkState",
    "LinkStats",
    "StateCallback",
    "kernel_outq",
]

# Bytes a stream link may hold unsent. At 921600 baud (~90 kB/s) 64 KiB is ~0.7 s of
# traffic: past that, queued setpoints are stale and dropping is better than flying them late.
MAX_BACKLOG_BYTES = 64 * 1024
# A session that lasted this long starts the reconnect backoff over (Link.run).
STABLE_SESSION_S = 5.0


@dataclass(frozen=True)
class LinkState:
    up: bool
    detail: str  # human words: "connected to 127.0.0.1:5760", "device gone: ..."
    # Still down: a new reason the transport cannot (re)open (no transition).
    open_failed: bool = False


@dataclass
class LinkStats:
    """Counters that only grow. `sends_dropped` counts whole `send()` calls lost: refused
    on a down link or a full buffer, or (serial) dropped later from the bounded backlog."""

    bytes_in: int = 0
    bytes_out: int = 0
    sends_dropped: int = 0
    ups: int = 0
    downs: int = 0


BytesCallback = Callable[[bytes], None]
StateCallback = Callable[[LinkState], None]


class Link(ABC):
    """A byte pipe to one peer that reconnects by itself; see the module docstring."""

    def __init__(self, url: LinkUrl, on_bytes: BytesCallback, on_state: StateCallback) -> None:
        self.url = url
        self.stats = LinkStats()
        self._on_bytes = on_bytes
        self._on_state = on_state
        self._state = LinkState(up=False, detail="not opened yet")
        # Completed by the transport when the current session (connection, open device,
        # bound socket) ends; `run()` awaits it. A callback error is set on it as exception.
        self._session_end: asyncio.Future[str] | None = None
        self._fault: BaseException | None = None
        self._running = False
        self._failures_told: set[str] = set()  # open failures reported since the last up

    # Polled links are not watched by the event loop: their owner calls `poll()` once per
    # cycle (see udp.py for why). Only transports that can (`can_poll`) are ever polled.
    can_poll = False
    polled = False
    # Each `on_bytes` call holds whole frames (UDP: a MAVLink frame never spans datagrams),
    # so a partial frame at its end is garbage, never the start of the next call's frame.
    whole_frames = False

    @property
    def up(self) -> bool:
        return self._state.up

    def poll(self) -> int:
        """Deliver (through `on_bytes`) what arrived since the last poll; return how many
        datagrams were read. A link the event loop reads delivers as bytes arrive and
        returns 0 here."""
        return 0

    def confirm_sender(self) -> None:
        """Called from inside `on_bytes` once the bytes delivered held valid MAVLink.

        A link that learns its peer from who spoke (udpin with `confirm_peers`) adopts that
        sender only then; for every other link this does nothing.
        """
        return  # a deliberate no-op hook (B027 wants a body), not an abstract method

    def unsent_bytes(self) -> int:
        """Bytes taken by `send` that have not left yet, as far as the transport can tell:
        its own buffer, and the kernel's queue where the kernel says (a TCP socket's
        unacknowledged bytes, a UART's output queue; not a pty's, nor a datagram's)."""
        return 0

    def drop_unsent(self) -> None:
        """Throw away what has not left, where that is cheap and keeps the link (a tty's
        output queue): the stream stopped, so it is stale, and a burst of it delivered
        later could take PX4 back into OFFBOARD (px4-offboard.md §3)."""
        return  # a deliberate no-op hook: datagrams are never queued, TCP cannot drop

    def abandon_stalled(self, reason: str) -> None:
        """The peer has taken nothing for too long (`UnsentWatch`): drop what waits, or,
        where queued bytes cannot be dropped (TCP), end the session so they never arrive."""
        self.drop_unsent()

    @property
    def state(self) -> LinkState:
        """The current state; while down, `detail` holds the last reason (refused, missing...)."""
        return self._state

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url} {'up' if self.up else 'down'}>"

    def send(self, data: bytes) -> bool:
        """Queue `data` for the peer; never blocks, never raises.

        False (and counted in `stats.sends_dropped`) when the link is down, has no peer yet
        or its buffer is full.
        """
        taken = False
        if self._state.up:
            try:
                taken = self._write(data)
            except Exception:  # the contract is "never raises"; a failed write is a drop
                taken = False
        if taken:
            self.stats.bytes_out += len(data)
        else:
            self.stats.sends_dropped += 1
        return taken

    @abstractmethod
    def _write(self, data: bytes) -> bool:
        """Push `data` without blocking; True if the transport took it."""

    async def run(self) -> None:
        """Open, read, reconnect, forever, until cancelled; close everything on the way out.

        Open failures and lost sessions are retried after `retry_first_s`, doubling to
        `retry_max_s`; a successful open resets the wait. Only a callback's own exception
        (or cancellation) ends this.
        """
        if self._running:
            raise RuntimeError(f"{self!r}: run() is already running")
        self._running = True
        self._fault = None  # one left over from a previous run() is not this run's business
        retry_s = self.retry_first_s
        try:
            while True:
                session = self._new_session()
                try:
                    await self._open()
                except OSError as exc:
                    session.cancel()
                    await self._close()
                    self._mark_down(self._open_failed_detail(exc), failed_open=True)
                    await asyncio.sleep(retry_s)
                    retry_s = min(retry_s * 2, self.retry_max_s)
                    continue
                except BaseException:  # cancelled mid-open, or a bug: close, then let it go
                    await self._close()
                    raise
                opened_s = asyncio.get_running_loop().time()
                try:
                    self._mark_down(await session)  # down first: sends stop before the close
                finally:
                    await self._close()
                # The backoff starts over after a session that lasted: a peer that accepts
                # and closes at once (ser2net's "port in use") was dialled 10 times a
                # second for ever, each an FC link up and down (review, 2026-11-29).
                if asyncio.get_running_loop().time() - opened_s >= STABLE_SESSION_S:
                    retry_s = self.retry_first_s
                await asyncio.sleep(retry_s)
                retry_s = min(retry_s * 2, self.retry_max_s)
        finally:
            self._running = False
            self._session_end = None
            self._mark_down("closed")

    # --- for subclasses -------------------------------------------------------------

    retry_first_s: float = 0.1
    retry_max_s: float = 2.0

    @abstractmethod
    async def _open(self) -> None:
        """Open the transport (raise OSError on failure); mark up if it is up at once."""

    @abstractmethod
    async def _close(self) -> None:
        """Close whatever `_open` opened, even half-way; return once descriptors are closed."""

    def _open_failed_detail(self, exc: OSError) -> str:
        return f"cannot open {self.url}: {os_error_text(exc)}"

    def _new_session(self) -> asyncio.Future[str]:
        if self._fault is not None:
            fault, self._fault = self._fault, None
            raise fault
        self._session_end = asyncio.get_running_loop().create_future()
        return self._session_end

    def _end_session(self, reason: str) -> None:
        """The transport says the session is over (peer left, device gone, socket error)."""
        end = self._session_end
        if end is not None and not end.done():
            end.set_result(reason)

    def _session_over(self) -> bool:
        end = self._session_end
        return end is None or end.done()

    def _record_fault(self, exc: BaseException) -> None:
        end = self._session_end
        if end is not None and not end.done():
            end.set_exception(exc)
        else:
            self._fault = exc

    def _deliver(self, data: bytes) -> None:
        self.stats.bytes_in += len(data)
        try:
            self._on_bytes(data)
        except Exception as exc:
            self._record_fault(exc)

    def _mark_up(self, detail: str) -> None:
        was_up = self._state.up
        self._failures_told.clear()
        self._state = LinkState(up=True, detail=detail)
        if not was_up:
            self.stats.ups += 1
            self._notify()

    def _mark_down(self, detail: str, *, failed_open: bool = False) -> None:
        """Record why the link is down; `on_state` fires if it was up, or for an open
        failure not reported since it was last up."""
        was_up = self._state.up
        self._state = LinkState(up=False, detail=detail, open_failed=failed_open and not was_up)
        if was_up:
            self.stats.downs += 1
            self._notify()
        elif failed_open and detail not in self._failures_told:
            self._failures_told.add(detail)
            self._notify()

    def _notify(self) -> None:
        try:
            self._on_state(self._state)
        except Exception as exc:
            self._record_fault(exc)


def kernel_outq(fd: int) -> int:
    """Bytes the kernel still holds to send on `fd` (TIOCOUTQ, the same request as
    SIOCOUTQ for a TCP socket: unsent and unacknowledged); 0 where it cannot say."""
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, termios.TIOCOUTQ, b"\0\0\0\0"))[0])
    except OSError:
        return 0


def os_error_text(exc: OSError) -> str:
    """The kernel's words for `exc` ("Connection refused"), not asyncio's wrapping of them."""
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host: {exc.strerror}"
    if isinstance(exc.errno, int) and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc.strerror or exc)
