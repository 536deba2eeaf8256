"""The recorder's loop side: collects what crossed the FC link and what the daemon did,
decides when a flight starts and ends, and hands batches to the writer thread.

Cheap by design (it runs on the control loop): a frame costs a list append (inbound
frames arrive through the codec's `frame_tap`, framed already), a journal record a dict;
once a cycle the batch goes to the writer's bounded queue with `put_nowait`. A full queue
drops the batch: counted, reported in state.recorder and in the flight's last line. The
loop never waits for the disk.

What a flight is: from arming to `post_s` after disarming ("flights"), or from the FC
link coming up to `post_s` after it goes ("link"); the writer adds the `pre_s` before.
"""

from __future__ import annotations

import errno
import math
import os
import queue
from typing import Any

import structlog

from offboardd.core.modes import mode_name
from offboardd.core.offboard import OffboardEngine
from offboardd.mavlink.codec import MavlinkCodec
from offboardd.recorder.folders import folder_name
from offboardd.recorder.settings import RecorderSettings, RecordMode
from offboardd.recorder.wallclock import RecordingClock
from offboardd.recorder.writer import Batch, Close, Item, Start, Stop, Writer

_SAMPLE_PERIOD_S = 0.5  # journal "sample" lines: position, speed, phase, running maxima
_CLOSE_WAIT_S = 3.0
log = structlog.get_logger("offboardd")


