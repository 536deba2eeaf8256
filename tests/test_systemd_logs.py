"""Logs: key=value on a terminal, JSON lines otherwise, journald priorities under systemd.

The daemon's own JSON-with-priority output under a fake journald stream is checked in
test_systemd_notify.py; here the pieces, with real pipes and a real pty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import structlog

from offboardd.logs import SyslogPrefixRenderer, stream_is_journal

_SCRIPT = (
    "import structlog; from offboardd.logs import configure_logging; configure_logging(); "
    "structlog.get_logger('t').warning('fc_link', up=False, detail='gone')"
)


def _run_with_stderr(fd: int, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-c", _SCRIPT], stderr=fd, env=env, check=True,
                   timeout=30)


def test_terminal_gets_key_value_and_a_pipe_gets_json() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
    master, slave = os.openpty()
    try:
        _run_with_stderr(slave, env)
        console = os.read(master, 4096).decode()
    finally:
        os.close(master)
        os.close(slave)
    assert "fc_link" in console and "up=False" in console and "detail=gone" in console
    assert "{" not in console and not console.startswith("<")
    read_fd, write_fd = os.pipe()
    try:
        _run_with_stderr(write_fd, env)
        os.close(write_fd)
        line = os.read(read_fd, 4096).decode().strip()
    finally:
        os.close(read_fd)
    record = json.loads(line)
    assert record["event"] == "fc_link" and record["up"] is False
    assert record["level"] == "warning" and record["timestamp"].endswith("Z")


def test_journal_stream_is_recognised_by_device_and_inode() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as reader, os.fdopen(write_fd, "w") as writer:
        st = os.fstat(writer.fileno())
        assert stream_is_journal(writer, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
        assert not stream_is_journal(writer, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"})
        assert not stream_is_journal(writer, {"JOURNAL_STREAM": "garbage"})
        assert not stream_is_journal(writer, {})
        assert reader.readable()


def test_syslog_prefix_carries_the_level() -> None:
    renderer = SyslogPrefixRenderer(structlog.processors.JSONRenderer())
    for level, prefix in (("error", "<3>"), ("warning", "<4>"), ("info", "<6>"),
                          ("debug", "<7>")):
        line = renderer(None, level, {"event": "x", "level": level})
        assert line.startswith(prefix)
        assert json.loads(line[3:]) == {"event": "x", "level": level}
