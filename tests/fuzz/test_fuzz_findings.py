"""Minimal reproductions of what the fuzzing found: regression tests once fixed.

Each test states the property that must hold. A finding not fixed yet carries a strict
xfail, so it fails loudly the day the fix lands and the marker is removed.
"""

from __future__ import annotations

import asyncio
import math
import socket

from offboardd.core.envelope import Envelope
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAttitude, FcHomePosition, FcLocalPosition
from offboardd.core.setpoints import AccelerationNed, VelocityNed
from offboardd.core.vehicle import VehicleState
from offboardd.fc_input import FcInput
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.links import open_link, parse_link_url
from tests.conftest import datagrams_from, free_port

NOW_S = 10.0


def vehicle(*, velocity_ned_m_s: tuple[float, float, float] = (0.0, 0.0, 0.0),
            yaw_rad: float | None = None) -> VehicleState:
    state = VehicleState(estimate_timeout_s=0.5)
    state.fold(FcLocalPosition(1000, 0.0, 0.0, -5.0, *velocity_ned_m_s), NOW_S)
    if yaw_rad is not None:
        state.fold(FcAttitude(1000, 0.0, 0.0, yaw_rad), NOW_S)
    return state


def test_an_infinite_heading_from_the_fc_does_not_crash_the_fenced_stream() -> None:
    """ATTITUDE.yaw = inf (a broken or hostile FC) while a fenced VelocityNed streams:
    the exception escapes OffboardEngine.handle/poll; in the runtime it kills the timer
    callback, so the stream and the companion heartbeat stop."""
    envelope = Envelope(EnvelopeSettings(max_distance_m=30.0))
    envelope.set_home(FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0))
    envelope.shape(VelocityNed(1.0, 0.0, 0.0), vehicle(yaw_rad=math.inf), NOW_S)


def test_a_shaped_acceleration_stays_within_max_acceleration() -> None:
    """Found by the MAVLink fuzz: the FC reports a sink rate of 8 m/s (above
    max_down_speed_m_s = 1.5) while AccelerationNed(0.5, 0.5, -0.2) streams; the engine
    sends (0.5, 0.5, -3.0), 3.08 m/s² > max_acceleration_m_s2 = 3."""
    settings = EnvelopeSettings()
    shaped, _ = Envelope(settings).shape(AccelerationNed(0.5, 0.5, -0.2),
                                         vehicle(velocity_ned_m_s=(0.0, 0.0, 8.0)), NOW_S)
    assert isinstance(shaped, AccelerationNed)
    norm = math.sqrt(shaped.north_m_s2**2 + shaped.east_m_s2**2 + shaped.down_m_s2**2)
    assert norm <= settings.max_acceleration_m_s2 + 1e-9, shaped