class Recorder:
    def __init__(self, settings: RecorderSettings, codec: MavlinkCodec, run_id: str) -> None:
        self.settings = settings
        self.run_id = run_id
        self._codec = codec
        self._writer = Writer(settings)
        self._tap: list[bytes | bytearray] = []
        codec.frame_tap = self._tap
        self._batch = Batch()
        self.dropped_batches = 0
        self.flight_open = False
        self._stop_due_s: float | None = None  # monotonic: when a pending stop is sent
        self._last_sample_s = -math.inf
        self._last_hand_over_s = -math.inf
        self._max_altitude_m = 0.0
        self._max_speed_m_s = 0.0
        self._fc_seen: tuple[Any, ...] = ()
        # Every stamp (tlog, journal, folder name): the wall clock read at a flight's start,
        # the monotonic clock since, so an NTP step mid-flight cannot reorder it (wallclock.py)
        self.clock = RecordingClock()
        self.failed: str | None = None  # why recording stopped for good (a bug)

    def start(self) -> None:
        self._check_folder()
        self._writer.start()

    def _check_folder(self) -> None:
        """Say at once, in the journal, when flights cannot be written where they would go:
        found only in `state.recorder.error` after a flight otherwise (a non-root
        `offboardd run` outside systemd defaults to /var/lib/offboardd/flights)."""
        root = self._writer.root
        hint = "set [recorder] dir, or mode = \"off\""
        try:
            root.mkdir(parents=True, exist_ok=True)
            writable = os.access(root, os.W_OK | os.X_OK)
            problem = "" if writable else "not writable by this user"
        except OSError as exc:
            problem = exc.strerror or str(exc)
            if exc.errno == errno.EROFS:  # the unit's ProtectSystem=strict, most likely
                hint = (f"under the systemd unit, allow it: `systemctl edit offboardd`, add "
                        f"[Service] ReadWritePaths={root}; or {hint}")
        if problem:
            log.warning("recorder_folder_unusable", folder=str(root), problem=problem,
                        hint=hint)

    def close(self) -> None:
        """Stop: the open flight is closed (after its batch) and the thread joined."""
        self._codec.frame_tap = None
        self._hand_over()
        try:
            self._writer.queue.put(Close(self.dropped_batches, self._stamp_s()),
                                   timeout=_CLOSE_WAIT_S)
        except queue.Full:
            return
        self._writer.join(_CLOSE_WAIT_S)

    # -- what crossed the link -----------------------------------------------------------

    def frames_in(self) -> None:
        """After a decode: the frames the codec framed, stamped now."""
        if self._tap and self.failed is None:
            self._batch.tlog.append((self.clock.unix_us(), self._tap))
            self._tap = []
            self._codec.frame_tap = self._tap

    def frame_out(self, frame: bytes) -> None:
        if self.failed is None:
            self._batch.tlog.append((self.clock.unix_us(), (frame,)))

    # -- what the daemon did -------------------------------------------------------------

    def journal(self, kind: str, **fields: Any) -> None:
        if self.failed is None:
            self._batch.journal.append({"t": self._stamp_s(), "kind": kind, **fields})

    def _stamp_s(self) -> float:
        return round(self.clock.unix_s(), 4)  # a journal line's "t": 0.1 ms

    # -- once a cycle --------------------------------------------------------------------

    def cycle(self, engine: OffboardEngine, now_s: float) -> None:
        """Follow the FC (mode, arming), open and close flights, sample, hand over.

        The recorder is not needed to fly: a bug in it turns recording off (state.recorder
        says why) rather than failing the cycle that streams the setpoints."""
        if self.failed is not None:
            return
        try:
            self._cycle(engine, now_s)
        except Exception as exc:
            self.failed = f"recording off after an internal error: {exc!r}"
            self._codec.frame_tap = None
            self._tap, self._batch = [], Batch()
            log.exception("recorder_failed")

    def _cycle(self, engine: OffboardEngine, now_s: float) -> None:
        vehicle = engine.vehicle
        fc_state = (vehicle.custom_mode, vehicle.armed, vehicle.landed_state)
        if fc_state != self._fc_seen and vehicle.custom_mode is not None:  # (FC not heard)
            self._fc_seen = fc_state
            self.journal("fc", mode=mode_name(vehicle.custom_mode), armed=vehicle.armed,
                         landed=vehicle.landed_state.name.lower())
        wanted = vehicle.armed if self.settings.mode is RecordMode.FLIGHTS else engine.fc_up
        if wanted:
            self._stop_due_s = None
            if not self.flight_open:
                self._open(engine)
        elif self.flight_open:
            if self._stop_due_s is None:
                self._stop_due_s = now_s + self.settings.post_s
            elif now_s >= self._stop_due_s:
                self._close_flight()
        self._follow_position(engine, now_s)
        # A batch goes to the writer every flush_interval_s, not every cycle, and the writer
        # syncs each as it comes: a power loss costs at most about that interval, and the
        # writer wakes about once a second by default (it woke 5 times, and synced on its own
        # clock, up to 0.7 s late: bench/stream-plan.md).
        if now_s - self._last_hand_over_s >= self.settings.flush_interval_s:
            self._last_hand_over_s = now_s
            self._hand_over()

    def _open(self, engine: OffboardEngine) -> None:
        self.flight_open = True
        self._max_altitude_m = self._max_speed_m_s = 0.0
        self._hand_over()  # what came before goes to the pre-roll
        shift_s = self.clock.anchor()  # a step since the last flight counts from this one
        self._put(Start(folder_name(self.clock.unix_s()), shift_s))
        target = engine.vehicle.target
        self.journal("flight", event="start", run_id=self.run_id, mode=self.settings.mode.value,
                     phase=engine.phase.value, own_system_id=self._codec.system_id,
                     own_component_id=self._codec.component_id,
                     fc_system_id=None if target is None else target.system_id,
                     fc_component_id=None if target is None else target.component_id)

    def _close_flight(self) -> None:
        self.flight_open = False
        self._stop_due_s = None
        self._hand_over()
        self._put(Stop(self.dropped_batches, self._stamp_s()))

    def _follow_position(self, engine: OffboardEngine, now_s: float) -> None:
        position = engine.vehicle.local_position
        if position is None or not self.flight_open:
            return
        speed_m_s = math.sqrt(position.north_m_s ** 2 + position.east_m_s ** 2
                              + position.down_m_s ** 2)
        self._max_altitude_m = max(self._max_altitude_m, -position.down_m)
        self._max_speed_m_s = max(self._max_speed_m_s, speed_m_s)
        if now_s - self._last_sample_s >= _SAMPLE_PERIOD_S:
            self._last_sample_s = now_s
            self.journal("sample", phase=engine.phase.value,
                         mode=mode_name(engine.vehicle.custom_mode),
                         north_m=round(position.north_m, 3), east_m=round(position.east_m, 3),
                         down_m=round(position.down_m, 3), speed_m_s=round(speed_m_s, 3),
                         max_altitude_m=round(self._max_altitude_m, 3),
                         max_speed_m_s=round(self._max_speed_m_s, 3))

    def _hand_over(self) -> None:
        if self._batch:
            batch, self._batch = self._batch, Batch()
            self._put(batch)

    def _put(self, item: Item) -> None:
        try:
            self._writer.queue.put_nowait(item)
        except queue.Full:  # the disk is slower than the link: lose data, never time
            if not isinstance(item, Start | Stop):
                self.dropped_batches += 1
                return
            # A flight's start or end is never lost: it goes in past the bound (a few bytes;
            # a dropped Start lost the whole flight, a dropped Stop merged the next one into
            # it: review). queue.Queue's own lock and condition, as its put does.
            q = self._writer.queue
            with q.mutex:
                q.queue.append(item)
                q.unfinished_tasks += 1
                q.not_empty.notify()

    @property
    def open_flight(self) -> str | None:
        """The folder name of the flight being written now (read from any thread)."""
        return self._writer.status.flight if self.flight_open else None

    # -- state.recorder ------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        writer = self._writer.status
        return {
            "mode": self.settings.mode.value,
            "dir": str(self._writer.root),
            # (a flight whose writing stopped on a disk error is open, and not recorded)
            "recording": self.flight_open and writer.error is None,
            "flight": writer.flight,
            "flight_bytes": writer.flight_bytes,
            "sync_max_ms": writer.sync_max_ms,
            "dropped_batches": self.dropped_batches,
            "flights_pruned": writer.flights_pruned,
            "error": self.failed or writer.error,
        }
