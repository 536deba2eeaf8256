"""Codec: real MAVLink 2 frames in and out; garbage, truncation and corruption counted."""

from __future__ import annotations

import random
from typing import Any

import pytest

from offboardd.mavlink.codec import MavlinkCodec, dialect

# Every message offboardd sends or reads (the sim sends and reads the same set).
# PROTOCOL_VERSION (#300) and ESC_STATUS (#291) are not in pymavlink 2.4.50 at all.
USED_MESSAGES = [
    "HEARTBEAT", "CURRENT_MODE", "COMMAND_LONG", "COMMAND_ACK", "PARAM_REQUEST_READ",
    "PARAM_REQUEST_LIST", "PARAM_SET", "PARAM_VALUE", "STATUSTEXT", "AUTOPILOT_VERSION",
    "SET_POSITION_TARGET_LOCAL_NED", "SET_POSITION_TARGET_GLOBAL_INT",
    "SET_ATTITUDE_TARGET", "POSITION_TARGET_LOCAL_NED", "POSITION_TARGET_GLOBAL_INT",
    "ATTITUDE_TARGET", "LOCAL_POSITION_NED", "GLOBAL_POSITION_INT", "ATTITUDE",
    "ATTITUDE_QUATERNION", "EXTENDED_SYS_STATE", "ESTIMATOR_STATUS", "SYS_STATUS",
    "BATTERY_STATUS", "GPS_RAW_INT", "HOME_POSITION", "ODOMETRY", "HIGHRES_IMU",
    "VFR_HUD", "ALTITUDE", "TIMESYNC", "SYSTEM_TIME", "SERVO_OUTPUT_RAW",
    "MESSAGE_INTERVAL", "EFI_STATUS",
]


def _sample_value(field_type: str, length: int, rng: random.Random) -> Any:
    def one() -> Any:
        if field_type == "char":
            return "".join(rng.choice("ABCxyz_09") for _ in range(length or 1)).encode()
        if field_type in ("float", "double"):
            return rng.choice([0.0, 1.5, -2.25, 1000.125])
        bits = int("".join(c for c in field_type if c.isdigit()) or 8)
        if field_type.startswith("u"):
            return rng.randrange(0, 2**bits)
        return rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1))

    if field_type == "char":
        return one()
    if length:
        return [one() for _ in range(length)]
    return one()


def _build(name: str, rng: random.Random) -> Any:
    cls = dialect.mavlink_map[getattr(dialect, f"MAVLINK_MSG_ID_{name}")]
    # fieldtypes follow the constructor's order; array_lengths follow the wire order.
    lengths = dict(zip(cls.ordered_fieldnames, cls.array_lengths, strict=True))
    args = [
        _sample_value(t, lengths[name], rng)
        for name, t in zip(cls.fieldnames, cls.fieldtypes, strict=True)
    ]
    return cls(*args)


def _normalise(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.rstrip(b"\0").decode()
    return value


@pytest.mark.parametrize("name", USED_MESSAGES)
def test_round_trip_every_used_message(name: str) -> None:
    rng = random.Random(name)
    sender, receiver = MavlinkCodec(1, 191), MavlinkCodec(255, 0)
    msg = _build(name, rng)
    frame = sender.encode(msg)
    assert frame[0] == 0xFD, "MAVLink 2 frames only"
    (decoded,) = receiver.decode(frame)
    assert decoded.get_type() == name
    assert decoded.get_srcSystem() == 1 and decoded.get_srcComponent() == 191
    for field in msg.get_fieldnames():
        assert _normalise(getattr(decoded, field)) == _normalise(getattr(msg, field)), field
    assert receiver.stats.frames_ok == 1 and receiver.stats.frames_bad == 0


def test_sequence_numbers_advance_and_wrap() -> None:
    codec, rx = MavlinkCodec(1, 191), MavlinkCodec(255, 0)
    seqs = []
    for _ in range(300):
        frame = codec.encode(dialect.MAVLink_heartbeat_message(18, 8, 0, 0, 0, 3))
        seqs.append(rx.decode(frame)[0].get_seq())
    assert seqs[:3] == [0, 1, 2]
    assert seqs[255:258] == [255, 0, 1]


def test_a_message_sent_again_is_the_frame_a_fresh_pack_makes() -> None:
    """The stream encodes one message object tick after tick: the codec re-sequences the
    last frame instead of packing again, and must give exactly the bytes a pack would,
    across the sequence's wrap, a change of our system id, and signing (never reused)."""
    reused, fresh = MavlinkCodec(1, 191), MavlinkCodec(1, 191)
    msg = dialect.MAVLink_set_position_target_local_ned_message(
        0, 1, 1, 1, 0b110111111000, 1.5, -2.25, -3.0, 0, 0, 0, 0, 0, 0, 0.5, 0)
    for i in range(600):
        if i == 300:  # the companion heartbeat sets it per target (runtime._dispatch)
            reused.mav.srcSystem = fresh.mav.srcSystem = 7
        clone = dialect.MAVLink_set_position_target_local_ned_message(
            0, 1, 1, 1, 0b110111111000, 1.5, -2.25, -3.0, 0, 0, 0, 0, 0, 0, 0.5, 0)
        assert reused.encode(msg) == fresh.encode(clone), i
    for codec in (reused, fresh):
        codec.enable_signing(bytes(range(32)), timestamp=1000)
    assert reused.encode(msg) == fresh.encode(clone)  # signed: packed (and signed) anew
    rx = MavlinkCodec(255, 0)
    rx.enable_signing(bytes(range(32)), timestamp=0)
    assert [m.x for m in rx.decode(reused.encode(msg))] == [1.5]


def _heartbeats(codec: MavlinkCodec, n: int) -> list[bytes]:
    return [codec.encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3)) for _ in range(n)]


