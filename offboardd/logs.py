"""structlog set-up: JSON lines for journald (no TTY), key=value on a terminal.

Every log call in offboardd passes fixed keys (`event` plus named fields), never
formatted strings, so logs can be filtered by key (`journalctl -u offboardd -o cat | jq`).

Under systemd, stderr is a stream to journald ($JOURNAL_STREAM names it); each line then
starts with a syslog priority prefix (`<4>` for a warning, sd-daemon(3)) that journald
strips and stores as the entry's priority, so `journalctl -u offboardd -p warning` works.
This module must not log by itself and holds no state beyond structlog's configuration.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, TextIO

import structlog

# structlog level name -> syslog priority (sd-daemon(3): SD_ERR 3, SD_WARNING 4, ...)
_SYSLOG_PRIORITY = {"critical": 2, "exception": 3, "error": 3, "warning": 4, "info": 6,
                    "debug": 7}


class SyslogPrefixRenderer:
    """Wraps a renderer and prefixes its line with `<priority>` for journald."""

    def __init__(self, renderer: structlog.typing.Processor) -> None:
        self._renderer = renderer

    def __call__(self, logger: Any, name: str, event_dict: MutableMapping[str, Any]) -> Any:
        priority = _SYSLOG_PRIORITY.get(str(event_dict.get("level", "info")), 6)
        line = self._renderer(logger, name, event_dict)
        text = line.decode() if isinstance(line, bytes) else str(line)
        return f"<{priority}>{text}"


class LossTolerantStream:
    """stderr for structlog, whose write errors are swallowed: a log line that cannot be
    written must never stop the daemon. `offboardd run 2>&1 | head` (the reader gone:
    BrokenPipeError), a terminal hung up (an SSH session dropped: EIO) or journald gone
    raised out of the log call and killed the daemon mid-flight, with no hand-back."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.lost_writes = 0

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):  # ValueError: the stream was closed
            self.lost_writes += 1
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            self.lost_writes += 1

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()


def stream_is_journal(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """True if `stream` is the journald stream systemd gave us ($JOURNAL_STREAM=dev:inode)."""
    value = (os.environ if environ is None else environ).get("JOURNAL_STREAM", "")
    device, _, inode = value.partition(":")
    if not (device.isdigit() and inode.isdigit()):
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == (int(device), int(inode))


def configure_logging(
    level: str = "info", *, json: bool | None = None, journal: bool | None = None
) -> None:
    """`json`: None = JSON unless stderr is a terminal. `journal`: None = detect journald."""
    stream = sys.stderr
    if json is None:
        json = not stream.isatty()
    if journal is None:
        journal = stream_is_journal(stream)
    renderer: structlog.typing.Processor
    if json:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    if journal:
        renderer = SyslogPrefixRenderer(renderer)
    # JSON needs the traceback as a field; the console renderer formats it itself.
    exceptions: list[structlog.typing.Processor] = (
        [structlog.processors.format_exc_info] if json else []
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *exceptions,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(
            file=LossTolerantStream(stream)),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
