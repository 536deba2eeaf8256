"""The recorder's writer thread: every disk write, off the control loop.

The loop hands over batches through a bounded queue (`Recorder`, recorder.py); this thread
keeps the last `pre_s` of them in memory while no flight is open, opens one folder per
flight (flight.tlog, journal.jsonl, summary.json when it closes), writes and syncs each
batch as it comes (the loop hands one over every `flush_interval_s`: a power loss costs
at most that and the sync's own time, reported as `sync_max_ms`), and keeps the folder
within its disk budget (folders.py). A disk error stops the recording, never the daemon:
it is reported in `status` and the thread goes on draining the queue.

tlog: what QGroundControl, MAVExplorer and pymavlink read, each frame as it went on the
wire (either way) behind its 8-byte big-endian microsecond Unix timestamp.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import structlog

from offboardd.recorder import folders
from offboardd.recorder.clocksync import clock_synced
from offboardd.recorder.settings import RecorderSettings, flights_root
from offboardd.recorder.summary import FlightSummary
from offboardd.recorder.wallclock import shifted

log = structlog.get_logger("offboardd")

TLOG_NAME, JOURNAL_NAME, SUMMARY_NAME = "flight.tlog", "journal.jsonl", "summary.json"
_BUDGET_CHECK_S = 5.0  # the disk budget is checked this often while a flight is open
TLOG_TIMESTAMP = struct.Struct(">Q")  # before each frame: Unix time in microseconds
# The journal's pre-roll is longer than the tlog's: the engage that led to the arming
# (a second of warm-up and more before it) belongs to the flight; it is a few lines.
_JOURNAL_PRE_ROLL_S = 60.0
_JOURNAL_PRE_ROLL_LINES = 2000

# (t_us, frames): frames that went on the wire (either way) at one instant
TlogChunk = tuple[int, Sequence[bytes | bytearray]]


@dataclass
class Batch:
    """What the loop collected since its last hand-over, in order."""

    tlog: list[TlogChunk] = field(default_factory=list)
    journal: list[dict[str, Any]] = field(default_factory=list)  # each with "t" (Unix s)

    def __bool__(self) -> bool:
        return bool(self.tlog or self.journal)


@dataclass(frozen=True)
class Start:
    name: str  # the folder's name
    # What the recorder's stamps moved by when it re-read the wall clock for this flight
    # (wallclock.RecordingClock.anchor): the pre-roll, stamped before, moves with them.
    shift_s: float = 0.0


@dataclass(frozen=True)
class Stop:
    dropped_batches: int  # the loop's count, for the flight's last journal line
    t_s: float | None = None  # the end's stamp (the recorder's clock); None: the wall clock


@dataclass(frozen=True)
class Close:
    dropped_batches: int
    t_s: float | None = None


Item = Batch | Start | Stop | Close


@dataclass
class WriterStatus:
    """Read by the loop (state.recorder); each field is replaced whole, never mutated."""

    flight: str | None = None  # the folder being written
    flight_bytes: int = 0
    # The flight's slowest write + sync of a batch, ms: what a power loss costs beyond
    # flush_interval_s on this medium (an SD card can take hundreds of ms).
    sync_max_ms: float = 0.0
    flights_pruned: int = 0
    error: str | None = None  # the last disk problem (recording of the flight stopped)


class _OpenFlight:
    def __init__(self, folder: Path, order: int) -> None:
        folder.mkdir(parents=True, exist_ok=False)
        (folder / folders.ORDER_NAME).write_text(f"{order}\n", encoding="ascii")
        self.folder = folder
        self.tlog: IO[bytes] = open(folder / TLOG_NAME, "ab")  # noqa: SIM115 (closed in close())
        self.journal: IO[bytes] = open(folder / JOURNAL_NAME, "ab")  # noqa: SIM115
        self.summary = FlightSummary(name=folder.name)
        self.bytes = 0
        self.unsynced = False  # written since the last flush()
        self.stopped = False  # over budget or a disk error: nothing more is written

    def write(self, batch: Batch) -> None:
        if self.stopped:
            return
        pack = TLOG_TIMESTAMP.pack
        parts = [pack(t_us) + bytes(frame) for t_us, frames in batch.tlog for frame in frames]
        data = b"".join(parts)
        lines = []
        for record in batch.journal:
            self.summary.add(record)
            lines.append(json.dumps(record, separators=(",", ":"), default=str))
        text = ("\n".join(lines) + "\n").encode() if lines else b""
        self.tlog.write(data)
        self.journal.write(text)
        self.bytes += len(data) + len(text)
        self.unsynced = self.unsynced or bool(data or text)

    def flush(self) -> None:
        for f in (self.tlog, self.journal):
            f.flush()
            os.fdatasync(f.fileno())  # on the medium: what a power loss cannot take
        self.unsynced = False

    def close(self) -> None:
        for f in (self.tlog, self.journal):
            f.close()
        path = self.folder / SUMMARY_NAME
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as out:
            out.write((json.dumps(self.summary.as_dict(), indent=1) + "\n").encode())
            out.flush()
            os.fsync(out.fileno())  # synced before the rename: never an empty summary
        os.replace(tmp, path)
        folder_fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder_fd)  # the rename itself
        finally:
            os.close(folder_fd)


class Writer:
    def __init__(self, settings: RecorderSettings) -> None:
        self.settings = settings
        self.root = flights_root(settings)
        self.queue: queue.Queue[Item] = queue.Queue(maxsize=settings.queue_batches)
        self.status = WriterStatus()
        self._pre_tlog: deque[TlogChunk] = deque()
        self._pre_journal: deque[dict[str, Any]] = deque(maxlen=_JOURNAL_PRE_ROLL_LINES)
        self._flight: _OpenFlight | None = None
        self._last_budget_s = -1e9
        self._closed_bytes: int | None = None  # the closed flights' folders, last walked
        self._thread = threading.Thread(target=self._run, name="offboardd-recorder", daemon=True)
        self.clock_synced: Callable[[], bool] = clock_synced  # (tests replace it)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                # The loop's batches wake the thread; the timeout only keeps the budget
                # checked when none come. (At the hand-over period it raced them: strace saw
                # it expire ~50 ms before every other batch, an extra wake-up each time.)
                item = self.queue.get(timeout=_BUDGET_CHECK_S)
            except queue.Empty:
                item = None
            try:
                if isinstance(item, Close):
                    self._stop(item.dropped_batches, item.t_s)
                    return
                self._take(item)
                self._periodic()
            except OSError as exc:  # a full or failing disk: stop the flight, not the daemon
                where = exc.filename or (self._flight.folder if self._flight else self.root)
                self._fail(f"{exc.strerror or exc}: {where}")
            except Exception as exc:  # a bug here must not end the thread: the queue would
                self._fail(f"internal error: {exc!r}")  # fill and every batch be dropped

    def _take(self, item: Item | None) -> None:
        if isinstance(item, Batch):
            if self._flight is None:
                self._keep_pre_roll(item)
            else:
                self._write(self._flight, item)
        elif isinstance(item, Start):
            self._open(item)
        elif isinstance(item, Stop):
            self._stop(item.dropped_batches, item.t_s)

    def _keep_pre_roll(self, batch: Batch) -> None:
        tlog, journal = self._pre_tlog, self._pre_journal
        tlog.extend(batch.tlog)
        journal.extend(batch.journal)
        # What is stamped after the newest came before a step back of the wall clock (a Pi
        # without an RTC): out too, or nothing was ever dropped until the clock caught up
        # (an hour's step kept 1.4 M frames: review).
        if tlog:
            newest_us = tlog[-1][0]
            horizon_us = newest_us - int(self.settings.pre_s * 1e6)
            while not horizon_us <= tlog[0][0] <= newest_us:
                tlog.popleft()
        if journal:
            newest_s = journal[-1]["t"]
            horizon_s = newest_s - _JOURNAL_PRE_ROLL_S
            while not horizon_s <= journal[0]["t"] <= newest_s:
                journal.popleft()

    def _open(self, start: Start) -> None:
        if self._flight is not None:
            return
        self._check_budget(force=True)
        synced = self.clock_synced()  # before and after the stamp: NTP may set it in between
        self._flight = flight = _OpenFlight(folders.unique_folder(self.root, start.name),
                                            folders.next_order(self.root))
        folders.mark_clock(flight.folder, synced and self.clock_synced())
        self.status = dataclasses.replace(self.status, flight=flight.folder.name,
                                          flight_bytes=0, sync_max_ms=0.0, error=None)
        flight.write(Batch(*shifted(self._pre_tlog, self._pre_journal, start.shift_s)))
        self._pre_tlog.clear()
        self._pre_journal.clear()

    def _stop(self, dropped_batches: int, t_s: float | None) -> None:
        flight, self._flight = self._flight, None
        if flight is None:
            return
        end = {"t": time.time() if t_s is None else t_s, "kind": "flight", "event": "end",
               "dropped_batches": dropped_batches, "bytes": flight.bytes}
        if not flight.stopped:
            flight.write(Batch(journal=[end]))
            flight.flush()  # the end on the medium: a battery pulled after landing
        else:
            flight.summary.add(end)
        synced = self.clock_synced()
        flight.close()  # the folder's last change (its age stamp): the summary's rename
        folders.mark_clock(flight.folder, synced and self.clock_synced())
        self.status = dataclasses.replace(self.status, flight=None, flight_bytes=0)

    def _write(self, flight: _OpenFlight, batch: Batch) -> None:
        """Written and synced at once: the loop's hand-over period is the interval."""
        started_s = time.monotonic()
        flight.write(batch)
        self._sync(flight, started_s)

    def _sync(self, flight: _OpenFlight, started_s: float) -> None:
        if not flight.unsynced or flight.stopped:
            return
        flight.flush()
        if os.fstat(flight.tlog.fileno()).st_nlink == 0:  # one fstat per hand-over
            # its folder was removed under it (an operator's cleanup): what is written goes
            # nowhere, and nothing said so until the flight ended (review)
            self._fail(f"the flight's files were removed ({flight.folder})")
            return
        took_ms = round((time.monotonic() - started_s) * 1e3, 1)
        self.status = dataclasses.replace(self.status, flight_bytes=flight.bytes,
                                          sync_max_ms=max(self.status.sync_max_ms, took_ms))

    def _periodic(self) -> None:
        flight = self._flight
        if flight is None or flight.stopped:
            return
        self._sync(flight, time.monotonic())  # what else was written (a flight's pre-roll)
        self._check_budget(force=False)

    def _check_budget(self, *, force: bool) -> None:
        now_s = time.monotonic()
        if not force and now_s - self._last_budget_s < _BUDGET_CHECK_S:
            return
        self._last_budget_s = now_s
        flight = self._flight
        if (not force and flight is not None and self._closed_bytes is not None
                and folders.within_budget(self.root, self.settings, self._closed_bytes,
                                          flight.bytes)):
            return  # (the closed flights' folders have not changed: no walk)
        keep = None if flight is None else flight.folder
        verdict = folders.enforce_budget(self.root, self.settings, keep=keep,
                                         clock_synced=self.clock_synced())
        self._closed_bytes = verdict.closed_bytes
        if verdict.pruned:
            pruned = self.status.flights_pruned + len(verdict.pruned)
            self.status = dataclasses.replace(self.status, flights_pruned=pruned)
        if verdict.over and self._flight is not None:
            self._fail(verdict.over)

    def _fail(self, problem: str) -> None:
        flight = self._flight
        if flight is not None and not flight.stopped:
            flight.stopped = True
            with contextlib.suppress(OSError):
                flight.flush()
        error = f"recording stopped: {problem}"
        if error != self.status.error:  # (else only in state.recorder; once per cause)
            log.warning("recording_stopped", problem=problem)
        self.status = dataclasses.replace(self.status, error=error)
