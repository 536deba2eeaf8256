"""RecorderSettings: the `[recorder]` section (issue 17: every flight kept on the companion).

What a flight is (`mode`), where flights go, and the disk they may take. The recorder never
fills the disk: a folder is pruned when flights are older than `max_age_days`, when all of
them take more than `max_total_mb`, or when the file system has less than `min_free_mb`
left; a flight that alone outgrows the budget stops being written (and says so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from offboardd.core.settings_checks import check_ranges, coerce_choice
from offboardd.errors import ConfigError


class RecordMode(StrEnum):
    FLIGHTS = "flights"  # arm -> disarm, with pre_s before and post_s after
    LINK = "link"  # everything while the FC link is up (one folder per link session)
    OFF = "off"


@dataclass(frozen=True)
class RecorderSettings:
    mode: RecordMode = RecordMode.FLIGHTS
    # "": $STATE_DIRECTORY/flights (systemd's StateDirectory=, /var/lib/offboardd under
    # the shipped unit), else /var/lib/offboardd/flights
    dir: str = ""
    pre_s: float = 5.0  # kept in memory while disarmed, written when a flight starts
    post_s: float = 5.0  # recorded after disarm (the landing's last telemetry)
    max_total_mb: float = 2048.0  # all flights together; the oldest go first
    max_age_days: float = 30.0  # 0: no age limit; judged only on an NTP-synced clock
    min_free_mb: float = 256.0  # the file system keeps at least this much free
    # Writes are off the control loop: a bounded queue of batches (one a cycle or so) to a
    # writer thread. When it is full a batch is dropped, counted and reported.
    queue_batches: int = 256
    # The loop hands a batch over this often and the writer writes and syncs it at once: a
    # power loss costs at most this (and a 50 ms tick) plus the medium's sync time
    # (state.recorder.sync_max_ms): under the second issue 17 allows while a sync takes
    # < 0.05 s. Each hand-over wakes the writer and syncs two files: at 0.5 s they were
    # ~11 % of the daemon's CPU more than at 0.9 s (bench/stream-plan.md, "The recorder's
    # hand-overs").
    flush_interval_s: float = 0.9

    def __post_init__(self) -> None:
        coerce_choice(self, "mode", RecordMode)
        if not isinstance(self.dir, str):
            raise ConfigError(f"dir must be a directory path, got {self.dir!r}")
        check_ranges(self, ("pre_s", 0.0, 60.0), ("post_s", 0.0, 600.0),
                     ("max_total_mb", 1.0, 1e7), ("max_age_days", 0.0, 36500.0),
                     ("min_free_mb", 0.0, 1e7), ("flush_interval_s", 0.05, 1.0))
        batches = self.queue_batches
        if isinstance(batches, bool) or not isinstance(batches, int) or not 8 <= batches <= 65536:
            raise ConfigError(f"queue_batches must be an integer in [8, 65536], got {batches!r}")


DEFAULT_STATE_DIR = "/var/lib/offboardd"


def flights_root(settings: RecorderSettings, environ: dict[str, str] | None = None) -> Path:
    """Where flight folders go: `dir`, else under the state directory systemd gives us
    ($STATE_DIRECTORY: the first of its colon-separated list), else /var/lib/offboardd."""
    if settings.dir:
        return Path(settings.dir)
    env = os.environ if environ is None else environ
    state = env.get("STATE_DIRECTORY", "").split(":")[0] or DEFAULT_STATE_DIR
    return Path(state) / "flights"