def test_frames_split_at_every_byte_boundary_decode_whole() -> None:
    frames = b"".join(_heartbeats(MavlinkCodec(1, 1), 3))
    for cut in range(1, len(frames)):
        rx = MavlinkCodec(255, 0)
        got = rx.decode(frames[:cut]) + rx.decode(frames[cut:])
        assert len(got) == 3, cut
        assert rx.stats.garbage_bytes == 0


def test_garbage_between_frames_is_counted_and_skipped() -> None:
    a, b = _heartbeats(MavlinkCodec(1, 1), 2)
    rx = MavlinkCodec(255, 0)
    got = rx.decode(b"\x00\x01hello" + a + b"\x13\x37" + b)
    assert [m.get_type() for m in got] == ["HEARTBEAT", "HEARTBEAT"]
    assert rx.stats.garbage_bytes == 9
    assert rx.stats.frames_ok == 2


def test_corrupted_frame_counted_and_the_next_one_still_decodes() -> None:
    a, b = _heartbeats(MavlinkCodec(1, 1), 2)
    bad = bytearray(a)
    bad[12] ^= 0xFF  # a payload byte: the CRC no longer matches
    rx = MavlinkCodec(255, 0)
    got = rx.decode(bytes(bad) + b)
    assert len(got) == 1 and got[0].get_seq() == 1
    assert rx.stats.bad_crc == 1


def test_truncated_frame_followed_by_a_whole_one() -> None:
    a, b = _heartbeats(MavlinkCodec(1, 1), 2)
    rx = MavlinkCodec(255, 0)
    got = rx.decode(a[:7] + b)
    assert len(got) == 1 and got[0].get_seq() == 1


def test_unknown_message_id_is_counted_not_raised() -> None:
    # EVENT (#410) is not in pymavlink 2.4.50's dialects: build a well-formed v2 frame by hand.
    payload = bytes(range(20))
    header = bytes([0xFD, len(payload), 0, 0, 7, 1, 1, 410 & 0xFF, (410 >> 8) & 0xFF, 0])
    frame = header + payload + b"\x12\x34"
    (hb,) = _heartbeats(MavlinkCodec(1, 1), 1)
    rx = MavlinkCodec(255, 0)
    got = rx.decode(frame + hb)
    assert [m.get_type() for m in got] == ["HEARTBEAT"]
    assert rx.stats.unknown_id == 1


def test_wanted_ids_filter_skips_other_frames_at_frame_level() -> None:
    tx = MavlinkCodec(1, 1)
    hb = tx.encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3))
    att = tx.encode(dialect.MAVLink_attitude_message(1, 0, 0, 0, 0, 0, 0))
    rx = MavlinkCodec(255, 0, wanted_ids={dialect.MAVLINK_MSG_ID_HEARTBEAT})
    assert [m.get_type() for m in rx.decode(att + hb + att)] == ["HEARTBEAT"]
    assert rx.stats.filtered == 2


def test_random_bytes_never_raise() -> None:
    rng = random.Random(7)
    rx = MavlinkCodec(255, 0)
    good = _heartbeats(MavlinkCodec(1, 1), 1)[0]
    for _ in range(2000):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        rx.decode(blob)
    rx.reset()
    assert [m.get_type() for m in rx.decode(good)] == ["HEARTBEAT"]


