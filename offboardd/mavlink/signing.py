"""MAVLink 2 signing: the key file, the signature algorithm, incoming checks, the timestamp.

What this module owns:
- `load_key`: 32 bytes from a key file written as 64 hex digits or as base64 text, refused
  unless only its owner (the running user or root) can read it.
- `frame_signature` / `signature_ok`: the spec's algorithm in plain hashlib, independent of
  pymavlink (mavlink.io guide/message_signing: the first 6 bytes of
  SHA-256(secret_key + header + payload + CRC + link_id + timestamp)). pymavlink signs what
  we send; the tests hold its bytes to this.
- `SignatureChecker`: the checks on signed frames we receive, in the spec's order (and the
  MAVLink C library's): signature first, then the per-stream timestamp. pymavlink 2.4.50's
  `check_signature` records a stream's timestamp *before* comparing the signature, so a
  single forged frame with a far-future timestamp would make every genuine frame of that
  stream "old"; and its `allow_unsigned_callback` also admits frames whose signature is
  wrong. The codec therefore decodes with pymavlink and judges signatures here.
- `TimestampStore` / `initial_timestamp`: the timestamp (10 us units since 2015-01-01 UTC)
  seeded from the wall clock and persisted, so that it never goes back across restarts
  (pymavlink starts at 0, which a PX4 holding a later timestamp for our stream refuses).
- `TimestampSaver`: the periodic saves on a thread of their own, never on the control loop
  (an fsync on an SD card takes hundreds of ms; the recorder's writer syncs on its thread
  for the same reason); the save at exit stays synchronous and complete.

This module must not read a clock, log or decide policy beyond the spec: callers pass the
wall time in and log what it returns.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import stat
import struct
import threading
from collections import deque
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from offboardd.errors import ConfigError

if TYPE_CHECKING:
    from offboardd.mavlink.codec import CodecStats, MavlinkCodec

KEY_LEN = 32
SIGNATURE_BLOCK_LEN = 13  # link id (1) + timestamp (6) + signature (6)
SIGNING_EPOCH_UNIX_S = 1_420_070_400  # 2015-01-01T00:00:00Z, the spec's timestamp origin
TICKS_PER_S = 100_000  # one tick = 10 us
# A new stream whose timestamp is more than a minute behind ours is refused (spec, and the
# C library's 6000 * 1000): a key holder restarting with a lost clock, or a replay.
NEW_STREAM_WINDOW_TICKS = 60 * TICKS_PER_S
# Added to the persisted timestamp at start: covers what was sent after the last save,
# which the saver guarantees is less than this (it saves every SAVE_STEP_TICKS).
RESTART_MARGIN_TICKS = 60 * TICKS_PER_S
SAVE_STEP_TICKS = RESTART_MARGIN_TICKS // 2
_MAX_STREAMS = 256  # only key holders create streams; a bound all the same
_TIMESTAMP_MAX = (1 << 48) - 1


class SigningKeyError(ConfigError):
    """The signing key file is missing, unsafe or malformed; the message names file and problem."""


def timestamp_from_unix(wall_s: float) -> int:
    """The signing timestamp for a Unix time (0 before 2015, as PX4 does)."""
    return max(0, int((wall_s - SIGNING_EPOCH_UNIX_S) * TICKS_PER_S))


def load_key(path: str | Path) -> bytes:
    """Read a 32-byte key from `path` (64 hex digits or base64 text, surrounding blanks ignored).

    Refused unless the file is a regular file owned by the running user or root and neither
    group nor others may read or write it (mode & 0o077 == 0): `chmod 600 FILE`.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise SigningKeyError(f"signing key file {path}: cannot open: {exc.strerror}") from None
    try:  # check the file we opened, not a name that could be swapped in between
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SigningKeyError(f"signing key file {path}: not a regular file")
        if info.st_mode & 0o077:
            raise SigningKeyError(
                f"signing key file {path}: mode {stat.S_IMODE(info.st_mode):04o} lets group or "
                f"others access it; allowed only the owner (chmod 600 {path})"
            )
        if info.st_uid not in (os.geteuid(), 0):
            raise SigningKeyError(
                f"signing key file {path}: owned by uid {info.st_uid}; allowed: the user "
                f"running offboardd (uid {os.geteuid()}) or root"
            )
        raw = os.read(fd, 4096)
    finally:
        os.close(fd)
    return _parse_key(path, raw)


