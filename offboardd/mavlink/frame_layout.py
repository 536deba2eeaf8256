"""MAVLink's wire layout, as the framer in codec.py reads it: the magic bytes, header and
checksum lengths, the signature block, and where the next frame starts and how long it is.

Facts of the MAVLink 1 and 2 specifications only: no decoding, no state, no I/O. Kept
apart from codec.py so the framer's loop reads as the algorithm (it inlines some of these
in its hot loop: bench/README.md).
"""

from __future__ import annotations

MAGIC_V1 = 0xFE
MAGIC_V2 = 0xFD
HEADER_LEN_V1 = 6
HEADER_LEN_V2 = 10
CRC_LEN = 2
SIGNATURE_LEN = 13  # MAVLink 2 signature block: link id, 6-byte timestamp, 6-byte signature
IFLAG_SIGNED = 0x01


def next_magic(buf: bytes | bytearray, start: int) -> int:
    v2 = buf.find(MAGIC_V2, start)
    v1 = buf.find(MAGIC_V1, start)
    if v2 < 0:
        return v1
    if v1 < 0:
        return v2
    return min(v1, v2)


def frame_shape(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    """(total frame length, message id) of the frame at `pos`, or (-1, -1) if incomplete."""
    if buf[pos] == MAGIC_V2:
        if end - pos < HEADER_LEN_V2:
            return -1, -1
        payload_len = buf[pos + 1]
        signed = buf[pos + 2] & IFLAG_SIGNED
        msg_id = buf[pos + 7] | (buf[pos + 8] << 8) | (buf[pos + 9] << 16)
        return (
            HEADER_LEN_V2 + payload_len + CRC_LEN + (SIGNATURE_LEN if signed else 0),
            msg_id,
        )
    if end - pos < HEADER_LEN_V1:
        return -1, -1
    return HEADER_LEN_V1 + buf[pos + 1] + CRC_LEN, buf[pos + 5]
