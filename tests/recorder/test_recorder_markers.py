"""A full recorder queue (a disk that stalls) costs batches, never a flight's start or
end (found by review: a dropped Start lost the whole flight, a dropped Stop merged the
next flight into it)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from offboardd.core.events import LandedState
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.recorder.recorder import Recorder
from offboardd.recorder.settings import RecorderSettings
from offboardd.recorder.store import list_flights
from offboardd.recorder.summary import MAX_COMMANDERS, FlightSummary
from offboardd.recorder.writer import Batch, Writer


def _frame(codec: MavlinkCodec) -> bytes:
    return codec.encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 0, 3))


class _FakeEngine:
    def __init__(self) -> None:
        self.vehicle = SimpleNamespace(custom_mode=0, armed=False,
                                       landed_state=LandedState.ON_GROUND,
                                       local_position=None, target=None)
        self.fc_up = True
        self.phase = SimpleNamespace(value="idle")


def _run_cycles(rec: Recorder, eng: _FakeEngine, t0: float, seconds: float,
                dt: float = 0.05, *, paced: bool = False) -> float:
    t = t0
    while t < t0 + seconds:
        if paced:  # real time: the writer keeps up
            time.sleep(dt)
        rec.frame_out(b"\xfd\x00" + b"\x00" * 10)
        rec.journal("sample", t_loop=t)
        rec.cycle(eng, t)  # type: ignore[arg-type]
        t += dt
    return t


def test_a_full_queue_never_loses_a_flights_start(
        tmp_path: Path) -> None:
    """The disk stalls (the writer is not draining), the 8-batch queue fills while
    disarmed, the vehicle arms: the Start item is dropped like a batch. The disk then
    recovers and the vehicle flies 5 s more. Documented cost of a full queue: the batches
    dropped (counted). Seen: no flight folder at all, the whole flight discarded as
    pre-roll, while state.recorder says recording=True."""
    rec = Recorder(RecorderSettings(dir=str(tmp_path), queue_batches=8, post_s=0.5,
                                    flush_interval_s=0.1), MavlinkCodec(1, 191), "run")
    eng = _FakeEngine()
    t = _run_cycles(rec, eng, 0.0, 2.0)  # disarmed; queue fills (thread not started)
    eng.vehicle.armed = True
    t = _run_cycles(rec, eng, t, 0.2)  # the flight opens while the queue is full
    assert rec.dropped_batches > 0  # the queue was full when the flight opened
    rec.start()  # the disk is back
    t = _run_cycles(rec, eng, t, 5.0, paced=True)
    eng.vehicle.armed = False
    t = _run_cycles(rec, eng, t, 1.0, paced=True)
    assert rec.status()["error"] is None
    rec.close()
    flights = list_flights(tmp_path)
    assert flights, "5 s of flight after the disk recovered, and no flight folder"


def test_a_full_queue_never_merges_two_flights(
        tmp_path: Path) -> None:
    """Flight 1 opens, the disk stalls, the queue fills, the vehicle disarms (Stop
    dropped), the disk recovers, flight 2 arms: its Start is ignored by the writer (a
    flight is still open) and flight 2 is written into flight 1's folder."""
    rec = Recorder(RecorderSettings(dir=str(tmp_path), queue_batches=8, post_s=0.2,
                                    flush_interval_s=0.1), MavlinkCodec(1, 191), "run")
    eng = _FakeEngine()
    eng.vehicle.armed = True
    t = _run_cycles(rec, eng, 0.0, 3.0)  # Start queued, then the queue fills
    eng.vehicle.armed = False
    t = _run_cycles(rec, eng, t, 1.0)  # the flight ends while the queue is full
    assert rec.dropped_batches > 0  # full when the vehicle disarmed
    rec.start()
    t = _run_cycles(rec, eng, t, 1.5, paced=True)
    eng.vehicle.armed = True
    t = _run_cycles(rec, eng, t, 3.0, paced=True)
    eng.vehicle.armed = False
    t = _run_cycles(rec, eng, t, 1.0, paced=True)
    rec.close()
    flights = list_flights(tmp_path)
    assert len(flights) == 2, [f.name for f in flights]


def test_pre_roll_stays_bounded_when_the_clock_steps_back(tmp_path: Path) -> None:
    """Found by review: a wall clock stepped back an hour while disarmed (a Pi without an
    RTC) made the pre-roll grow for as long as the step: nothing stamped after the newest
    chunk was ever dropped (6,051 chunks, 242,040 frames after 10 min)."""
    codec = MavlinkCodec(1, 191)
    frame = _frame(codec)
    w = Writer(RecorderSettings(dir=str(tmp_path), pre_s=5.0))  # (thread not started)
    t_us = 2_000_000_000 * 10**6
    for _ in range(100):  # 10 s at 0.1 s/batch before the step
        t_us += 100_000
        w._take(Batch(tlog=[(t_us, [frame] * 40)]))
    t_us -= 3600 * 10**6  # the clock steps back one hour
    for _ in range(6000):  # 10 minutes
        t_us += 100_000
        w._take(Batch(tlog=[(t_us, [frame] * 40)]))
    assert len(w._pre_tlog) <= 60, len(w._pre_tlog)  # ~5 s of 10 chunks/s


def test_a_flights_summary_names_a_bounded_number_of_commanders() -> None:
    """Found by review: every command's reply route went into the summary's list, scanned
    per record: 20,000 rotating routes cost the writer 1.6 s of CPU and filled
    summary.json and every `flights` reply."""
    s = FlightSummary()
    for i in range(20_000):
        s.add({"t": 1.0, "kind": "command", "commander": f"offboardd/v1/reply/req-{i:08d}"})
    assert len(s.commanders) == MAX_COMMANDERS and s.commands == 20_000
