"""UDP links over real loopback sockets: real MAVLink frames both ways, replies to the last
speaker, drops counted, callback errors loud."""

from __future__ import annotations

import asyncio
import socket

import pytest

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.mavlink.links import open_link
from tests.conftest import datagrams_from
from tests.mavlink.conftest import Recorder, heartbeat, markers, running, wait_until


def _peer(family: int = socket.AF_INET, host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(family, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    sock.setblocking(False)
    return sock


async def _recv(sock: socket.socket, codec: MavlinkCodec) -> list[int]:
    data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(sock, 65536), 5.0)
    return markers(codec.decode(data))


async def test_udpin_waits_for_a_peer_then_replies_to_whoever_spoke_last(udp_port: int) -> None:
    rec = Recorder()
    link = open_link(f"udpin://127.0.0.1:{udp_port}", rec.on_bytes, rec.on_state)
    fc = MavlinkCodec(1, 1)
    gcs = MavlinkCodec(1, 191)
    with _peer() as first, _peer() as second:
        async with running(link):
            await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
            assert not link.up
            assert link.send(heartbeat(gcs, 1)) is False  # no peer yet: nowhere to send
            assert link.stats.sends_dropped == 1

            first.sendto(heartbeat(fc, 100), ("127.0.0.1", udp_port))
            await wait_until(lambda: rec.markers() == [100], "the first peer's frame")
            assert link.up
            assert rec.ups == [True]
            assert str(first.getsockname()[1]) in link.state.detail
            assert link.send(heartbeat(gcs, 2)) is True
            assert await _recv(first, MavlinkCodec(9, 9)) == [2]

            second.sendto(heartbeat(fc, 200), ("127.0.0.1", udp_port))
            await wait_until(lambda: rec.markers() == [100, 200], "the second peer's frame")
            assert link.send(heartbeat(gcs, 3)) is True
            assert await _recv(second, MavlinkCodec(9, 9)) == [3]
            assert not datagrams_from(first, udp_port)[0]  # the first peer gets no replies now

            assert rec.ups == [True]  # a new peer is not a transition
            assert link.stats.bytes_in == sum(len(c) for c in rec.chunks)
            assert link.stats.bytes_out == 2 * len(heartbeat(gcs, 0))
        assert rec.ups == [True, False]
        assert rec.states[-1].detail == "closed"


async def test_udpin_keeps_a_confirmed_peer_while_it_speaks(udp_port: int) -> None:
    """The daemon's udpin (confirm_peers): five forged frames with the FC's ids from
    another address read as an FC reboot and ended a flight (review). While the peer spoke
    within `live_peer_s` another sender's datagrams are dropped unread, valid MAVLink or
    not; after that much silence a sender its frames vouch for takes over."""
    rec = Recorder()
    codec = MavlinkCodec(255, 0)

    def on_bytes(data: bytes) -> None:  # as the runtime does: valid MAVLink vouches
        rec.on_bytes(data)
        if codec.decode(data):
            link.confirm_sender()

    link = open_link(f"udpin://127.0.0.1:{udp_port}", on_bytes, rec.on_state,
                     confirm_peers=True)
    link.live_peer_s = 0.3  # type: ignore[attr-defined]  # (2 s in the daemon)
    fc, gcs = MavlinkCodec(1, 1), MavlinkCodec(1, 191)
    with _peer() as real, _peer() as forger:
        async with running(link):
            await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
            real.sendto(heartbeat(fc, 100), ("127.0.0.1", udp_port))
            await wait_until(lambda: rec.markers() == [100], "the FC's frame")
            for marker in (201, 202, 203):  # the FC's own ids, from elsewhere
                forger.sendto(heartbeat(fc, marker), ("127.0.0.1", udp_port))
            real.sendto(heartbeat(fc, 101), ("127.0.0.1", udp_port))
            await wait_until(lambda: rec.markers() == [100, 101], "the FC's next frame")
            assert link.ignored_datagrams == 3  # type: ignore[attr-defined]
            assert link.send(heartbeat(gcs, 1))
            assert await _recv(real, MavlinkCodec(9, 9)) == [1]
            assert not datagrams_from(forger, udp_port)[0]

            await asyncio.sleep(0.4)  # the FC silent for longer than live_peer_s
            forger.sendto(heartbeat(fc, 204), ("127.0.0.1", udp_port))
            await wait_until(lambda: rec.markers() == [100, 101, 204], "the new sender")
            assert link.send(heartbeat(gcs, 2))
            assert await _recv(forger, MavlinkCodec(9, 9)) == [2]


async def test_udpout_is_up_at_once_and_gets_replies_on_its_socket() -> None:
    rec = Recorder()
    gcs = MavlinkCodec(1, 191)
    fc = MavlinkCodec(1, 1)
    with _peer() as px4, _peer() as stranger:
        port = px4.getsockname()[1]
        link = open_link(f"udpout://127.0.0.1:{port}", rec.on_bytes, rec.on_state)
        async with running(link):
            await wait_until(lambda: link.up, "the socket")
            assert f"127.0.0.1:{port}" in link.state.detail
            assert link.send(heartbeat(gcs, 7)) is True
            loop = asyncio.get_running_loop()
            data, link_addr = await asyncio.wait_for(loop.sock_recvfrom(px4, 65536), 5.0)
            assert markers(fc.decode(data)) == [7]

            stranger.sendto(heartbeat(fc, 666), link_addr)  # connected socket: kernel drops it
            px4.sendto(heartbeat(fc, 8), link_addr)
            await wait_until(lambda: rec.markers() == [8], "the reply")
            await asyncio.sleep(0.05)
            assert rec.markers() == [8]


async def test_udpin_over_ipv6_loopback() -> None:
    rec = Recorder()
    with _peer(socket.AF_INET6, "::1") as probe:
        port = probe.getsockname()[1]
    link = open_link(f"udpin://[::1]:{port}", rec.on_bytes, rec.on_state)
    codec = MavlinkCodec(1, 1)
    with _peer(socket.AF_INET6, "::1") as peer:
        async with running(link):
            await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
            peer.sendto(heartbeat(codec, 6), ("::1", port))
            await wait_until(lambda: rec.markers() == [6], "the frame")
            assert "[::1]:" in link.state.detail
            assert link.send(heartbeat(codec, 60)) is True
            assert await _recv(peer, MavlinkCodec(9, 9)) == [60]


async def test_a_bind_failure_is_retried_and_reported(udp_port: int) -> None:
    rec = Recorder()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as squatter:
        squatter.bind(("127.0.0.1", udp_port))
        link = open_link(f"udpin://127.0.0.1:{udp_port}", rec.on_bytes, rec.on_state)
        async with running(link):
            await wait_until(lambda: "cannot open" in link.state.detail, "the bind failure")
            assert "in use" in link.state.detail
            squatter.close()  # the port frees up: the next retry binds
            await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
    # never up, so no transition; the failure reported once, not once per retry
    assert rec.ups == []
    assert rec.failures == [f"cannot open udpin://127.0.0.1:{udp_port}: Address already in use"]


async def test_an_exception_in_on_bytes_ends_run_with_it(udp_port: int) -> None:
    class Boom(Exception):
        pass

    def explode(data: bytes) -> None:
        raise Boom("runtime bug")

    link = open_link(f"udpin://127.0.0.1:{udp_port}", explode, lambda state: None)
    task = asyncio.create_task(link.run())
    with _peer() as peer:
        await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
        peer.sendto(b"\xfd", ("127.0.0.1", udp_port))
        with pytest.raises(Boom, match="runtime bug"):
            await asyncio.wait_for(task, 5.0)
    assert not link.up


def test_a_reopened_udpin_socket_takes_a_new_sender_at_once() -> None:
    """The old peer's last word belongs to the old socket: kept, a sender within 2 s of a
    reopen was turned away as if a live peer held the link (review)."""
    rec = Recorder()

    def on_bytes(data: bytes) -> None:  # every sender vouched for (as the FC's frames do)
        rec.on_bytes(data)
        link.confirm_sender()

    link = open_link("udpin://127.0.0.1:1", on_bytes, rec.on_state, confirm_peers=True)
    link._datagram(b"from the FC", ("127.0.0.1", 14580))  # type: ignore[attr-defined]
    link._opened(None)  # type: ignore[attr-defined]  # the socket reopened after an error
    link._datagram(b"from the FC, back", ("127.0.0.1", 14581))  # type: ignore[attr-defined]
    assert rec.chunks == [b"from the FC", b"from the FC, back"]
    assert link.ignored_datagrams == 0  # type: ignore[attr-defined]
