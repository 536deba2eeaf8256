"""Lean decoding of the daemon's frequent messages: the same checks, a lighter object.

pymavlink's `decode` builds a header object and a message through two `__init__`s that
set each field one by one, and wraps the CRC in an object of its own. PX4 sends the
daemon ~100 wanted messages a second (ATTITUDE, LOCAL_POSITION_NED, GLOBAL_POSITION_INT
most); that work was the largest single share of the daemon's CPU (bench/README.md).

For a message whose fields are all scalars (no arrays, no strings), `LeanDecoder` checks
the same CRC (with the message's CRC_EXTRA), zero-fills a truncated MAVLink 2 payload as
pymavlink does, unpacks it with pymavlink's own `struct` layout and returns a named tuple
that answers what the daemon asks of a message: fields by name, `get_type()`,
`get_msgId()`, `get_srcSystem()`, `get_srcComponent()`, `get_fieldnames()`. Everything
else (MAVLink 1, arrays, strings, unknown ids) stays with pymavlink.

Pure: no I/O, no clock. Tests compare it with pymavlink field by field (test_lean.py).
"""

from __future__ import annotations

import struct
from collections import namedtuple
from collections.abc import Collection
from typing import Any

from offboardd.mavlink import slim_dialect
from offboardd.mavlink.frame_layout import (
    CRC_LEN,
    HEADER_LEN_V2,
    IFLAG_SIGNED,
    MAGIC_V2,
    SIGNATURE_LEN,
)

_CRC = struct.Struct("<H")
# pymavlink's own CRC-16/MCRF4XX (fastcrc, which pymavlink depends on); None without it.
mcrf4xx: Any = getattr(slim_dialect, "mcrf4xx", None)


def crc_matches(frame: bytes | bytearray, crc_at: int, crc_extra: bytes) -> bool:
    """Whether the CRC stored at `crc_at` is the frame's (its bytes after the magic, then
    the message's CRC_EXTRA); needs fastcrc (`mcrf4xx` not None)."""
    return bool(mcrf4xx(bytes(frame[1:crc_at]) + crc_extra, 0xFFFF)
                == _CRC.unpack_from(frame, crc_at)[0])


class _LeanMethods:
    """The part of pymavlink's message interface the daemon uses."""

    __slots__ = ()
    _type: str
    _msg_id: int
    _fieldnames: list[str]

    def get_type(self) -> str:
        return self._type

    def get_msgId(self) -> int:  # (pymavlink's names)
        return self._msg_id

    def get_srcSystem(self) -> int:
        return int(self[0])  # type: ignore[index]

    def get_srcComponent(self) -> int:
        return int(self[1])  # type: ignore[index]

    def get_fieldnames(self) -> list[str]:
        return self._fieldnames


class _Layout:
    __slots__ = ("crc_extra", "make", "size", "unpack")

    def __init__(self, msg_class: Any) -> None:
        name: str = msg_class.msgname
        # The tuple holds the header's system and component ids, then the fields in wire
        # order (the order pymavlink's unpacker yields them); fields are read by name.
        base = namedtuple(  # type: ignore[misc]
            name, ["mavlink_src_system", "mavlink_src_component", *msg_class.ordered_fieldnames])
        lean: Any = type(name, (base, _LeanMethods), {
            "__slots__": (), "_type": name, "_msg_id": msg_class.id,
            "_fieldnames": list(msg_class.fieldnames),
        })
        self.make = lean._make
        self.unpack = msg_class.unpacker.unpack
        self.size: int = msg_class.unpacker.size
        self.crc_extra = bytes([msg_class.crc_extra])


def _is_scalar(msg_class: Any) -> bool:
    return (not any(msg_class.array_lengths)
            and "char" not in msg_class.fieldtypes)


class LeanDecoder:
    def __init__(self, msg_ids: Collection[int], dialect: Any = slim_dialect) -> None:
        self._layouts: dict[int, _Layout] = {}
        if mcrf4xx is None:
            return  # no fast CRC: pymavlink decodes everything
        for msg_id in msg_ids:
            msg_class = dialect.mavlink_map.get(msg_id)
            if msg_class is None or not _is_scalar(msg_class):
                continue
            try:
                self._layouts[msg_id] = _Layout(msg_class)
            except ValueError:  # a field name a named tuple cannot take (a keyword)
                continue

    @property
    def msg_ids(self) -> frozenset[int]:
        return frozenset(self._layouts)

    def handles(self, frame: bytes | bytearray, msg_id: int) -> bool:
        return frame[0] == MAGIC_V2 and msg_id in self._layouts

    def decode(self, frame: bytes | bytearray, msg_id: int) -> Any:
        """The message in a whole MAVLink 2 frame of `msg_id` (see `handles`), or None when
        its CRC is wrong."""
        layout = self._layouts[msg_id]
        payload_len = frame[1]
        crc_at = HEADER_LEN_V2 + payload_len
        if len(frame) != crc_at + CRC_LEN + (SIGNATURE_LEN if frame[2] & IFLAG_SIGNED else 0):
            return None
        if not crc_matches(frame, crc_at, layout.crc_extra):
            return None
        payload = bytes(frame[HEADER_LEN_V2:crc_at])
        size = layout.size
        if payload_len < size:  # MAVLink 2 trims trailing zeros; the unpacker wants them
            payload += bytes(size - payload_len)
        elif payload_len > size:  # extension fields this dialect does not know yet
            payload = payload[:size]
        return layout.make((frame[5], frame[6], *layout.unpack(payload)))
