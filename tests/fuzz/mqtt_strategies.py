"""Hypothesis strategies for MQTT payloads: valid commands and setpoints, their mutations,
arbitrary JSON, and byte-level damage.

Valid documents follow docs/mqtt-api.md's schema v1 (commands on `cmd`, flat setpoints on
`setpoint`); values are drawn where bugs live: wire-limit edges, subnormals, -0.0,
huge numbers, near-unit quaternions. Mutations then break one or a few things at a time
(a wrong type, NaN/Infinity, a missing or extra field, deep nesting, a huge string), and
serialisation may damage the bytes (truncation, flipped bytes, invalid UTF-8).
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import strategies as st

# Numbers around the wire's sanity limits (schema_setpoints.py) and float oddities.
EDGE_NUMBERS = [0, -0.0, 1, -1, 0.5, 1e-320, 5e-324, -5e-324, 1e-7, 99.999999, 100.0,
                100.0000001, -100.0, 6.283185307179586, 6.2831854, 20.0, 20.0000001,
                99_999.9, 100_000.0, 100_001.0, 1e6, 1e38, 3.5e38, 1e308, -1e308,
                2**53, 2**53 + 1, 2**63, -(2**63), 10**20]
NON_FINITE = [math.nan, math.inf, -math.inf]


def numbers(low: float, high: float) -> st.SearchStrategy[float | int]:
    """Mostly in [low, high], sometimes just outside or absurd."""
    return st.one_of(
        st.floats(low, high, allow_nan=False),
        st.floats(low / 10, high / 10, allow_nan=False),
        st.integers(int(low), int(high)),
        st.sampled_from(EDGE_NUMBERS),
    )


METERS = numbers(-200.0, 200.0) | numbers(-100_000.0, 100_000.0)
SPEED = numbers(-30.0, 30.0) | numbers(-100.0, 100.0)
ACCEL = numbers(-20.0, 20.0) | numbers(-100.0, 100.0)
ANGLE = numbers(-6.3, 6.3)
RATE = numbers(-20.0, 20.0)


@st.composite
def quaternions(draw: st.DrawFn) -> dict[str, Any]:
    """Unit quaternions from an axis and angle, sometimes scaled a little off unit."""
    axis = draw(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3))
    angle = draw(st.floats(-math.pi, math.pi, allow_nan=False))
    norm = math.sqrt(sum(a * a for a in axis)) or 1.0
    s = math.sin(angle / 2) / norm
    q = [math.cos(angle / 2), axis[0] * s, axis[1] * s, axis[2] * s]
    scale = draw(st.sampled_from([1.0, 1.0, 1.0, 1.0005, 0.9995, 1.01, 0.5, 0.0]))
    return dict(zip("wxyz", (c * scale for c in q), strict=True))


def _yaw_fields() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={"yaw_rad": ANGLE, "yaw_rate_rad_s": RATE})


def _kind(name: str, required: dict[str, st.SearchStrategy[Any]],
          optional: st.SearchStrategy[dict[str, Any]] | None = None
          ) -> st.SearchStrategy[dict[str, Any]]:
    base = st.fixed_dictionaries({"kind": st.just(name), **required})
    if optional is None:
        return base
    return st.builds(lambda a, b: {**a, **b}, base, optional)


SETPOINT_BODIES: st.SearchStrategy[dict[str, Any]] = st.one_of(
    _kind("position_ned", {"north_m": METERS, "east_m": METERS, "down_m": METERS},
          _yaw_fields()),
    _kind("velocity_ned", {"north_m_s": SPEED, "east_m_s": SPEED, "down_m_s": SPEED},
          _yaw_fields()),
    _kind("velocity_body", {"forward_m_s": SPEED, "right_m_s": SPEED, "down_m_s": SPEED},
          st.fixed_dictionaries({}, optional={"yaw_rate_rad_s": RATE})),
    _kind("acceleration_ned", {"north_m_s2": ACCEL, "east_m_s2": ACCEL, "down_m_s2": ACCEL},
          _yaw_fields()),
    _kind("position_velocity_ned",
          {"north_m": METERS, "east_m": METERS, "down_m": METERS,
           "north_m_s": SPEED, "east_m_s": SPEED, "down_m_s": SPEED},
          st.fixed_dictionaries({}, optional={
              "yaw_rad": ANGLE, "yaw_rate_rad_s": RATE, "north_m_s2": ACCEL,
              "east_m_s2": ACCEL, "down_m_s2": ACCEL})),
    _kind("global_position",
          {"lat_deg": st.floats(47.39, 47.41) | numbers(-90, 90),
           "lon_deg": st.floats(8.53, 8.56) | numbers(-180, 180),
           "alt_m": numbers(480.0, 540.0) | numbers(-1000.0, 50_000.0)},
          st.fixed_dictionaries({}, optional={
              "altitude_frame": st.sampled_from(["amsl", "relative", "terrain", "agl", ""]),
              "yaw_rad": ANGLE, "yaw_rate_rad_s": RATE})),
    st.builds(lambda q, t: {"kind": "attitude", **q, "thrust": t},
              quaternions(), numbers(0.0, 1.0)),
    _kind("body_rates", {"roll_rate_rad_s": RATE, "pitch_rate_rad_s": RATE,
                         "yaw_rate_rad_s": RATE, "thrust": numbers(0.0, 1.0)}),
)

IDS = st.text(min_size=1, max_size=12) | st.sampled_from(["c1", "x" * 128, "x" * 129, ""])
SESSIONS = st.sampled_from(["s1", "s2", "fuzz"]) | st.text(min_size=1, max_size=8)
SEQS = st.integers(0, 50) | st.sampled_from([2**53, 2**53 + 1, -1])


@st.composite
def command_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A schema-valid `cmd` document (values may still be out of range)."""
    name = draw(st.sampled_from(["engage", "setpoint", "release", "hold", "land", "rtl", "arm",
                                 "heartbeat", "disarm", "emergency_stop"]))
    doc: dict[str, Any] = {"v": 1, "id": draw(IDS), "cmd": name}
    if name in ("engage", "setpoint"):
        if name == "setpoint" or draw(st.booleans()):
            doc["setpoint"] = draw(SETPOINT_BODIES)
        if draw(st.booleans()):
            doc.update(session=draw(SESSIONS), seq=draw(SEQS))
        if name == "engage" and draw(st.booleans()):
            doc["arm"] = draw(st.booleans())
    elif name == "disarm" and draw(st.booleans()):
        doc["force"] = draw(st.booleans())
    elif name == "emergency_stop" and draw(st.booleans()):
        doc["confirm"] = draw(st.booleans())
    elif name == "heartbeat" and draw(st.booleans()):
        doc["ack"] = draw(st.booleans())
    return doc


