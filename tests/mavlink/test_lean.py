"""Lean decoding gives what pymavlink gives, field by field, and refuses what it refuses."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.lean import LeanDecoder
from offboardd.mavlink.telemetry import WANTED_MESSAGE_IDS as TELEMETRY_IDS

DAEMON_IDS = translate.WANTED_MESSAGE_IDS | TELEMETRY_IDS
LEAN_IDS = sorted(LeanDecoder(DAEMON_IDS).msg_ids)

_RANGES: dict[str, Any] = {
    "uint8_t": st.integers(0, 2**8 - 1), "int8_t": st.integers(-(2**7), 2**7 - 1),
    "uint16_t": st.integers(0, 2**16 - 1), "int16_t": st.integers(-(2**15), 2**15 - 1),
    "uint32_t": st.integers(0, 2**32 - 1), "int32_t": st.integers(-(2**31), 2**31 - 1),
    "uint64_t": st.integers(0, 2**64 - 1), "int64_t": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False) | st.just(0.0),
    "double": st.floats(allow_nan=False),
}


@st.composite
def lean_messages(draw: st.DrawFn) -> Any:
    msg_class = dialect.mavlink_map[draw(st.sampled_from(LEAN_IDS))]
    # zeros often: MAVLink 2 trims trailing zero bytes, the lean path must refill them
    values = [draw(st.just(0) if draw(st.booleans()) else _RANGES[t])
              for t in msg_class.fieldtypes]
    return msg_class(*values)


def same_fields(a: Any, b: Any) -> bool:
    return all(getattr(a, n) == getattr(b, n) for n in a.get_fieldnames())


def test_the_frequent_scalar_messages_are_decoded_leanly() -> None:
    names = {dialect.mavlink_map[i].msgname for i in LEAN_IDS}
    assert {"ATTITUDE", "LOCAL_POSITION_NED", "GLOBAL_POSITION_INT", "HEARTBEAT"} <= names
    # arrays and strings stay with pymavlink
    assert not names & {"STATUSTEXT", "PARAM_VALUE", "BATTERY_STATUS", "HOME_POSITION"}


@settings(max_examples=300, deadline=None)
@given(lean_messages(), st.integers(1, 255), st.integers(0, 255))
def test_lean_and_pymavlink_agree(msg: Any, system_id: int, component_id: int) -> None:
    frame = MavlinkCodec(system_id, component_id).encode(msg)
    lean = MavlinkCodec(1, 191, wanted_ids=DAEMON_IDS, lean_ids=DAEMON_IDS).decode(frame)
    full = MavlinkCodec(1, 191, wanted_ids=DAEMON_IDS).decode(frame)
    assert len(lean) == len(full) == 1
    a, b = lean[0], full[0]
    assert (a.get_type(), a.get_msgId(), a.get_srcSystem(), a.get_srcComponent()) == (
        b.get_type(), b.get_msgId(), b.get_srcSystem(), b.get_srcComponent())
    assert a.get_fieldnames() == b.get_fieldnames() and same_fields(a, b)


def test_a_bad_crc_is_counted_and_nothing_returned() -> None:
    frame = bytearray(MavlinkCodec(1, 1).encode(
        dialect.MAVLink_attitude_message(1000, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0)))
    frame[12] ^= 0x40  # a payload bit
    codec = MavlinkCodec(1, 191, wanted_ids=DAEMON_IDS, lean_ids=DAEMON_IDS)
    assert codec.decode(bytes(frame)) == []
    assert codec.stats.bad_crc >= 1 and codec.stats.frames_ok == 0


def test_unknown_extension_bytes_are_ignored_as_pymavlink_does() -> None:
    """A newer FC may send more extension fields than our dialect knows."""
    msg = dialect.MAVLink_local_position_ned_message(5, 1.0, 2.0, 3.0, 0.5, 0.5, 0.5)
    layout = msg.unpacker
    payload = layout.pack(5, 1.0, 2.0, 3.0, 0.5, 0.5, 0.5) + b"\x07\x07"
    header = struct.pack("<BBBBBBBHB", 0xFD, len(payload), 0, 0, 0, 1, 1, msg.id & 0xFFFF, 0)
    crc = dialect.x25crc(header[1:] + payload)
    crc.accumulate(bytes([msg.crc_extra]))
    frame = header + payload + struct.pack("<H", crc.crc)
    lean = MavlinkCodec(1, 191, wanted_ids=DAEMON_IDS, lean_ids=DAEMON_IDS).decode(frame)
    full = MavlinkCodec(1, 191, wanted_ids=DAEMON_IDS).decode(frame)
    assert len(lean) == len(full) == 1 and same_fields(lean[0], full[0])
    assert lean[0].z == 3.0


def test_signed_frames_decode_leanly_and_signatures_are_still_judged() -> None:
    key = bytes(range(32))
    fc = MavlinkCodec(1, 1)
    fc.enable_signing(key, timestamp=1000)
    good = fc.encode(dialect.MAVLink_attitude_message(1, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0))
    daemon = MavlinkCodec(1, 191, wanted_ids=DAEMON_IDS, lean_ids=DAEMON_IDS)
    daemon.enable_signing(key, timestamp=0)
    assert [m.roll for m in daemon.decode(good)] == [struct.unpack("<f", struct.pack(
        "<f", 0.1))[0]]
    forged = MavlinkCodec(1, 1)
    forged.enable_signing(bytes(32), timestamp=2000)
    assert daemon.decode(forged.encode(
        dialect.MAVLink_attitude_message(2, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0))) == []
    assert daemon.stats.bad_signature == 1