def _parse_key(path: Path, raw: bytes) -> bytes:
    text = raw.strip()
    key: bytes | None = None
    if len(text) == 2 * KEY_LEN:
        try:
            key = bytes.fromhex(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            key = None
    if key is None and len(text) == 44:  # base64 of 32 bytes, with its one '=' of padding
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            key = None
    if key is None or len(key) != KEY_LEN:
        raise SigningKeyError(
            f"signing key file {path}: expected {KEY_LEN} bytes written as 64 hex digits or "
            f"44 base64 characters (e.g. `openssl rand -hex 32`), found {len(text)} characters"
        )
    if key == bytes(KEY_LEN):
        raise SigningKeyError(f"signing key file {path}: an all-zero key means 'no signing'")
    return key


def frame_signature(key: bytes, unsigned_part: bytes, link_id: int, timestamp: int) -> bytes:
    """The 6 signature bytes for a frame: `unsigned_part` is header + payload + CRC."""
    block = struct.pack("<BQ", link_id, timestamp)[:7]  # link id + 48-bit little-endian time
    return hashlib.sha256(key + unsigned_part + block).digest()[:6]


def split_signed(frame: bytes | bytearray) -> tuple[bytes, int, int, bytes]:
    """(header + payload + CRC, link id, timestamp, signature) of a signed MAVLink 2 frame."""
    tail = bytes(frame[-SIGNATURE_BLOCK_LEN:])
    return (bytes(frame[:-SIGNATURE_BLOCK_LEN]), tail[0],
            int.from_bytes(tail[1:7], "little"), tail[7:])  # fmt: skip


def signature_ok(key: bytes, frame: bytes | bytearray) -> bool:
    """True if the signed frame's signature matches `key` (its timestamp is not judged)."""
    unsigned_part, link_id, timestamp, sig = split_signed(frame)
    return hmac.compare_digest(frame_signature(key, unsigned_part, link_id, timestamp), sig)


class SignatureChecker:
    """Judges signed frames for one receiving end: 'ok', 'bad_signature' or 'replayed'.

    Streams are (link id, system id, component id); each must increase its timestamp, and
    a new one may start at most a minute behind our own timestamp (the spec's rules).
    """

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._streams: dict[tuple[int, int, int], int] = {}

    def check(self, frame: bytes | bytearray, local_timestamp: int) -> tuple[str, int]:
        """(verdict, the frame's timestamp); only an 'ok' frame updates the stream."""
        unsigned_part, link_id, timestamp, sig = split_signed(frame)
        expected = frame_signature(self._key, unsigned_part, link_id, timestamp)
        if not hmac.compare_digest(expected, sig):
            return "bad_signature", timestamp
        # MAVLink 2 header: magic, len, incompat, compat, seq, sysid (5), compid (6).
        stream = (link_id, frame[5], frame[6])
        last = self._streams.get(stream)
        if last is not None:
            if timestamp <= last:
                return "replayed", timestamp
        elif timestamp + NEW_STREAM_WINDOW_TICKS < local_timestamp:
            return "replayed", timestamp
        elif len(self._streams) >= _MAX_STREAMS:
            return "bad_signature", timestamp
        self._streams[stream] = timestamp
        return "ok", timestamp


def initial_timestamp(wall_s: float, persisted: int | None) -> int:
    """Where signing starts: max(wall clock, persisted + margin), as the spec requires."""
    start = timestamp_from_unix(wall_s)
    if persisted is not None:
        start = max(start, persisted + RESTART_MARGIN_TICKS)
    return min(start, _TIMESTAMP_MAX)


class TimestampStore:
    """The persisted signing timestamp: one decimal number in a small text file.

    Written atomically (temporary file, fsync, rename) so a power cut leaves the old value
    or the new one, never a torn file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> tuple[int | None, str | None]:
        """(timestamp or None, a problem worth logging or None); never raises."""
        try:
            text = self.path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None, None
        except (OSError, UnicodeDecodeError) as exc:
            return None, f"cannot read {self.path}: {exc}"
        if not text.isdigit() or int(text) > _TIMESTAMP_MAX:
            return None, f"{self.path} does not hold a signing timestamp: {text[:40]!r}"
        return int(text), None

    def save(self, timestamp: int) -> None:
        """Replace the file's content with `timestamp`; raises OSError."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, f"{timestamp}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)


class TimestampSaver:
    """Writes a `TimestampStore` from a thread of its own, and synchronously when asked.

    `submit` never waits for the disk: it hands the timestamp to the thread, which writes
    and fsyncs it. At most one save is in flight; a newer timestamp submitted meanwhile
    replaces the one still waiting. Every write (the thread's or `save_now`'s) holds one
    lock and is skipped unless its timestamp is above the last one written, so the file
    never goes back: a late save of the thread's cannot overwrite a newer one.

    The restart guarantee (`RESTART_MARGIN_TICKS`) holds while a save lands within
    SAVE_STEP_TICKS of the timestamp's progress after it was submitted: 30 s for a write
    that takes well under a second even on an SD card.
    """

    def __init__(self, store: TimestampStore) -> None:
        self.store = store
        self._write_lock = threading.Lock()  # one writer of the file (and its .tmp) at a time
        self._written: int | None = None  # the last timestamp the file was given (fsynced)
        self._cond = threading.Condition()  # guards what follows; never held while writing
        self._pending: int | None = None
        self._busy = False
        self._stopping = False
        self._outcomes: deque[str | None] = deque(maxlen=16)  # the thread's: problem or None
        self._thread: threading.Thread | None = None

    def submit(self, timestamp: int) -> None:
        """Have the thread save `timestamp` (started on first use); returns at once."""
        with self._cond:
            self._stopping = False
            if self._pending is None or timestamp > self._pending:
                self._pending = timestamp
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="offboardd-signing-timestamp")
                self._thread.start()
            self._cond.notify_all()

    def outcomes(self) -> list[str | None]:
        """The thread's saves finished since the last call, in order: a problem or None."""
        with self._cond:
            done = list(self._outcomes)
            self._outcomes.clear()
        return done

    def save_now(self, timestamp: int) -> str | None:
        """Save `timestamp` here and now, after any save in flight; a problem or None."""
        with self._cond:  # a save still waiting is older: it is not needed any more
            if self._pending is not None and self._pending <= timestamp:
                self._pending = None
        return self._write(timestamp)

    def close(self) -> None:
        """Stop the thread: a save still waiting is dropped, one in flight finishes."""
        with self._cond:
            self._stopping, self._pending = True, None
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None:
            thread.join()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once nothing is waiting or in flight (for tests and tools)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy,
                                       timeout_s)  # fmt: skip

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._stopping)
                if self._stopping:
                    return
                timestamp, self._pending, self._busy = self._pending, None, True
            assert timestamp is not None
            try:
                problem = self._write(timestamp)
            except Exception as exc:  # a bug here must not end the thread: no save would
                problem = f"cannot save the signing timestamp: internal error: {exc!r}"
            with self._cond:
                self._busy = False
                self._outcomes.append(problem)
                self._cond.notify_all()

    def _write(self, timestamp: int) -> str | None:
        with self._write_lock:
            if self._written is not None and timestamp <= self._written:
                return None  # the file holds this or a later one already
            try:
                self.store.save(timestamp)
            except OSError as exc:
                return f"cannot save the signing timestamp to {self.store.path}: {exc}"
            self._written = timestamp
            return None


