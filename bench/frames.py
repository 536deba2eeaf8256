"""MAVLink frame headers and the few payload fields the benchmark reads, by hand.

The proxy sees every datagram between a peer and the sim; decoding them with pymavlink
would cost more CPU than the peers it measures, so this reads headers only (v1 and v2,
several frames per datagram as PX4 and the sim batch them) and unpacks the payload of the
handful of messages it needs. No checksums: loopback does not corrupt. No I/O here.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

# message ids (MAVLink common.xml)
HEARTBEAT = 0
COMMAND_LONG = 76
SET_ATTITUDE_TARGET = 82
SET_POSITION_TARGET_LOCAL_NED = 84
SET_POSITION_TARGET_GLOBAL_INT = 86
CURRENT_MODE = 436
SETPOINT_IDS = frozenset({SET_ATTITUDE_TARGET, SET_POSITION_TARGET_LOCAL_NED,
                          SET_POSITION_TARGET_GLOBAL_INT})  # fmt: skip
# PX4 packs OFFBOARD as main mode 6 in bits 16..23 (px4_custom_mode.h)
PX4_OFFBOARD_CUSTOM_MODE = 6 << 16

_V1, _V2 = 0xFE, 0xFD
_V2_SIGNED = 0x01  # incompat flag: a 13-byte signature follows the checksum
# SET_POSITION_TARGET_LOCAL_NED payload, wire order (fields sorted by size):
# time_boot_ms, x, y, z, vx, vy, vz, afx, afy, afz, yaw, yaw_rate, type_mask, ...
_LOCAL_NED = struct.Struct("<I11fHBBB")
# SET_POSITION_TARGET_GLOBAL_INT: time_boot_ms, lat, lon, alt, ..., type_mask at 48
_GLOBAL_INT = struct.Struct("<Iii9fHBBB")
_ATTITUDE_TARGET = struct.Struct("<I4f4fBBB")  # time, q, roll/pitch/yaw rate, thrust, ...
_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class Frame:
    msgid: int
    sysid: int
    payload: bytes  # as sent: MAVLink 2 strips trailing zero bytes


def frames(datagram: bytes) -> Iterator[Frame]:
    """Every complete frame in a datagram; bytes that are not a frame start are skipped."""
    i, n = 0, len(datagram)
    while i < n:
        magic = datagram[i]
        if magic == _V2 and i + 10 <= n:
            length = datagram[i + 1]
            signed = datagram[i + 2] & _V2_SIGNED
            msgid = datagram[i + 7] | datagram[i + 8] << 8 | datagram[i + 9] << 16
            end = i + 10 + length + 2 + (13 if signed else 0)
            yield Frame(msgid, datagram[i + 5], datagram[i + 10 : i + 10 + length])
            i = end
        elif magic == _V1 and i + 6 <= n:
            length = datagram[i + 1]
            yield Frame(datagram[i + 5], datagram[i + 3], datagram[i + 6 : i + 6 + length])
            i += 6 + length + 2
        else:
            i += 1


def _padded(payload: bytes, size: int) -> bytes:
    return payload + bytes(size - len(payload)) if len(payload) < size else payload[:size]


def setpoint_fields(frame: Frame) -> tuple[float, int]:
    """(first value, type_mask) of a setpoint frame: x (north_m) for a local position
    target, lat (degE7) for a global one, q[0] for an attitude target."""
    if frame.msgid == SET_POSITION_TARGET_LOCAL_NED:
        v = _LOCAL_NED.unpack(_padded(frame.payload, _LOCAL_NED.size))
        return float(v[1]), int(v[12])
    if frame.msgid == SET_POSITION_TARGET_GLOBAL_INT:
        v = _GLOBAL_INT.unpack(_padded(frame.payload, _GLOBAL_INT.size))
        return float(v[1]), int(v[12])
    v = _ATTITUDE_TARGET.unpack(_padded(frame.payload, _ATTITUDE_TARGET.size))
    return float(v[1]), int(v[11])


def reported_custom_mode(frame: Frame) -> int | None:
    """custom_mode from HEARTBEAT or CURRENT_MODE (its first uint32 in both), else None."""
    if frame.msgid in (HEARTBEAT, CURRENT_MODE):
        return int(_U32.unpack(_padded(frame.payload, 4))[0])
    return None


def is_offboard(custom_mode: int) -> bool:
    return custom_mode & 0x00FF0000 == PX4_OFFBOARD_CUSTOM_MODE
