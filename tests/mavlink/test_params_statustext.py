"""Byte-wise parameter encoding (as PX4 uses it) and STATUSTEXT chunk joining."""

from __future__ import annotations

import struct

from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.params import decode_param_value, encode_param_value, param_id_str
from offboardd.mavlink.statustext import StatusTextAssembler

INT32 = dialect.MAV_PARAM_TYPE_INT32
REAL32 = dialect.MAV_PARAM_TYPE_REAL32


def test_int_parameter_travels_as_its_bytes_not_a_float_cast() -> None:
    wire = encode_param_value(1, INT32)
    assert struct.pack("<f", wire) == struct.pack("<i", 1)
    assert wire != 1.0
    assert decode_param_value(wire, INT32) == 1


def test_int_parameter_survives_a_real_param_value_frame() -> None:
    tx, rx = MavlinkCodec(1, 1), MavlinkCodec(255, 0)
    for value in (0, 1, 7, -1, 21196, 2**31 - 1, -(2**31)):
        msg = dialect.MAVLink_param_value_message(
            b"COM_OBL_RC_ACT", encode_param_value(value, INT32), INT32, 10, 3
        )
        (got,) = rx.decode(tx.encode(msg))
        assert param_id_str(got.param_id) == "COM_OBL_RC_ACT"
        assert decode_param_value(got.param_value, got.param_type) == value


def test_float_parameter_is_a_plain_float() -> None:
    assert encode_param_value(1.0, REAL32) == 1.0
    assert decode_param_value(0.5, REAL32) == 0.5


def test_px4_sitl_bytes_for_mav_sys_id_1() -> None:
    # What PX4 puts on the wire for MAV_SYS_ID = 1: the float whose bits are 0x00000001.
    wire = struct.unpack("<f", b"\x01\x00\x00\x00")[0]
    assert decode_param_value(wire, INT32) == 1


def test_statustext_chunks_are_joined() -> None:
    asm = StatusTextAssembler()
    first = "x" * 50
    assert asm.add(severity=2, text=first, text_id=9, chunk_seq=0, source_system=1,
                   source_component=1, now_s=0.0) == []
    (done,) = asm.add(severity=2, text="tail", text_id=9, chunk_seq=1, source_system=1,
                      source_component=1, now_s=0.01)
    assert done.text == first + "tail" and done.severity == 2


def test_unchunked_statustext_passes_through() -> None:
    asm = StatusTextAssembler()
    (done,) = asm.add(severity=6, text=b"Takeoff detected\0\0", text_id=0, chunk_seq=0,
                      source_system=1, source_component=1, now_s=0.0)
    assert done.text == "Takeoff detected"


def test_unfinished_chunked_text_is_flushed_when_stale() -> None:
    asm = StatusTextAssembler()
    asm.add(severity=3, text="y" * 50, text_id=4, chunk_seq=0, source_system=1,
            source_component=1, now_s=0.0)
    (done,) = asm.flush_stale(now_s=5.0)
    assert done.text == "y" * 50
