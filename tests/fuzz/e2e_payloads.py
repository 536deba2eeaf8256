"""The end-to-end fuzz traffic: hypothesis-generated MQTT payloads and MAVLink garbage.

`mqtt_payloads(n)` runs a derandomized hypothesis search that only collects what it
draws, so the list is the same on every run (and a failure replays exactly). The mix:
plausible stream setpoints (inside and outside the fence, above the limits), schema
commands of every kind, the same broken one to three ways, arbitrary JSON and random
bytes, some of them published retained. `Publication.payload(seq)` gives sequenced
setpoints a fresh sequence number most of the time, so many are accepted and flown.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from offboardd.mavlink.codec import MavlinkCodec

from .budget import fuzz_settings
from .mavlink_strategies import absurd_frames, damaged
from .mqtt_strategies import (
    JSON_VALUES,
    command_documents,
    mutated,
    quaternions,
    serialised,
    stream_documents,
)

SESSION = "fuzz-e2e"
E2E_TEST = "test_fuzzed_mqtt_and_mavlink_traffic_end_to_end"


def f(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False)


def _yaw() -> st.SearchStrategy[dict[str, float]]:
    return st.one_of(st.just({}), f(-3.2, 3.2).map(lambda y: {"yaw_rad": y}),
                     f(-6, 6).map(lambda r: {"yaw_rate_rad_s": r}))


def _merge(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        out.update(part)
    return out


@st.composite
def _small_tilt(draw: st.DrawFn) -> dict[str, Any]:
    """An attitude within ~70 degrees of level (flyable for a moment), thrust 0.3..0.8."""
    q = draw(quaternions())
    if abs(q["w"]) < 0.8:
        q = {"w": 1.0, "x": q["x"] * 0.3, "y": q["y"] * 0.3, "z": q["z"]}
        norm = math.sqrt(sum(v * v for v in q.values()))
        q = {k: v / norm for k, v in q.items()}
    return {"kind": "attitude", **q, "thrust": draw(f(0.3, 0.8))}


# Setpoints a commander might really send, a good part beyond the fence or the limits.
PLAUSIBLE_BODIES = st.one_of(
    st.builds(lambda p, y: _merge({"kind": "position_ned", "north_m": p[0], "east_m": p[1],
                                   "down_m": p[2]}, y),
              st.tuples(f(-60, 60), f(-60, 60), f(-45, 2)), _yaw()),
    st.builds(lambda v, y: _merge({"kind": "velocity_ned", "north_m_s": v[0],
                                   "east_m_s": v[1], "down_m_s": v[2]}, y),
              st.tuples(f(-20, 20), f(-20, 20), f(-5, 5)), _yaw()),
    st.builds(lambda v, r: {"kind": "velocity_body", "forward_m_s": v[0], "right_m_s": v[1],
                            "down_m_s": v[2], "yaw_rate_rad_s": r},
              st.tuples(f(-20, 20), f(-20, 20), f(-5, 5)), f(-6, 6)),
    st.builds(lambda a: {"kind": "acceleration_ned", "north_m_s2": a[0], "east_m_s2": a[1],
                         "down_m_s2": a[2]}, st.tuples(f(-8, 8), f(-8, 8), f(-8, 8))),
    st.builds(lambda p, v, y: _merge({"kind": "position_velocity_ned", "north_m": p[0],
                                      "east_m": p[1], "down_m": p[2], "north_m_s": v[0],
                                      "east_m_s": v[1], "down_m_s": v[2]}, y),
              st.tuples(f(-50, 50), f(-50, 50), f(-40, 0)),
              st.tuples(f(-15, 15), f(-15, 15), f(-4, 4)), _yaw()),
    st.builds(lambda lat, lon, alt, frame: {"kind": "global_position", "lat_deg": lat,
                                            "lon_deg": lon, "alt_m": alt,
                                            "altitude_frame": frame},
              f(47.3973, 47.3982), f(8.5450, 8.5462), f(-2, 40),
              st.sampled_from(["relative", "amsl", "terrain"])),
    _small_tilt(),
    st.builds(lambda r, t: {"kind": "body_rates", "roll_rate_rad_s": r[0],
                            "pitch_rate_rad_s": r[1], "yaw_rate_rad_s": r[2], "thrust": t},
              st.tuples(f(-1, 1), f(-1, 1), f(-6, 6)), f(0.3, 0.8)),
)


@dataclass(frozen=True)
class Publication:
    channel: str  # "cmd" | "setpoint"
    document: Any  # a JSON-able document, or None when `raw` is the payload
    raw: bytes = b""
    retain: bool = False
    fresh_seq: bool = True  # give it the next sequence number (else keep a stale one)

    def payload(self, n: int) -> bytes:
        """The bytes to publish as the n-th publication. Our own setpoints (session
        SESSION) each open a new commander session, since fuzzed documents with other
        session ids keep retiring ours; a stale one replays the previous session."""
        if self.document is None:
            return self.raw
        doc = self.document
        if isinstance(doc, dict) and doc.get("session") == SESSION:
            doc = {**doc, "session": f"{SESSION}-{n if self.fresh_seq else n - 1}", "seq": n}
        return json.dumps(doc, allow_nan=True).encode()


OURS = st.builds(lambda body, fresh: Publication(
    "setpoint", {"v": 1, "session": SESSION, "seq": 0, **body}, fresh_seq=fresh),
    PLAUSIBLE_BODIES, st.sampled_from([True] * 9 + [False]))
PUBLICATIONS = st.one_of(
    # ~50 %: plausible setpoints on the stream topic, from a live commander
    OURS, OURS, OURS, OURS, OURS,
    # ~50 %: schema documents with absurd values, broken ones, arbitrary JSON and bytes
    st.builds(lambda doc: Publication("setpoint", doc), stream_documents()),
    st.builds(lambda doc: Publication("setpoint", doc), stream_documents()),
    st.builds(lambda doc: Publication("cmd", doc), command_documents()),
    st.builds(lambda doc, ch: Publication(ch, doc),
              mutated(command_documents()) | mutated(stream_documents()),
              st.sampled_from(["cmd", "setpoint"])),
    st.builds(lambda raw, ch, retain: Publication(ch, None, raw, retain=retain),
              serialised(JSON_VALUES) | st.binary(max_size=200),
              st.sampled_from(["cmd", "setpoint"]), st.sampled_from([False] * 9 + [True])),
)


def mqtt_payloads(count: int) -> list[Publication]:
    drawn: list[Publication] = []

    @fuzz_settings(E2E_TEST, max_examples=count)
    @given(PUBLICATIONS)
    def collect(publication: Publication) -> None:
        drawn.append(publication)

    collect()
    return drawn[:count]


def mavlink_garbage(count: int) -> list[bytes]:
    """Datagrams a hostile or broken network delivers: random bytes, and real frames
    truncated or with flipped bits (valid-but-spoofed frames are what signing is for)."""
    drawn: list[bytes] = []

    @fuzz_settings(E2E_TEST, max_examples=count)
    @given(st.binary(min_size=1, max_size=300)
           | st.lists(absurd_frames(), min_size=1, max_size=4).flatmap(
               lambda frames: damaged(b"".join(frames))))
    def collect(datagram: bytes) -> None:
        # no intact frame left, even behind a damaged header waiting for its body
        if datagram and not MavlinkCodec(1, 191).decode(datagram + bytes(300)):
            drawn.append(datagram)

    collect()
    return drawn[:count]