@st.composite
def stream_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A schema-valid `setpoint` topic document (flat)."""
    doc: dict[str, Any] = {"v": 1, "session": draw(SESSIONS), "seq": draw(SEQS)}
    if draw(st.booleans()):
        doc["id"] = draw(IDS)
    doc.update(draw(SETPOINT_BODIES))
    return doc


def _nested(depth: int) -> Any:
    value: Any = 1.0
    for i in range(depth):
        value = [value] if i % 2 else {"setpoint": value}
    return value


JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats()
                | st.text(max_size=20) | st.sampled_from(EDGE_NUMBERS))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=25,
)
JUNK = st.one_of(
    JSON_VALUES,
    st.sampled_from([*NON_FINITE, "1", "", "NaN", True, False, None, [], {}, [1, 2, 3]]),
    st.integers(min_value=10**20, max_value=10**300),
    st.integers(1, 4000).map(lambda n: "ü" * n),  # huge strings (UTF-8 doubles them)
    st.integers(1, 200).map(_nested),
)
KEYS = st.sampled_from(["v", "id", "cmd", "session", "seq", "kind", "setpoint", "arm", "force",
                        "confirm", "north_m", "east_m", "down_m", "north_m_s", "thrust", "w",
                        "x", "lat_deg", "alt_m", "altitude_frame", "yaw_rad", "yaw_rate_rad_s",
                        "north_m_s2", "forward_m_s"]) | st.text(max_size=10)


@st.composite
def mutated(draw: st.DrawFn, documents: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A valid document with one to three things broken (at the top or in "setpoint")."""
    doc = draw(documents)
    for _ in range(draw(st.integers(1, 3))):
        target = doc
        if isinstance(doc.get("setpoint"), dict) and draw(st.booleans()):
            target = doc["setpoint"]
        op = draw(st.sampled_from(["retype", "retype", "drop", "add", "nest"]))
        keys = sorted(target)
        if op == "drop" and keys:
            target.pop(draw(st.sampled_from(keys)))
        elif op == "retype" and keys:
            target[draw(st.sampled_from(keys))] = draw(JUNK)
        elif op == "add":
            target[draw(KEYS)] = draw(JUNK)
        elif op == "nest" and keys:
            key = draw(st.sampled_from(keys))
            target[key] = draw(st.sampled_from([[target[key]], {"value": target[key]}]))
    return doc


@st.composite
def serialised(draw: st.DrawFn, documents: st.SearchStrategy[Any]) -> bytes:
    """JSON bytes (NaN/Infinity literals allowed), sometimes damaged at byte level."""
    text = json.dumps(draw(documents), allow_nan=True,
                      ensure_ascii=draw(st.booleans()))
    payload = text.encode("utf-8", errors="surrogatepass")
    damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "flip", "insert", "bom",
                                                  "duplicate_key"]))
    if damage == "truncate" and payload:
        payload = payload[: draw(st.integers(0, len(payload) - 1))]
    elif damage == "flip" and payload:
        i = draw(st.integers(0, len(payload) - 1))
        payload = payload[:i] + bytes([payload[i] ^ draw(st.integers(1, 255))]) + payload[i + 1:]
    elif damage == "insert":
        i = draw(st.integers(0, len(payload)))
        payload = payload[:i] + draw(st.binary(min_size=1, max_size=8)) + payload[i:]
    elif damage == "bom":
        payload = b"\xef\xbb\xbf" + payload
    elif damage == "duplicate_key" and payload.endswith(b"}"):
        key = draw(st.sampled_from([b'"v":2', b'"cmd":"land"', b'"kind":"attitude"',
                                    b'"seq":0', b'"north_m":NaN']))
        payload = payload[:-1] + b"," + key + b"}"
    return payload


def deep_nesting(depth: int) -> bytes:
    return b'{"v":1,"id":"deep","cmd":"engage","setpoint":' + b"[" * depth + b"]" * depth + b"}"
