"""A log line that cannot be written never stops the daemon, and a hang-up stops it cleanly.

Found by review: `offboardd run ... 2>&1 | head` killed the daemon at the first log line
after `head` left (BrokenPipeError out of the log call), mid-flight, with no hand-back; an
SSH session that dropped sent SIGHUP, whose default action killed it on the spot, and the
terminal it hung up turned every later log line into EIO.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

from offboardd import runtime

_SCRIPT = (
    "import structlog; from offboardd.logs import configure_logging; "
    "configure_logging(json=True); log = structlog.get_logger('t'); "
    "[log.warning('fc_link', up=False, n=i) for i in range(100)]; "
    "print('survived', flush=True)"
)


def test_a_log_stream_whose_reader_is_gone_does_not_raise() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)  # the reader (`| head`, a dead terminal) is gone: EPIPE on write
    try:
        done = subprocess.run([sys.executable, "-c", _SCRIPT], stderr=write_fd,
                              stdout=subprocess.PIPE, timeout=30, check=False)
    finally:
        os.close(write_fd)
    assert b"survived" in done.stdout, "a failed log write raised out of the log call"


def test_sighup_stops_like_sigterm() -> None:
    async def main() -> list[bool]:
        loop = asyncio.get_running_loop()
        runtime._signal_event(loop)
        return [loop.remove_signal_handler(sig)
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)]

    assert asyncio.run(main()) == [True, True, True], "SIGHUP must release, then exit"
