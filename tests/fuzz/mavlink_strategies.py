"""Hypothesis strategies for what arrives from the flight-controller side.

`absurd_messages()` builds, for every message the daemon reads (translate_in's and the
telemetry cache's wanted ids), real pymavlink messages whose fields take any value their
wire type can hold: NaN, ±inf, ±3.4e38 and subnormals in floats, 0 / max / min in
integers, arbitrary bytes in char arrays (invalid UTF-8, no NUL). Most come from the
autopilot (system 1, component 1), some from strangers. `damaged()` turns a byte stream
into the kinds of damage a serial line or a hostile network produces.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

from hypothesis import strategies as st

from offboardd.mavlink.codec import MavlinkCodec, Message, dialect
from offboardd.mavlink.telemetry import WANTED_MESSAGE_IDS as TELEMETRY_IDS
from offboardd.mavlink.translate_in import WANTED_MESSAGE_IDS

READ_IDS: tuple[int, ...] = tuple(sorted(WANTED_MESSAGE_IDS | TELEMETRY_IDS))
_INT_RANGES = {
    "uint8_t": (0, 2**8 - 1), "int8_t": (-(2**7), 2**7 - 1),
    "uint16_t": (0, 2**16 - 1), "int16_t": (-(2**15), 2**15 - 1),
    "uint32_t": (0, 2**32 - 1), "int32_t": (-(2**31), 2**31 - 1),
    "uint64_t": (0, 2**64 - 1), "int64_t": (-(2**63), 2**63 - 1),
}
_F32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
ABSURD_FLOATS = st.one_of(
    st.floats(width=32),  # NaN and ±inf included
    st.sampled_from([_F32_MAX, -_F32_MAX, 1e-45, -0.0, 1e30, -1e30, 12.0, 3.0, 1.5]),
    st.floats(-50.0, 50.0, width=32),
)
# Parameters the engine reads (fc_checks), so absurd values hit real code paths.
PARAM_NAMES = st.sampled_from([b"COM_OF_LOSS_T", b"COM_OBL_RC_ACT", b"MAV_FWDEXTSP",
                               b"COM_RC_OVERRIDE", b"COM_RCL_EXCEPT", b"MPC_XY_VEL_MAX",
                               b"NAV_DLL_ACT"]) | st.binary(max_size=16)


def _field(type_name: str, length: int, name: str) -> st.SearchStrategy[Any]:
    if type_name == "char":
        if name == "param_id":
            return PARAM_NAMES
        return st.binary(max_size=length)
    if type_name in ("float", "double"):
        scalar: st.SearchStrategy[Any] = ABSURD_FLOATS
    else:
        low, high = _INT_RANGES[type_name]
        scalar = st.integers(low, high) | st.sampled_from([low, high, 0, 1])
    if length:
        return st.lists(scalar, min_size=length, max_size=length)
    return scalar


def _message_of(msg_id: int) -> st.SearchStrategy[Message]:
    cls = dialect.mavlink_map[msg_id]
    lengths = dict(zip(cls.ordered_fieldnames, cls.array_lengths, strict=True))
    fields = [_field(t, lengths[name], name)
              for name, t in zip(cls.fieldnames, cls.fieldtypes, strict=True)]
    return st.tuples(*fields).map(lambda values: cls(*values))


MESSAGES: st.SearchStrategy[Message] = st.one_of(*[_message_of(i) for i in READ_IDS])
SOURCES = st.sampled_from([(1, 1)] * 6 + [(1, 0), (2, 1), (255, 190), (1, 191)])


# float32 bit patterns worth planting: NaN, +inf, -inf, ±max, the smallest subnormal
SPECIAL_FLOAT_BYTES = [b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\x00\x00\x80\xff",
                       b"\xff\xff\x7f\x7f", b"\xff\xff\x7f\xff", b"\x01\x00\x00\x00"]


def frame_bytes(msg_id: int, payload: bytes, *, seq: int, system_id: int,
                component_id: int) -> bytes:
    """A MAVLink 2 frame with a correct CRC around any payload bytes (trailing zeros
    stripped as MAVLink 2 senders do), so every bit pattern reaches the decoder."""
    cls = dialect.mavlink_map[msg_id]
    payload = payload.rstrip(b"\0") or b"\0"
    header = struct.pack("<BBBBBBBHB", 0xFD, len(payload), 0, 0, seq, system_id, component_id,
                         msg_id & 0xFFFF, msg_id >> 16)
    crc = dialect.x25crc(header[1:] + payload)
    crc.accumulate(bytes([cls.crc_extra]))
    return header + payload + struct.pack("<H", crc.crc)


@st.composite
def raw_payloads(draw: st.DrawFn, msg_id: int) -> bytes:
    """Random payload bytes (any value of any field), with NaN/inf/max floats planted."""
    size = dialect.mavlink_map[msg_id].unpacker.size
    payload = bytearray(draw(st.binary(min_size=size, max_size=size)))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, max(0, size - 4)))
        payload[at : at + 4] = draw(st.sampled_from(SPECIAL_FLOAT_BYTES))
    return bytes(payload[:size])


@st.composite
def absurd_frames(draw: st.DrawFn) -> bytes:
    """One MAVLink 2 frame of a message the daemon reads, with absurd values: random
    payload bytes (cheap, every bit pattern) or, one time in four, values drawn per field
    (real parameter names, extreme integers)."""
    system_id, component_id = draw(SOURCES)
    seq = draw(st.integers(0, 255))
    if draw(st.integers(0, 3)) == 0:
        codec = MavlinkCodec(system_id, component_id)
        codec.mav.seq = seq
        return codec.encode(draw(MESSAGES))
    msg_id = draw(st.sampled_from(READ_IDS))
    return frame_bytes(msg_id, draw(raw_payloads(msg_id)), seq=seq, system_id=system_id,
                       component_id=component_id)


@st.composite
def damaged(draw: st.DrawFn, stream: bytes) -> bytes:
    """`stream` truncated, with flipped bits, with garbage inserted, or several of these."""
    data = bytearray(stream)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "flip", "truncate", "insert", "drop"]))
        if op == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate" and data:
            del data[draw(st.integers(0, len(data) - 1)):]
        elif op == "insert":
            i = draw(st.integers(0, len(data)))
            junk = draw(st.binary(min_size=1, max_size=40)
                        | st.sampled_from([b"\xfd", b"\xfe", b"\xfd\xff\x01", b"\xfe\xff"]))
            data[i:i] = junk
        elif op == "drop" and data:
            i = draw(st.integers(0, len(data) - 1))
            del data[i : i + draw(st.integers(1, 12))]
    return bytes(data)


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """`data` split at random points (a serial read or a TCP segment boundary)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=5)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]
