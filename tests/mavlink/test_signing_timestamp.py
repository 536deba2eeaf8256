"""The signing timestamp: never below the wall clock, monotonic across restarts (persisted).

Wall time is injected (plain floats), so the clock can be made to go back as it does on a
Raspberry Pi without RTC that boots before NTP.
"""

from __future__ import annotations

from pathlib import Path

from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.signing import (
    RESTART_MARGIN_TICKS,
    SAVE_STEP_TICKS,
    TICKS_PER_S,
    SigningSession,
    TimestampStore,
    initial_timestamp,
    timestamp_from_unix,
)

KEY = bytes(range(32))
WALL_S = 1_800_000_000.0  # 2027-01-15
WAIT_S = 5.0  # a deadline for the saver's thread, not an expectation


def _session(path: Path, wall_s: float) -> tuple[SigningSession, MavlinkCodec]:
    codec = MavlinkCodec(1, 191)
    session = SigningSession(KEY, path)
    assert session.attach(codec, wall_s, accept_unsigned=False, unsigned_ids=()) is None
    return session, codec


def _send(codec: MavlinkCodec, frames: int) -> int:
    """Encode `frames` heartbeats; the timestamp the last one carried."""
    frame = b""
    for _ in range(frames):
        frame = codec.encode(dialect.MAVLink_heartbeat_message(18, 8, 0, 0, 4, 3))
    return int.from_bytes(frame[-12:-6], "little")


def test_units_and_seeding() -> None:
    assert timestamp_from_unix(1_420_070_400.0) == 0  # 2015-01-01T00:00:00Z
    assert timestamp_from_unix(1_420_070_401.5) == 150_000  # 10 us units
    assert timestamp_from_unix(0.0) == 0  # a clock before 2015 never goes negative
    wall = timestamp_from_unix(WALL_S)
    assert initial_timestamp(WALL_S, None) == wall
    assert initial_timestamp(WALL_S, wall - 10**9) == wall  # never below the wall clock
    assert initial_timestamp(WALL_S, wall + 5) == wall + 5 + RESTART_MARGIN_TICKS


def test_monotonic_across_restarts_with_a_clock_that_went_back(tmp_path: Path) -> None:
    path = tmp_path / "state" / "signing-timestamp"  # the directory is created on first save
    session, codec = _session(path, WALL_S)
    assert codec.signing_timestamp == timestamp_from_unix(WALL_S)
    # saved as signing is attached, before any frame is signed
    assert TimestampStore(path).load() == (codec.signing_timestamp, None)
    assert session.tick(codec, WALL_S) == []
    last = _send(codec, 500)
    assert session.tick(codec, WALL_S + 1.0, final=True) == []
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    # Restart with the wall clock a day behind (no RTC, no NTP yet).
    _, codec2 = _session(path, WALL_S - 86_400)
    assert codec2.signing_timestamp > max(last, timestamp_from_unix(WALL_S + 1.0))


def test_monotonic_after_a_crash_between_saves(tmp_path: Path) -> None:
    """No final save: the margin covers what was signed since the last periodic save."""
    path = tmp_path / "signing-timestamp"
    session, codec = _session(path, WALL_S)
    session.tick(codec, WALL_S)
    assert session.saver is not None
    saves = 0
    last = 0
    for second in range(1, 200):  # a burst of frames every second, the wall clock advancing
        last = _send(codec, 20)
        before = TimestampStore(path).load()[0]
        session.tick(codec, WALL_S + second)
        assert session.saver.wait_idle(WAIT_S)  # saved on the saver's thread
        saves += TimestampStore(path).load()[0] != before
    assert 1 <= saves <= 200 * TICKS_PER_S // SAVE_STEP_TICKS + 1  # now and then, not always
    session.saver.close()  # the crash: no final save
    _, codec2 = _session(path, 0.0)  # then a clock stuck at 1970
    assert codec2.signing_timestamp > last


def test_a_corrupt_or_unwritable_state_file_is_reported_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "signing-timestamp"
    path.write_text("garbage\n")
    codec = MavlinkCodec(1, 191)
    problem = SigningSession(KEY, path).attach(codec, WALL_S, accept_unsigned=False,
                                               unsigned_ids=())  # fmt: skip
    assert problem is not None and str(path) in problem
    assert codec.signing_timestamp == timestamp_from_unix(WALL_S)  # the wall clock still seeds
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    session = SigningSession(KEY, blocked / "signing-timestamp")  # parent is not a directory
    session.attach(codec, WALL_S, accept_unsigned=False, unsigned_ids=())
    warnings = session.tick(codec, WALL_S)  # attach's save failed: the first tick says so
    assert len(warnings) == 1 and "cannot save the signing timestamp" in warnings[0]
    assert session.saver is not None and session.saver.wait_idle(WAIT_S)  # retried, failed
    assert session.tick(codec, WALL_S + 0.05) == []  # said once, not every tick
    assert session.tick(codec, WALL_S + 60, final=True) == []


def test_the_timestamp_follows_the_wall_clock_and_received_frames(tmp_path: Path) -> None:
    session, codec = _session(tmp_path / "ts", WALL_S)
    session.tick(codec, WALL_S + 100.0)  # NTP stepped the clock forward
    assert codec.signing_timestamp == timestamp_from_unix(WALL_S + 100.0)
    peer = MavlinkCodec(1, 1)
    peer.enable_signing(KEY, timestamp=timestamp_from_unix(WALL_S + 500.0))
    codec.decode(peer.encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3)))
    assert codec.signing_timestamp == timestamp_from_unix(WALL_S + 500.0)  # the spec's max()
    assert session.saver is not None
    session.saver.close()


def test_refused_frames_are_still_reported_after_the_wall_clock_steps_back(
        tmp_path: Path) -> None:
    """The refused-frames warning (at most every 10 s) was timed on the wall clock: after
    a step back of an hour (NTP correcting a clock that ran ahead) it stayed silent for
    that hour, while the FC looked silent for want of a key (review)."""
    session = SigningSession(KEY, "")
    codec = MavlinkCodec(255, 191)
    session.attach(codec, WALL_S, accept_unsigned=False, unsigned_ids=())
    codec.stats.bad_signature = 5
    assert session.tick(codec, WALL_S)  # reported
    codec.stats.bad_signature = 9
    assert not session.tick(codec, WALL_S + 5.0)  # within 10 s: not again
    codec.stats.bad_signature = 50
    assert session.tick(codec, WALL_S - 3600.0)  # the clock stepped back: said at once