def test_min_interval_thins_a_fast_stream_at_frame_level() -> None:
    tx = MavlinkCodec(1, 1)
    att_id = dialect.MAVLINK_MSG_ID_ATTITUDE
    rx = MavlinkCodec(255, 0, min_interval_s={att_id: 0.045})
    kept = 0
    for i in range(100):  # 1 s of ATTITUDE at PX4's 100/s
        frame = tx.encode(dialect.MAVLink_attitude_message(i, 0, 0, 0, 0, 0, 0))
        hb = tx.encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3))
        got = rx.decode(frame + hb, now_s=i * 0.01)
        assert [m.get_type() for m in got] == ["HEARTBEAT"], "other ids are never thinned"
        kept += sum(m.get_type() == "ATTITUDE" for m in rx.take_held())  # (a poll each)
    assert 20 <= kept <= 23 and rx.stats.thinned == 100 - kept
    assert len(rx.decode(tx.encode(dialect.MAVLink_attitude_message(0, 0, 0, 0, 0, 0, 0)))) == 1, (
        "without now_s nothing is thinned"
    )


def test_a_bad_crc_never_reaches_pymavlink() -> None:
    """Crafted garbage ("FE 00" repeated: a MAVLink 1 HEARTBEAT header every two bytes)
    was handed to pymavlink frame by frame, each refusal an exception: ~1.6 us a byte, and
    1 MB/s of it at the UDP port stalled the stream for 4.4 s (review). The CRC is now
    checked first; a good frame after the garbage still decodes."""
    rx = MavlinkCodec(255, 0)
    calls: list[int] = []
    real = rx._rx.decode

    def spy(frame: bytearray) -> Any:
        calls.append(len(frame))
        return real(frame)

    rx._rx.decode = spy
    (hb,) = _heartbeats(MavlinkCodec(1, 1), 1)
    v1_hb = bytes([0xFE, 9, 0, 1, 1, 0]) + bytes(9) + b"\x00\x00"  # right shape, wrong CRC
    got = rx.decode(b"\xfe\x00" * 4000 + v1_hb * 50 + hb)
    assert [m.get_type() for m in got] == ["HEARTBEAT"]
    assert calls == [] or all(n == len(hb) for n in calls)  # only the good frame, if any
    assert rx.stats.bad_crc >= 4000


def test_thinning_keeps_a_window_per_sender() -> None:
    """Found by review: thinning was per message id, whoever sent it. A second vehicle on a
    shared link sending LOCAL_POSITION_NED 2 ms ahead of our FC's took every window: none
    of our FC's 300 positions in 10 s was decoded."""
    lpos_id = dialect.MAVLINK_MSG_ID_LOCAL_POSITION_NED
    rx = MavlinkCodec(255, 0, min_interval_s={lpos_id: 0.045})
    ours, theirs = MavlinkCodec(1, 1), MavlinkCodec(2, 1)
    kept = {1: 0, 2: 0}
    for i in range(300):  # 10 s, both at PX4's onboard 30/s
        t = i / 30.0
        for codec, at in ((theirs, t - 0.002), (ours, t)):
            frame = codec.encode(dialect.MAVLink_local_position_ned_message(i, 0, 0, -5, 0, 0, 0))
            for msg in rx.decode(frame, now_s=at) + rx.take_held():
                kept[msg.get_srcSystem()] += 1
    assert kept[1] >= 140 and kept[2] >= 140  # every other one (45 ms windows at 33 ms)


def test_a_polls_backlog_gives_its_newest_frame_of_a_thinned_id_not_its_oldest() -> None:
    """A stall: a poll reads 30 positions at once (one datagram each). The first of the
    window was decoded and the rest skipped, so the engine took the oldest, 1.2 s old at 10
    m/s, for new: a hold placed 12 m behind the vehicle (review, 2026-11-29)."""
    lpos_id = dialect.MAVLINK_MSG_ID_LOCAL_POSITION_NED
    rx = MavlinkCodec(255, 0, min_interval_s={lpos_id: 0.045})
    fc, other = MavlinkCodec(1, 1), MavlinkCodec(2, 1)
    for i in range(30):
        north_m = i * 0.4
        for codec in (fc, other):
            frame = codec.encode(dialect.MAVLink_local_position_ned_message(
                i, north_m, 0, -5, 10, 0, 0))
            assert rx.decode(frame, now_s=100.0 + i * 1e-4) == []  # held, not decoded
    newest = {m.get_srcSystem(): m.x for m in rx.take_held()}
    assert newest == {1: pytest.approx(11.6), 2: pytest.approx(11.6)}
    assert rx.stats.thinned == 58 and rx.take_held() == []
    late = fc.encode(dialect.MAVLink_local_position_ned_message(31, 12.0, 0, -5, 10, 0, 0))
    assert rx.decode(late, now_s=100.02) == [] and rx.take_held() == []  # within its window
