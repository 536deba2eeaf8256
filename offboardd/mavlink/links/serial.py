"""Serial links (`serial://`, `serial_flowcontrol://` with RTS/CTS): a tty read and written
from the event loop without blocking it.

pyserial only opens and configures the port (raw mode, baud, flow control, an exclusive
lock so that a second program cannot interleave bytes); reads and writes go straight to its
non-blocking fd, driven by `loop.add_reader` / `add_writer`, so the hot path is one
`os.read` per wake-up with no task or queue. Writes the tty cannot take at once wait in a
backlog bounded by `MAX_BACKLOG_BYTES`: beyond it the oldest whole sends are dropped
(counted), because a stale setpoint is worse than a lost one. A send already half-written
is never cut, so the byte stream stays frame-aligned.

When the device disappears or errors (EIO from a pty whose master closed, ENXIO from an
unplugged USB adapter, end of file) the link goes down and the path is polled every
`retry_first_s` until it opens again, following symlinks (udev's /dev/serial/by-id/...).

This module must not parse MAVLink.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios
from collections import deque

import serial

from offboardd.mavlink.links.base import (
    MAX_BACKLOG_BYTES,
    BytesCallback,
    Link,
    StateCallback,
    kernel_outq,
)
from offboardd.mavlink.links.url import LinkUrl

__all__ = ["SerialLink"]

_READ_CHUNK = 4096  # bytes per os.read; ~45 ms of a 921600 baud link


class SerialLink(Link):
    """A tty at a fixed baud; RTS/CTS when the scheme is `serial_flowcontrol`."""

    # A missing device is polled at a steady pace: doubling would only delay a reconnect.
    retry_first_s = 0.5
    retry_max_s = 0.5

    def __init__(self, url: LinkUrl, on_bytes: BytesCallback, on_state: StateCallback) -> None:
        super().__init__(url, on_bytes, on_state)
        self._port: serial.Serial | None = None
        self._fd: int | None = None
        self._backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._head_sent = 0  # bytes of _backlog[0] already written

    async def _open(self) -> None:
        try:
            port = serial.Serial(
                port=self.url.device,
                baudrate=self.url.baud,
                rtscts=self.url.scheme == "serial_flowcontrol",
                timeout=0,
                exclusive=True,  # flock: a second reader would steal half of every frame
            )
        except (ValueError, serial.SerialException) as exc:
            raise _open_error(exc) from None
        except termios.error as exc:
            # pyserial does not wrap tcsetattr's: a tty hung up mid-open (a USB FC replugged
            # or rebooting) raised past the link's retry and ended the daemon (review).
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            raise OSError(code, os.strerror(code) if code else str(exc)) from None
        self._port = port
        fd = port.fileno()
        os.set_blocking(fd, False)
        self._fd = fd
        asyncio.get_running_loop().add_reader(fd, self._readable)
        self._mark_up(f"opened {self.url.device} at {self.url.baud} baud")

    def _readable(self) -> None:
        fd = self._fd
        if fd is None:
            return
        try:
            data = os.read(fd, _READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._gone(f"device gone: {exc}")
            return
        if not data:
            self._gone("device gone: end of file (hung up)")
            return
        self._deliver(data)

    def _gone(self, reason: str) -> None:
        self._stop_watching()  # a dead fd stays readable: stop the loop spinning on it
        self._end_session(reason)

    def _stop_watching(self) -> None:
        fd = self._fd
        if fd is not None:
            loop = asyncio.get_running_loop()
            loop.remove_reader(fd)
            loop.remove_writer(fd)
            self._fd = None

    async def _close(self) -> None:
        self._stop_watching()
        self._backlog.clear()
        self._backlog_bytes = self._head_sent = 0
        port, self._port = self._port, None
        if port is not None:
            # What is queued is dropped first: Linux's close of a tty waits (30 s by default)
            # for its output to drain, which a stalled receiver or CTS never lets happen:
            # the loop froze, and systemd killed us before the recorder closed (review).
            with contextlib.suppress(OSError, ValueError, termios.error):
                termios.tcflush(port.fileno(), termios.TCOFLUSH)
            # A device already gone may fail the close; its fd is closed all the same.
            with contextlib.suppress(OSError, serial.SerialException):
                port.close()

    def _open_failed_detail(self, exc: OSError) -> str:
        return f"cannot open {self.url.device}: {exc.strerror or exc}"

    def _write(self, data: bytes) -> bool:
        fd = self._fd
        if fd is None:
            return False
        if not self._backlog:
            try:
                written = os.write(fd, data)
            except (BlockingIOError, InterruptedError):
                written = 0
            except OSError as exc:
                self._gone(f"device gone: {exc}")
                return False
            if written == len(data):
                return True
            self._backlog.append(data)
            self._backlog_bytes = len(data)
            self._head_sent = written
            asyncio.get_running_loop().add_writer(fd, self._writable)
        else:
            self._backlog.append(data)
            self._backlog_bytes += len(data)
        self._trim_backlog()
        return True

    def unsent_bytes(self) -> int:
        fd = self._fd
        if fd is None:
            return 0
        return kernel_outq(fd) + self._backlog_bytes - self._head_sent

    def drop_unsent(self) -> None:
        """The tty's output queue flushed (a pty's buffer too, mostly: TIOCOUTQ reads 0
        there, so only this reaches it) and the backlog dropped; a frame cut half-way is
        garbage the FC's parser resynchronises past."""
        fd = self._fd
        if fd is None:
            return
        with contextlib.suppress(OSError, termios.error):
            termios.tcflush(fd, termios.TCOFLUSH)
        if self._backlog:
            self.stats.sends_dropped += len(self._backlog)
            self._backlog.clear()
            self._backlog_bytes = self._head_sent = 0
            asyncio.get_running_loop().remove_writer(fd)

    def _trim_backlog(self) -> None:
        """Drop the oldest whole sends beyond the bound; never one already half-written."""
        backlog = self._backlog
        while self._backlog_bytes - self._head_sent > MAX_BACKLOG_BYTES and len(backlog) > 1:
            if self._head_sent:
                dropped = backlog[1]
                del backlog[1]
            else:
                dropped = backlog.popleft()
            self._backlog_bytes -= len(dropped)
            self.stats.sends_dropped += 1

    def _writable(self) -> None:
        fd = self._fd
        backlog = self._backlog
        while fd is not None and backlog:
            head = backlog[0]
            try:
                written = os.write(fd, memoryview(head)[self._head_sent :])
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self._gone(f"device gone: {exc}")
                return
            self._head_sent += written
            if self._head_sent < len(head):
                return
            backlog.popleft()
            self._backlog_bytes -= len(head)
            self._head_sent = 0
        if fd is not None:
            asyncio.get_running_loop().remove_writer(fd)


def _open_error(exc: Exception) -> OSError:
    """pyserial's errors as a plain OSError with one clear message (not errno twice)."""
    code = getattr(exc, "errno", None)
    text = getattr(exc, "strerror", None)
    if isinstance(code, int) and (not isinstance(text, str) or text.startswith("could not open")):
        text = os.strerror(code)  # ENOENT, EACCES, EIO...: the kernel's words suffice
    elif not isinstance(text, str):
        text = str(exc)
    elif "exclusively lock" in text:
        text = "device busy: another program holds it open (exclusive lock)"
    return OSError(code, text)