class SigningSession:
    """The daemon's signing from start to exit: key, timestamp seeding and saving, reports."""

    def __init__(self, key: bytes, timestamp_file: str | Path) -> None:
        self.key = key
        self.store = TimestampStore(timestamp_file) if str(timestamp_file) else None
        self.saver = TimestampSaver(self.store) if self.store is not None else None
        self._submitted: int | None = None  # the last timestamp handed to the saver
        self._start_problem: str | None = None  # attach's save failed: the first tick says so
        self._last_problem: str | None = None
        self._reported = (0, 0, 0)
        self._report_s = -1e9

    def attach(self, codec: MavlinkCodec, wall_s: float, *, accept_unsigned: bool,
               unsigned_ids: Collection[int]) -> str | None:  # fmt: skip
        """Turn signing on in `codec`, starting at max(wall clock, persisted + margin), and
        save that start here and now: it is on disk before any frame is signed (the daemon
        attaches before its event loop runs). Returns a problem with the persisted
        timestamp worth a warning, or None; a problem saving is the first tick's warning."""
        persisted, problem = self.store.load() if self.store is not None else (None, None)
        start = initial_timestamp(wall_s, persisted)
        codec.enable_signing(self.key, timestamp=start,
                             accept_unsigned=accept_unsigned, unsigned_ids=unsigned_ids)
        if self.saver is not None:
            self._start_problem = self.saver.save_now(start)
            self._submitted = start if self._start_problem is None else None
        return problem

    def tick(self, codec: MavlinkCodec, wall_s: float, *, final: bool = False) -> list[str]:
        """Keep the codec's timestamp at or above the wall clock; hand it to the saver's
        thread once it has moved SAVE_STEP_TICKS since the last save (attach's or a
        hand-over), never waiting for the disk. When `final`, save it here and now (after a
        save in flight) and stop the thread. Returns warnings: a save problem (once per
        distinct problem; the thread's on the tick after it failed, and the save is then
        retried), and refused frames (at most every 10 s)."""
        warnings: list[str] = []
        timestamp = max(codec.signing_timestamp, timestamp_from_unix(wall_s))
        codec.signing_timestamp = timestamp
        if (saver := self.saver) is not None:
            outcomes = saver.outcomes()
            if self._start_problem is not None:
                outcomes.insert(0, self._start_problem)
                self._start_problem = None
            for problem in outcomes:
                self._report(problem, warnings)
            if outcomes and outcomes[-1] is not None:
                self._submitted = None  # it failed: try again now, as a failed save always was
            if final:
                self._report(saver.save_now(timestamp), warnings)
                saver.close()
            elif self._submitted is None or timestamp - self._submitted >= SAVE_STEP_TICKS:
                saver.submit(timestamp)
                self._submitted = timestamp
        st = codec.stats
        refused = (st.bad_signature, st.unsigned_refused, st.replayed)
        # (a wall clock that stepped back starts the 10 s over: it silenced them for as
        # long as the step, an hour for an hour's NTP correction: review)
        if refused != self._reported and not 0.0 <= wall_s - self._report_s < 10.0:
            self._reported, self._report_s = refused, wall_s
            warnings.append(refusal_hint(st) or "")
        return warnings

    def _report(self, problem: str | None, warnings: list[str]) -> None:
        if problem is not None and problem != self._last_problem:
            warnings.append(problem)
        self._last_problem = problem


def refusal_hint(stats: CodecStats) -> str | None:
    """Why the link may look silent: frames refused for their signature, or None."""
    if not (stats.bad_signature or stats.unsigned_refused or stats.replayed):
        return None
    return (
        f"MAVLink frames refused: {stats.bad_signature} with a wrong signature (is the "
        f"flight controller's key the one in mavlink.signing_key_file?), "
        f"{stats.unsigned_refused} unsigned (does it sign? PX4 signs from v1.17 once a key is "
        f"provisioned; see mavlink.accept_unsigned), {stats.replayed} with an old timestamp"
    )
