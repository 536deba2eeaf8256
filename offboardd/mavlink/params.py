"""PX4 parameter values as they travel in PARAM_VALUE / PARAM_SET.

PX4 uses MAVLink's *byte-wise* parameter encoding (px4-offboard.md §5, measured on SITL):
an INT32 parameter's four bytes are carried unchanged in the float `param_value` field,
not converted to a float. Reading 1 as a float cast would give 1.4e-45. Pure helpers.
"""

from __future__ import annotations

import struct

from offboardd.mavlink.codec import slim_dialect as dialect

_INT_TYPES = {
    dialect.MAV_PARAM_TYPE_UINT8: "<B",
    dialect.MAV_PARAM_TYPE_INT8: "<b",
    dialect.MAV_PARAM_TYPE_UINT16: "<H",
    dialect.MAV_PARAM_TYPE_INT16: "<h",
    dialect.MAV_PARAM_TYPE_UINT32: "<I",
    dialect.MAV_PARAM_TYPE_INT32: "<i",
}

ParamValue = int | float


def decode_param_value(wire_value: float, param_type: int) -> ParamValue:
    """The parameter's real value from PARAM_VALUE's float field and its param_type."""
    fmt = _INT_TYPES.get(param_type)
    if fmt is None:
        return float(wire_value)
    raw = struct.pack("<f", wire_value)
    size = struct.calcsize(fmt)
    return int(struct.unpack(fmt, raw[:size])[0])


def encode_param_value(value: ParamValue, param_type: int) -> float:
    """The float to put in PARAM_SET / PARAM_VALUE's `param_value` for `value`.

    Integers are packed into the float's bytes (byte-wise). Caveat: an int32 whose bits
    form a signalling NaN (0x7F800001..0x7FBFFFFF and the negative twins) cannot survive
    a trip through a Python float; no PX4 parameter uses such values.
    """
    fmt = _INT_TYPES.get(param_type)
    if fmt is None:
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"integer parameter given non-integer value {value!r}")
    raw = struct.pack(fmt, int(value)).ljust(4, b"\0")
    return float(struct.unpack("<f", raw)[0])


def param_id_str(param_id: str | bytes) -> str:
    """PARAM_VALUE's 16-char id without padding NULs, whatever pymavlink handed us."""
    if isinstance(param_id, bytes):
        param_id = param_id.decode("ascii", errors="replace")
    return param_id.split("\0", 1)[0]