async def test_a_garbage_datagram_does_not_divert_the_udpin_link() -> None:
    """Anyone who can reach the daemon's udpin port diverts its setpoints (until the FC
    speaks again) with one datagram of garbage; at a high enough rate, PX4 sees no
    setpoints for COM_OF_LOSS_T and fails safe. The end-to-end fuzz measures the gaps."""
    port = free_port()
    heard: list[bytes] = []
    codec = MavlinkCodec(255, 0)

    def on_bytes(data: bytes) -> None:  # as the runtime does: vouch for valid MAVLink only
        heard.append(data)
        if codec.decode(data):
            link.confirm_sender()

    link = open_link(parse_link_url(f"udpin://127.0.0.1:{port}"), on_bytes,
                     lambda _state: None, confirm_peers=True)
    task = asyncio.create_task(link.run())
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fc, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
        for sock in (fc, stranger):
            sock.bind(("127.0.0.1", 0))
            sock.settimeout(0.2)
        heartbeat = dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3)
        try:
            for _ in range(200):  # until the link is open and has heard the FC
                fc.sendto(MavlinkCodec(1, 1).encode(heartbeat), ("127.0.0.1", port))
                await asyncio.sleep(0.01)
                if heard:
                    break
            # (The FC being live, the garbage is dropped unread since a review: the link
            # keeps a confirmed peer while it speaks. This holds for a silent FC too.)
            link.live_peer_s = 0.0  # type: ignore[attr-defined]
            stranger.sendto(b"\x00 not MAVLink \xff", ("127.0.0.1", port))
            for _ in range(200):
                await asyncio.sleep(0.01)
                if len(heard) >= 2 and heard[-1].startswith(b"\x00"):
                    break
            assert link.send(b"setpoint for the FC")
            await asyncio.sleep(0.05)
            heard_by = (datagrams_from(fc, port)[0], datagrams_from(stranger, port)[0])
            assert heard_by == ([b"setpoint for the FC"], [])
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_frame_split_over_two_datagrams_does_not_divert_the_polled_link() -> None:
    """The end-to-end fuzz sent a lone b"\\xfd" and then a STATUSTEXT frame short of its
    magic byte, each garbage on its own; read in one poll, the link joined a sender's
    consecutive datagrams into one chunk, the two made a whole frame (an EMERGENCY
    STATUSTEXT reached the engine) and a setpoint went to their sender. Each datagram is
    now framed on its own."""
    port = free_port()
    codec = MavlinkCodec(255, 0)
    decoded: list[str] = []

    def on_bytes(data: bytes) -> None:  # as the runtime does: a chunk's frames vouch for it
        messages = codec.decode(data)
        codec.reset()  # (FcInput with whole_frames: nothing kept from one chunk to the next)
        decoded.extend(m.get_type() for m in messages)
        if messages:
            link.confirm_sender()

    link = open_link(parse_link_url(f"udpin://127.0.0.1:{port}"), on_bytes,
                     lambda _state: None, confirm_peers=True, polled=True)
    task = asyncio.create_task(link.run())
    frame = MavlinkCodec(1, 1).encode(dialect.MAVLink_statustext_message(0, b"%LB"))
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fc, \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
            for sock in (fc, stranger):
                sock.bind(("127.0.0.1", 0))
                sock.settimeout(0.2)
            for _ in range(200):  # until the link is open and has the FC as its peer
                fc.sendto(MavlinkCodec(1, 1).encode(
                    dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3)), ("127.0.0.1", port))
                await asyncio.sleep(0.01)
                if link.poll():
                    break
            stranger.sendto(frame[:1], ("127.0.0.1", port))
            stranger.sendto(frame[1:], ("127.0.0.1", port))
            await asyncio.sleep(0.05)
            assert link.poll() == 2  # both in one poll
            assert "STATUSTEXT" not in decoded
            assert link.send(b"setpoint for the FC")
            heard_by = (datagrams_from(fc, port)[0], datagrams_from(stranger, port)[0])
            assert heard_by == ([b"setpoint for the FC"], [])
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def test_a_stray_header_does_not_hold_back_the_next_frames() -> None:
    """Minor (latency): after a datagram ending in b"\\xfd\\xff", whole frames that follow
    are held until 280 bytes have arrived; at PX4's onboard rates a few milliseconds,
    on a heartbeat-only link (21 bytes/s) over ten seconds: longer than fc_timeout_s."""
    codec = MavlinkCodec(1, 191)
    assert codec.decode(b"\xfd\xff") == []
    frame = MavlinkCodec(1, 1).encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3))
    assert [m.get_type() for m in codec.decode(frame)] == ["HEARTBEAT"]


def test_a_udp_chunk_keeps_no_partial_frame_for_the_next_sender() -> None:
    """What a chunk decodes vouches for its sender (the runtime's `confirm_sender`), so it
    must come from that chunk's bytes alone: a frame begun by one sender and finished by
    the next would vouch for the second (the end-to-end fuzz once saw setpoints follow a
    garbage sender). UDP chunks hold whole frames (FcInput's `whole_frames`, set from the
    link): nothing is kept from one chunk to the next. A byte stream keeps its tail."""
    heartbeat = MavlinkCodec(1, 1).encode(dialect.MAVLink_heartbeat_message(2, 12, 0, 0, 4, 3))
    first, rest = heartbeat[:9], heartbeat[9:]  # one sender's start, another's end
    for whole, decoded in ((True, [[], []]), (False, [[], ["FcHeartbeat"]])):
        fc_input = FcInput(MavlinkCodec(255, 0), 0, None, lambda _msg: None,
                           whole_frames=whole)
        seen = []
        for chunk in (first, rest):
            fc_input.decode(chunk, 0.0)
            seen.append([type(e).__name__ for e in fc_input.take(0.0)])
        assert seen == decoded, f"whole_frames={whole}"
