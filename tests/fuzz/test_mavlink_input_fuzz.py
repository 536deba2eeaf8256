"""Fuzz the MAVLink input path: bytes -> MavlinkCodec -> InboundTranslator -> engine.

Properties:
- `MavlinkCodec.decode` never raises on random bytes or on real frames truncated, with
  flipped bits, garbage inserted or bytes dropped, fed in random chunks; it only ever
  returns messages that were really sent (never a corrupted one), decodes an undamaged
  stream completely, and finds the frames that follow the damage again;
- for frames of every message the daemon reads, filled with absurd values (NaN, ±inf,
  ±3.4e38, extreme integers, invalid UTF-8), `InboundTranslator.events`,
  `OffboardEngine.handle`/`poll` and the telemetry documents never raise; every setpoint
  the engine streams meanwhile is one PX4 accepts and can fly (judged by the sim's
  validator) and within the envelope's limits; the engine's timer stays a number and its
  published state stays encodable JSON.
"""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from offboardd.core.actions import SendSetpoint
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.setpoints import (
    AccelerationNed,
    Attitude,
    BodyRates,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.telemetry import SOURCES, TelemetryCache
from offboardd.mavlink.telemetry import WANTED_MESSAGE_IDS as TELEMETRY_IDS
from offboardd.mavlink.translate_in import WANTED_MESSAGE_IDS, InboundTranslator
from offboardd.mqtt.wire import encode_document
from tests.core.bench import Bench

from .benches import engaged_bench
from .budget import Cases, fuzz_settings
from .judge import (
    HOME_ALT_M,
    HOME_LAT_DEG,
    HOME_LON_DEG,
    EnvelopeJudge,
    HomeFix,
    px4_verdict_of_message,
    wire,
)
from .mavlink_strategies import absurd_frames, chunked, damaged

RUNTIME_WANTED = WANTED_MESSAGE_IDS | TELEMETRY_IDS  # what Runtime's codec decodes


def fc_heartbeats(count: int) -> list[bytes]:
    codec = MavlinkCodec(1, 1)
    msg = dialect.MAVLink_heartbeat_message(2, 12, 157, 393216, 4, 3)
    return [codec.encode(msg) for _ in range(count)]


@fuzz_settings("test_codec_survives_random_truncated_and_corrupted_bytes")
@given(frames=st.lists(absurd_frames(), min_size=1, max_size=6), data=st.data())
def test_codec_survives_random_truncated_and_corrupted_bytes(
    frames: list[bytes], data: st.DataObject, cases: Cases
) -> None:
    """One case: a few real frames, then random bytes instead, or the frames damaged,
    or intact; followed by clean heartbeats; all fed in random chunks."""
    cases.add()
    how = data.draw(st.sampled_from(["random", "damaged", "damaged", "damaged", "clean"]))
    stream = b"".join(frames)
    if how == "random":
        raw = data.draw(st.binary(max_size=600))
    elif how == "damaged":
        raw = data.draw(damaged(stream))
    else:
        raw = stream
    tail = fc_heartbeats(15)  # > 280 bytes: the longest frame a damaged header can claim
    codec = MavlinkCodec(1, 191, wanted_ids=RUNTIME_WANTED)
    out = []
    for chunk in data.draw(chunked(raw + b"".join(tail))):
        out += codec.decode(chunk)
    got = [bytes(m.get_msgbuf()) for m in out]
    sent = set(frames) | set(tail)
    assert all(frame in sent for frame in got), "the codec made up or corrupted a frame"
    assert got[-1] == tail[-1], "the frames after the damage were not found again"
    assert codec.stats.frames_ok == len(out)
    if how == "clean":
        assert got == frames + tail
    else:
        cases.note(how)


# -- translator + engine -------------------------------------------------------------------

PLAIN = EnvelopeSettings()  # the defaults: PX4's speed, tilt and yaw-rate limits, no fence
FENCED = EnvelopeSettings(max_distance_m=50.0, min_altitude_m=-2.0, max_altitude_m=40.0)
HOME = HomeFix(HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M, 0.0, 0.0, 0.0)
ENGAGED_WITH: dict[str, tuple[Setpoint | None, EnvelopeSettings]] = {
    "hold_here": (None, PLAIN),
    "position": (PositionNed(3.0, -2.0, -6.0, yaw_rad=0.5), PLAIN),
    "velocity": (VelocityNed(2.0, -1.0, -0.5, yaw_rate_rad_s=0.2), PLAIN),
    "velocity_body": (VelocityBody(1.5, 0.5, 0.0, 0.1), PLAIN),
    "acceleration": (AccelerationNed(0.5, 0.5, -0.2), PLAIN),
    "attitude": (Attitude(math.cos(0.05), 0.0, math.sin(0.05), 0.0, 0.55), PLAIN),
    "body_rates": (BodyRates(0.1, -0.1, 0.2, 0.5), PLAIN),
    "fenced_velocity": (VelocityNed(4.0, 1.0, -0.5), FENCED),
    "fenced_velocity_body": (VelocityBody(3.0, -1.0, 0.2, 0.3), FENCED),
    "fenced_acceleration": (AccelerationNed(1.0, -0.5, 0.3), FENCED),
    "fenced_position_velocity": (PositionVelocityNed(10.0, 5.0, -8.0, 1.0, 0.5, 0.0), FENCED),
}


def judge_stream(bench: Bench, envelope: EnvelopeSettings) -> int:
    """Every setpoint streamed flies and keeps the limits. (The fence is the engine
    fuzz's business: absurd HOME_POSITION frames move home here.)"""
    judge = EnvelopeJudge(envelope, check_fence=False)
    sent = {a.setpoint for _, a in bench.log if isinstance(a, SendSetpoint)}
    for sp in sent:  # the stream repeats each setpoint: judge each value once
        msg = wire(sp)
        verdict = px4_verdict_of_message(msg)
        assert verdict.kind == "valid", (sp, verdict)
        problems = judge.problems(msg)
        assert not problems, (sp, problems)
    return len(sent)


@fuzz_settings("test_absurd_fc_messages_never_crash_nor_bend_the_stream")
@given(kind=st.sampled_from(sorted(ENGAGED_WITH)),
       frames=st.lists(st.tuples(absurd_frames(), st.sampled_from([0.0, 0.01, 0.05, 0.3])),
                       min_size=1, max_size=8))
def test_absurd_fc_messages_never_crash_nor_bend_the_stream(
    kind: str, frames: list[tuple[bytes, float]], cases: Cases
) -> None:
    """One case: an engaged engine (one of eleven setpoint kinds, four with a fence)
    receives one to eight absurd frames, decoded and translated as the runtime does,
    with time passing."""
    cases.add()
    setpoint, envelope = ENGAGED_WITH[kind]
    bench = engaged_bench(setpoint, envelope, HOME)
    codec = MavlinkCodec(1, 191, wanted_ids=RUNTIME_WANTED)
    translator, telemetry = InboundTranslator(), TelemetryCache()
    for frame, dt_s in frames:
        for msg in codec.decode(frame):
            telemetry.update(msg)
            for event in translator.events(msg, bench.now):
                bench.feed(event)
        bench.step(dt_s)
        for event in translator.flush(bench.now):
            bench.feed(event)
        assert not math.isnan(bench.engine.next_deadline())
    bench.step(1.5)  # let the timers run with whatever state the frames left
    for telemetry_kind in SOURCES:
        doc = telemetry.document(telemetry_kind)
        if doc is not None:
            json.loads(encode_document(doc))
    json.loads(encode_document(bench.engine.snapshot(bench.now).as_dict()))
    if judge_stream(bench, envelope):
        cases.note("streamed_after_fuzz")
    if bench.engine.phase.value == "active":
        cases.note("still_active")
