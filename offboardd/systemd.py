"""sd_notify for `Type=notify` services: READY, STATUS, WATCHDOG, STOPPING.

Speaks the notify protocol directly (one datagram of newline-separated `KEY=value` lines
to $NOTIFY_SOCKET, see sd_notify(3)) instead of adding a dependency. Without
$NOTIFY_SOCKET (not under systemd, or in tests that don't set it) every call is a no-op.
Never raises: a broken notify socket must not take the daemon down.

The watchdog period comes from $WATCHDOG_USEC (set by systemd from `WatchdogSec=`), and
only applies to us when $WATCHDOG_PID is unset or names this process. Feeding it is the
runtime's job (from its one timer, so a stalled event loop stops feeding it).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any


class SystemdNotifier:
    """One notify socket; `environ` defaults to os.environ (tests pass their own)."""

    def __init__(
        self, socket_path: str | None = None, *, environ: Mapping[str, str] | None = None
    ) -> None:
        env = os.environ if environ is None else environ
        path = socket_path if socket_path is not None else env.get("NOTIFY_SOCKET")
        self._address: str | None = None
        self._sock: socket.socket | None = None
        if path:
            # A leading "@" names a socket in the abstract namespace.
            self._address = "\0" + path[1:] if path.startswith("@") else path
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.setblocking(False)
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        wanted = usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid()))
        self.watchdog_period_s: float | None = int(usec) / 1e6 if wanted else None

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, *fields: str) -> bool:
        """Send `KEY=value` fields in one datagram; False if not under systemd or it failed."""
        if self._sock is None or self._address is None:
            return False
        try:
            self._sock.sendto("\n".join(fields).encode(), self._address)
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", _status(status))

    def status(self, status: str) -> bool:
        return self.notify(_status(status))

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", _status(status))

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _status(text: str) -> str:
    """One STATUS= field: a newline in the text would start a new (forged) assignment."""
    return "STATUS=" + " ".join(text.split("\n"))


def status_line(state: dict[str, Any], broker_connected: bool | None) -> str:
    """What `systemctl status offboardd` shows: the FC, the broker, the phase."""
    if state["fc_link"] == "up":
        fc = f"flight controller sysid {state['fc_system_id']} up"
        if state["fc_version"]:
            fc += f" (PX4 {state['fc_version']})"
    elif state["fc_link"] == "lost":
        fc = "flight controller lost"
    else:
        fc = "waiting for the flight controller"
    parts = [fc]
    if broker_connected is not None:
        parts.append("broker connected" if broker_connected else "waiting for the broker")
    phase = state["phase"] + (f" ({state['reason']})" if state["reason"] else "")
    return "; ".join([*parts, phase])
