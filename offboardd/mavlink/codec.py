"""Bytes <-> pymavlink messages: the only place that frames, decodes and numbers MAVLink.

pymavlink is used strictly as a codec (design.md): one `MAVLink(None, sysid, compid)`
object per link end builds and packs messages; our own framer splits the byte stream so
that frames we cannot or need not decode are counted and skipped without exceptions.

This module must not do I/O, read a clock or log: the runtime owns those.

The full dialect is `development`, a superset of `common` that also holds CURRENT_MODE
(#436), which PX4 v1.15+ sends and pymavlink 2.4.50 has only there (px4-offboard.md §5).
The daemon's codec uses `slim_dialect`, generated from the same definitions with only the
messages the daemon uses (slim_dialect_gen.py: 1.1 MB of RSS instead of 5.3). Messages
unknown to a codec's dialect (EVENT #410, CURRENT_EVENT_SEQUENCE...) are counted, not
raised.

MAVLink 2 signing (`enable_signing`): pymavlink signs what we encode; what we decode is
judged by `signing.SignatureChecker` (see there why not by pymavlink), and every message
`decode()` returns has passed it. Frames skipped as unwanted are never decoded nor returned.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from offboardd.mavlink import slim_dialect
from offboardd.mavlink.frame_layout import (
    CRC_LEN,
    HEADER_LEN_V1,
    HEADER_LEN_V2,
    IFLAG_SIGNED,
    MAGIC_V1,
    MAGIC_V2,
    SIGNATURE_LEN,
    frame_shape,
    next_magic,
)
from offboardd.mavlink.lean import LeanDecoder, crc_matches
from offboardd.mavlink.lean import mcrf4xx as _mcrf4xx
from offboardd.mavlink.signing import SignatureChecker

# (and `dialect`, the full dialect, through __getattr__)
__all__ = ["CodecStats", "MavlinkCodec", "Message", "full_dialect", "message_id", "slim_dialect"]

# pymavlink ships no type information and its messages grow attributes per type, so a
# decoded message is `Any` to mypy; translate.py turns them into typed core events.
Message: TypeAlias = Any
FULL_DIALECT = "pymavlink.dialects.v20.development"


def full_dialect() -> Any:
    """pymavlink's `development` dialect (every message; 5.7 MB of RSS), imported when first
    asked for: by the sim, the doctor, the log tools, and a daemon that relays a message
    the slim dialect lacks. The daemon's own messages are in `slim_dialect` (the same
    frames: slim_dialect_gen.py)."""
    return importlib.import_module(FULL_DIALECT)


def __getattr__(name: str) -> Any:
    """`codec.dialect`: the full dialect, loaded on first use (PEP 562)."""
    if name == "dialect":
        return full_dialect()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# Bytes we keep while waiting for the rest of a frame; the largest MAVLink 2 frame is 280.
_MAX_FRAME_LEN = HEADER_LEN_V2 + 255 + CRC_LEN + SIGNATURE_LEN


@dataclass
class CodecStats:
    """What the decoder has seen; all counters only grow."""

    frames_ok: int = 0
    bad_crc: int = 0  # frames that looked whole but failed CRC or payload checks
    unknown_id: int = 0  # whole frames of a message id our dialect lacks (EVENT...)
    filtered: int = 0  # whole frames skipped because their id is not wanted
    thinned: int = 0  # whole wanted frames skipped: one of their id decoded too recently
    garbage_bytes: int = 0  # bytes thrown away while looking for a frame start
    frames_sent: int = 0
    # signing (only while a key is set): whole, CRC-valid frames refused
    bad_signature: int = 0  # signed with another key, or tampered with
    unsigned_refused: int = 0  # unsigned (or MAVLink 1) and not allowed unsigned
    replayed: int = 0  # right signature, timestamp not newer than the stream's last

    @property
    def frames_bad(self) -> int:
        return self.bad_crc + self.unknown_id


class MavlinkCodec:
    """Encode with our identity and our own sequence counter; decode a byte stream.

    `wanted_ids`: when given, frames with other message ids are skipped at frame level
    (no CRC check, no object built): the daemon needs a few dozen of PX4's ~32 stream types.
    `lean_ids`: messages decoded into light named tuples instead of pymavlink objects
    (lean.py), for a consumer that only reads fields and the `get_*()` ids.
    """

    def __init__(
        self,
        system_id: int,
        component_id: int,
        *,
        wanted_ids: Collection[int] | None = None,
        min_interval_s: Mapping[int, float] | None = None,
        lean_ids: Collection[int] = (),
        dialect: Any = None,
    ) -> None:
        """`dialect`: the pymavlink dialect module whose messages it decodes (None: the
        full one; the daemon passes `slim_dialect`, fc_codec.py)."""
        dialect = full_dialect() if dialect is None else dialect
        self.dialect = dialect
        self._known_ids = frozenset(dialect.mavlink_map)
        self.mav = dialect.MAVLink(None, srcSystem=system_id, srcComponent=component_id)
        self.mav.robust_parsing = True
        # Decoding uses a key-less twin, so pymavlink never judges signatures (we do).
        self._rx = dialect.MAVLink(None, srcSystem=system_id, srcComponent=component_id)
        self._checker: SignatureChecker | None = None
        self._accept_unsigned = True
        self._unsigned_ids: frozenset[int] = frozenset()
        self.stats = CodecStats()
        self._wanted: frozenset[int] | None = (
            frozenset(wanted_ids) if wanted_ids is not None else None
        )
        # Thinning: decode a message id at most once per interval and sender (when decode
        # gets `now_s`).
        # PX4 sends ATTITUDE at 100/s and the daemon needs ~20/s: skipping at frame level
        # saves the CRC check, the unpacking and the message object (bench/README.md).
        gaps_s = dict(min_interval_s or {})
        # What decode() does with a message id, in one lookup: its thinning interval
        # (0.0: decode every one); with `wanted_ids`, an id missing here is skipped.
        self._rules: dict[int, float] = (
            {msg_id: gaps_s.get(msg_id, 0.0) for msg_id in self._wanted}
            if self._wanted is not None else gaps_s
        )
        self._last_decoded_s: dict[int, float] = {}  # id | system << 24 | component << 32
        # The newest frame of each thinned (id, sender) whose window opened since the last
        # take_held(), decoded then: the freshest of a poll's backlog, never its oldest.
        # Decoding the first of a window and skipping the rest handed the engine the
        # oldest position of a stall's backlog as if new: a hold 12 m behind (review).
        self._held: dict[int, tuple[bytes, int]] = {}
        self._lean = LeanDecoder(lean_ids, dialect)
        # Each known id's CRC_EXTRA, to check a frame's CRC in C before pymavlink decodes it:
        # a frame pymavlink refuses costs it ~25 us in exceptions, and a flood of crafted
        # bad frames ("FE 00" repeated: a MAVLink 1 header every two bytes) then stalled
        # the stream for seconds (review; tests/integration/test_udp_garbage_flood.py).
        self._crc_extra = {msg_id: bytes((cls.crc_extra,))
                           for msg_id, cls in dialect.mavlink_map.items()}
        self._buf = bytearray()
        # The flight recorder's tap (recorder.py): when set, every whole frame decode()
        # frames (decoded, thinned or filtered alike) is appended, as it came on the wire.
        self.frame_tap: list[bytes | bytearray] | None = None
        self._last_message: Message = None  # encode()'s last, for _resequenced
        self._last_frame = b""

    @property
    def system_id(self) -> int:
        return int(self.mav.srcSystem)

    @property
    def component_id(self) -> int:
        return int(self.mav.srcComponent)

    def enable_signing(
        self,
        key: bytes,
        *,
        timestamp: int,
        link_id: int = 0,
        accept_unsigned: bool = False,
        unsigned_ids: Collection[int] = (),
    ) -> None:
        """Sign every frame we encode; refuse received frames signed wrongly or replayed, and
        unsigned ones unless `accept_unsigned` or their id is in `unsigned_ids`."""
        signing = self.mav.signing
        signing.secret_key = key
        signing.link_id = link_id
        signing.timestamp = timestamp
        signing.sign_outgoing = True
        self._checker = SignatureChecker(key)
        self._accept_unsigned = accept_unsigned
        self._unsigned_ids = frozenset(unsigned_ids)

    @property
    def signing(self) -> bool:
        return self._checker is not None

    @property
    def signing_timestamp(self) -> int:
        """The next signing timestamp (10 us units since 2015); pymavlink adds 1 per frame."""
        return int(self.mav.signing.timestamp)

    @signing_timestamp.setter
    def signing_timestamp(self, value: int) -> None:
        self.mav.signing.timestamp = value

    def encode(self, msg: Message) -> bytes:
        """Pack `msg` as MAVLink 2 with the next sequence number.

        `pack()` reads `mav.seq` but does not advance it (only `MAVLink.send` does,
        and we never use its file object): the codec is the one place that counts.
        """
        mav = self.mav
        last = self._last_frame
        if (msg is self._last_message and not mav.signing.sign_outgoing and last[0] == MAGIC_V2
                and not last[2] & IFLAG_SIGNED  # (the CRC is then the frame's last two bytes)
                and last[5] == mav.srcSystem and last[6] == mav.srcComponent):
            frame = self._resequenced(last, msg.crc_extra)
        else:
            frame = msg.pack(mav)
        self._last_message, self._last_frame = msg, frame
        mav.seq = (mav.seq + 1) % 256
        self.stats.frames_sent += 1
        return frame

    def _resequenced(self, frame: bytes, crc_extra: int) -> bytes:
        """`frame` (MAVLink 2, unsigned) with our next sequence number and its CRC.

        The stream sends one message object tick after tick while the setpoint holds
        (translate_out.SetpointMessages); only the sequence byte differs from the last
        frame, so it is patched rather than the message packed again (bench/stream-plan.md).
        """
        out = bytearray(frame)
        out[4] = self.mav.seq
        crc = self.dialect.x25crc(out[1:-2])
        crc.accumulate(bytes((crc_extra,)))
        out[-2] = crc.crc & 0xFF
        out[-1] = crc.crc >> 8
        return bytes(out)

    def decode(self, data: bytes, now_s: float | None = None) -> list[Message]:
        """Feed received bytes; return every whole, valid, wanted message in them.

        Partial frames wait in the buffer for the next call. Nothing raises: garbage,
        bad CRCs and unknown ids are counted in `stats` and skipped. With `now_s` (the
        caller's clock: this module reads none) ids given a `min_interval_s` are thinned.
        """
        # Datagrams hold whole frames: frame them in place and keep only an unfinished
        # tail. This loop runs for every frame PX4 sends (~600 a second under the px4
        # load, most skipped), so it keeps its state in locals and parses MAVLink 2
        # headers inline (frame_shape is the same rule, for MAVLink 1 and short data).
        buf: bytes | bytearray = data if not self._buf else self._buf + data
        rules, filtering, last = self._rules, self._wanted is not None, self._last_decoded_s
        held = self._held
        thinning = now_s is not None
        stats = self.stats
        tap = self.frame_tap
        known_ids = self._known_ids
        filtered = thinned = 0
        out: list[Message] = []
        pos = 0
        end = len(buf)
        while pos < end:
            magic = buf[pos]
            if magic == MAGIC_V2 and end - pos >= HEADER_LEN_V2:
                frame_len = (HEADER_LEN_V2 + buf[pos + 1] + CRC_LEN
                             + (SIGNATURE_LEN if buf[pos + 2] & IFLAG_SIGNED else 0))
                msg_id = buf[pos + 7] | (buf[pos + 8] << 8) | (buf[pos + 9] << 16)
            elif magic in (MAGIC_V2, MAGIC_V1):
                frame_len, msg_id = frame_shape(buf, pos, end)
            else:
                nxt = next_magic(buf, pos + 1)
                stats.garbage_bytes += (nxt if nxt >= 0 else end) - pos
                pos = nxt if nxt >= 0 else end
                continue
            if frame_len < 0 or pos + frame_len > end:
                if self._stray_header(buf, pos, end):
                    stats.garbage_bytes += 1
                    pos += 1
                    continue
                break  # header or body not all here yet
            after = pos + frame_len
            # A frame we do not CRC-check (unwanted, thinned, or an id our dialect lacks)
            # is trusted only if another frame or the end of the data follows it;
            # otherwise it is probably garbage holding a magic byte: resynchronise.
            plausible = after == end or buf[after] == MAGIC_V2 or buf[after] == MAGIC_V1
            gap_s = rules.get(msg_id) if filtering else rules.get(msg_id, 0.0)
            # Not wanted, or an id our dialect lacks (no CRC_EXTRA to check it with):
            # counted and skipped undecoded, if plausible.
            if gap_s is None or msg_id not in known_ids:
                if not plausible:
                    stats.garbage_bytes += 1
                    pos += 1
                    continue
                if gap_s is None:
                    filtered += 1
                else:
                    stats.unknown_id += 1
                if tap is not None:
                    tap.append(buf[pos:after])
                pos = after
                continue
            source_key = -1
            if gap_s and thinning:
                assert now_s is not None
                # per sender: a second vehicle on a shared link sending the same message
                # just ahead of ours once took every window, and our FC's position was
                # thinned away (review)
                at = pos + 5 if magic == MAGIC_V2 else pos + 3
                source_key = msg_id | buf[at] << 24 | buf[at + 1] << 32
                if plausible:
                    opens = now_s - last.get(source_key, -math.inf) >= gap_s
                    if not opens:
                        thinned += 1  # (this one, or the older one held: it replaces it)
                    # A window opens (held; the newest of it decoded by take_held), or a
                    # newer frame replaces the one held. Its signature is judged now, in
                    # the order the frames came: judged at take_held, after a newer frame of
                    # its stream, it read as replayed.
                    if (opens or source_key in held) and (
                            self._checker is None
                            or self._signature_allows(buf, pos, after, msg_id)):
                        if opens:
                            last[source_key] = now_s
                            if len(held) >= 4096:
                                held.clear()  # (many senders, forged ones: as `last` below)
                        held[source_key] = (bytes(buf[pos:after]), msg_id)
                    if tap is not None:
                        tap.append(buf[pos:after])
                    pos = after
                    continue
            msg = self._decode_frame(buf[pos:after], msg_id)
            if msg is None:
                # A bad frame may be garbage that happened to hold a magic byte:
                # resynchronise one byte further instead of trusting its length.
                stats.garbage_bytes += 1
                pos += 1
                continue
            if self._checker is not None and not self._signature_allows(buf, pos, after, msg_id):
                pass  # counted by _signature_allows
            else:
                stats.frames_ok += 1
                out.append(msg)
                if source_key >= 0:  # (an implausible frame of a thinned id, decoded now)
                    assert now_s is not None
                    if len(last) >= 4096 and source_key not in last:
                        last.clear()  # many senders (forged ones): start the windows over
                    last[source_key] = now_s
            if tap is not None:
                tap.append(buf[pos:after])
            pos = after
        stats.filtered += filtered
        stats.thinned += thinned
        self._buf = bytearray(buf[pos:]) if pos < end else bytearray()
        if len(self._buf) > 4 * _MAX_FRAME_LEN:  # cannot happen with a sane framer
            stats.garbage_bytes += len(self._buf)
            self._buf.clear()
        return out

    def take_held(self) -> list[Message]:
        """The thinned ids' frames held by decode(): the newest of each window opened since
        the last call, per sender, decoded now (call it once per poll of the link, after
        reading it). A bad one is counted as decode() counts it."""
        if not self._held:
            return []
        held, self._held = self._held, {}
        out: list[Message] = []
        stats = self.stats
        for frame, msg_id in held.values():
            msg = self._decode_frame(frame, msg_id)  # (its signature judged in decode)
            if msg is None:
                stats.garbage_bytes += len(frame)
            else:
                stats.frames_ok += 1
                out.append(msg)
        return out

    def _signature_allows(self, buf: bytes | bytearray, pos: int, after: int, msg_id: int) -> bool:
        assert self._checker is not None
        if buf[pos] == MAGIC_V2 and buf[pos + 2] & IFLAG_SIGNED:
            verdict, timestamp = self._checker.check(buf[pos:after], self.signing_timestamp)
            if verdict == "ok":  # the spec: our next timestamp is at least what we accepted
                self.signing_timestamp = max(self.signing_timestamp, timestamp)
                return True
            if verdict == "replayed":
                self.stats.replayed += 1
            else:
                self.stats.bad_signature += 1
            return False
        if self._accept_unsigned or msg_id in self._unsigned_ids:
            return True
        self.stats.unsigned_refused += 1
        return False

    def _stray_header(self, buf: bytes | bytearray, pos: int, end: int) -> bool:
        """Whether the unfinished frame at `pos` is garbage: a whole frame with a good CRC
        starts inside the bytes it claims. Without this, a damaged header claiming 255
        bytes holds back every frame behind it until that many bytes have come (found by
        fuzzing: over ten seconds on a heartbeat-only link). A false proof needs a 16-bit
        CRC collision; only a MAVLink frame tunnelled inside another could fool it."""
        nxt = next_magic(buf, pos + 1)
        while nxt >= 0:
            frame_len, msg_id = frame_shape(buf, nxt, end)
            # only an id our dialect knows has a CRC_EXTRA, so only such a frame proves it
            if (frame_len > 0 and nxt + frame_len <= end and msg_id in self._known_ids
                    and self._crc_ok(buf[nxt : nxt + frame_len], msg_id)):
                try:
                    self._rx.decode(bytearray(buf[nxt : nxt + frame_len]))
                except Exception:  # not a frame: keep looking
                    pass
                else:
                    return True
            nxt = next_magic(buf, nxt + 1)
        return False

    def _crc_ok(self, frame: bytes | bytearray, msg_id: int) -> bool:
        """Whether a whole frame of a known id carries the right CRC (True without fastcrc:
        pymavlink then checks it alone)."""
        if _mcrf4xx is None:
            return True
        crc_at = (HEADER_LEN_V2 if frame[0] == MAGIC_V2 else HEADER_LEN_V1) + frame[1]
        return crc_matches(frame, crc_at, self._crc_extra[msg_id])

    def _decode_frame(self, frame: bytes | bytearray, msg_id: int) -> Message | None:
        """The message in a whole frame of a known id, or None (counted) when it is bad."""
        msg: Message
        if self._lean.handles(frame, msg_id):
            msg = self._lean.decode(frame, msg_id)
        elif not self._crc_ok(frame, msg_id):
            msg = None
        else:
            try:
                msg = self._rx.decode(bytearray(frame))  # it appends to what it is given
            except Exception:  # pymavlink raises MAVError, struct.error, UnicodeError...
                msg = None
        if msg is None:
            self.stats.bad_crc += 1
        return msg

    def reset(self) -> None:
        """Forget a partial frame (a link that went down and came back)."""
        self._buf.clear()


def message_id(name: str) -> int | None:
    """The id of the message `name` (e.g. "ATTITUDE" -> 30), or None if unknown: looked up
    in the slim dialect first, so the daemon's own names never load the full one."""
    attribute = f"MAVLINK_MSG_ID_{name.upper()}"
    msg_id = getattr(slim_dialect, attribute, None)
    if msg_id is None:
        msg_id = getattr(full_dialect(), attribute, None)
    return msg_id if isinstance(msg_id, int) else None
