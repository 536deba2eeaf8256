"""sd_notify for `Type=notify` services: READY, STATUS, WATCHDOG, STOPPING.

Speaks the notify protocol directly (one datagram to $NOTIFY_SOCKET) instead of adding a
dependency. Without $NOTIFY_SOCKET (not under systemd, or in tests that don't set it) every
call is a no-op. Never raises: a broken notify socket must not take the daemon down.
"""

from __future__ import annotations

import os
import socket


class SystemdNotifier:
    def __init__(self, socket_path: str | None = None) -> None:
        path = socket_path if socket_path is not None else os.environ.get("NOTIFY_SOCKET")
        self._address: str | None = None
        self._sock: socket.socket | None = None
        if path:
            # A leading "@" names a socket in the abstract namespace.
            self._address = "\0" + path[1:] if path.startswith("@") else path
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.setblocking(False)
        usec = os.environ.get("WATCHDOG_USEC", "")
        pid = os.environ.get("WATCHDOG_PID", "")
        wanted = usec.isdigit() and (not pid or pid == str(os.getpid()))
        self.watchdog_period_s: float | None = int(usec) / 1e6 if wanted else None

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, *fields: str) -> bool:
        if self._sock is None or self._address is None:
            return False
        try:
            self._sock.sendto("\n".join(fields).encode(), self._address)
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", f"STATUS={status}")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
