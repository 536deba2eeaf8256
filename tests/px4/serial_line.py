"""A recording serial line between real PX4 and the daemon: a UART of `baud`, 8N1.

Two ptys joined through this process: PX4's MAVLink module opens one (`mavlink start -d
<px4_path> -b <baud> -m onboard`: an onboard link, as on a companion's UART), the daemon
the other (`serial://<daemon_path>:<baud>`). Each end reads and writes no faster than
the line carries (baud/10 bytes a second each way, the sim's own pty model:
`offboardd.sim.transports.PtyEndpoint`), so what PX4 or the daemon sends beyond it backs
up or drops as on a real UART. Every byte that crosses is decoded and recorded like the
UDP tee's (tee.py), and counted: the bytes each way are what the line carried.
"""

from __future__ import annotations

import time

from offboardd.sim.transports import PtyEndpoint
from tests.px4.tee import TeeRecorder


class SerialLine(TeeRecorder):
    def __init__(self, baud: int) -> None:
        super().__init__()
        self.baud = baud
        # PtyEndpoint's "companion" is whoever opens its slave: PX4 at one end, the daemon
        # at the other.
        self._px4_end = PtyEndpoint(self._px4_bytes, None, baud)
        self._daemon_end = PtyEndpoint(self._daemon_bytes, None, baud)

    @property
    def px4_path(self) -> str:
        return self._px4_end.path

    @property
    def daemon_path(self) -> str:
        return self._daemon_end.path

    @property
    def line_bytes_s(self) -> float:
        return self.baud / 10.0

    def bytes_from_px4(self) -> int:
        return self._px4_end.bytes_from_companion

    def bytes_to_px4(self) -> int:
        return self._daemon_end.bytes_from_companion

    def dropped_bytes(self) -> int:
        """What a full line dropped, both ways (more sent than the line carries)."""
        return self._px4_end.dropped_bytes + self._daemon_end.dropped_bytes

    def _px4_bytes(self, data: bytes) -> None:
        self._daemon_end.send_bytes(data)
        self.from_px4(data, time.monotonic())

    def _daemon_bytes(self, data: bytes) -> None:
        self._px4_end.send_bytes(data)
        self.from_daemon(data, time.monotonic())

    def close(self) -> None:
        self._px4_end.close()
        self._daemon_end.close()
