"""The measuring tee between a peer (daemon, MAVSDK, pymavlink) and the sim, on loopback.

One UDP socket with SO_TIMESTAMPNS: the kernel stamps each datagram as it arrives, so the
proxy's own scheduling never counts in the intervals it reports. Datagrams from the sim go
to the peer (listening in udpin mode, it answers to the proxy's address), everything else
goes to the sim. It records, in CLOCK_REALTIME nanoseconds:
- every setpoint frame from the peer: (ts_ns, msgid, first field, type_mask);
- every change of the mode the sim reports (HEARTBEAT / CURRENT_MODE custom_mode);
- frames per datagram from the sim (the telemetry load the peer really met).

Run as its own process (`python -m bench.proxy PORT SIM_PORT PEER_PORT OUT.json`): it prints
`ready` once bound and writes OUT.json on SIGTERM/SIGINT. It never changes a byte.
"""

from __future__ import annotations

import json
import signal
import socket
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.frames import SETPOINT_IDS, frames, reported_custom_mode, setpoint_fields

# <asm-generic/socket.h>: SO_TIMESTAMPNS (SO_TIMESTAMPNS_OLD, 64-bit timespec on x86-64 and
# aarch64); Python 3.11's socket module does not name it. The cmsg type equals the option.
SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")  # struct timespec on 64-bit Linux
_CMSG_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)
_MAX_DATAGRAM = 65535
_POLL_S = 0.2  # how often a blocked recvmsg looks at the stop flag


@dataclass
class Capture:
    setpoints: list[tuple[int, int, float, int]] = field(default_factory=list)
    modes: list[tuple[int, int]] = field(default_factory=list)
    sim_datagrams: list[tuple[int, int]] = field(default_factory=list)  # (ts_ns, frames)
    frames_from_peer: int = 0
    first_ns: int = 0
    last_ns: int = 0

    def to_json(self) -> dict[str, object]:
        return {"setpoints": self.setpoints, "modes": self.modes,
                "sim_datagrams": self.sim_datagrams,
                "frames_from_peer": self.frames_from_peer,
                "first_ns": self.first_ns, "last_ns": self.last_ns}  # fmt: skip


def _kernel_ns(ancdata: list[tuple[int, int, bytes]]) -> int:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = _TIMESPEC.unpack(data[: _TIMESPEC.size])
            return int(sec) * 1_000_000_000 + int(nsec)
    raise RuntimeError("no SO_TIMESTAMPNS control message: the kernel did not stamp")


def serve(sock: socket.socket, sim: tuple[str, int], peer: tuple[str, int],
          capture: Capture, stop: list[bool]) -> None:  # fmt: skip
    """Forward and record until `stop[0]` is set."""
    last_mode: int | None = None
    sock.settimeout(_POLL_S)
    while not stop[0]:
        try:
            data, ancdata, _flags, source = sock.recvmsg(_MAX_DATAGRAM, _CMSG_SPACE)
        except TimeoutError:
            continue
        except InterruptedError:
            continue
        ts_ns = _kernel_ns(ancdata)
        capture.first_ns = capture.first_ns or ts_ns
        capture.last_ns = ts_ns
        if source[:2] == sim:
            sock.sendto(data, peer)
            count = 0
            for frame in frames(data):
                count += 1
                mode = reported_custom_mode(frame)
                if mode is not None and mode != last_mode:
                    capture.modes.append((ts_ns, mode))
                    last_mode = mode
            capture.sim_datagrams.append((ts_ns, count))
        else:
            sock.sendto(data, sim)
            for frame in frames(data):
                capture.frames_from_peer += 1
                if frame.msgid in SETPOINT_IDS:
                    value, mask = setpoint_fields(frame)
                    capture.setpoints.append((ts_ns, frame.msgid, value, mask))


def main(argv: list[str]) -> int:
    port, sim_port, peer_port, out = int(argv[0]), int(argv[1]), int(argv[2]), Path(argv[3])
    stop = [False]

    def on_signal(_signum: int, _frame: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    # bursts of heavy telemetry must not be dropped while the proxy is descheduled
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.bind(("127.0.0.1", port))
    print("ready", flush=True)
    capture = Capture()
    serve(sock, ("127.0.0.1", sim_port), ("127.0.0.1", peer_port), capture, stop)
    out.write_text(json.dumps(capture.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
