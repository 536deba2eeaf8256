"""Polled UDP links (what the daemon runs): the event loop never reads the socket; each
`poll()` delivers every datagram the kernel holds, in order, and nothing in between."""

from __future__ import annotations

import asyncio
import socket

import pytest

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.mavlink.links import open_link, udp
from tests.mavlink.conftest import Recorder, heartbeat, markers, running, wait_until


def _peer() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    return sock


async def test_udpin_delivers_only_when_polled_all_that_waits_in_order(udp_port: int) -> None:
    rec = Recorder()
    link = open_link(f"udpin://127.0.0.1:{udp_port}", rec.on_bytes, rec.on_state, polled=True)
    assert link.polled
    fc, gcs = MavlinkCodec(1, 1), MavlinkCodec(1, 191)
    with _peer() as px4:
        async with running(link):
            await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
            assert link.poll() == 0
            for marker in (1, 2, 3):
                px4.sendto(heartbeat(fc, marker), ("127.0.0.1", udp_port))
            await asyncio.sleep(0.1)  # the loop runs; a polled link must not read meanwhile
            assert rec.chunks == [] and not link.up
            assert link.poll() == 3
            assert rec.markers() == [1, 2, 3] and link.up  # the sender became the peer
            assert len(rec.chunks) == 3  # a datagram at a time: no frame spans two
            assert link.poll() == 0
            assert link.send(heartbeat(gcs, 9))
            data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(px4, 65536), 5.0)
            assert markers(MavlinkCodec(9, 9).decode(data)) == [9]
        assert link.poll() == 0  # closed: nothing to read, no error


async def test_udpout_polled_gets_replies_and_ignores_icmp_refusals(udp_port: int) -> None:
    rec = Recorder()
    link = open_link(f"udpout://127.0.0.1:{udp_port}", rec.on_bytes, rec.on_state, polled=True)
    fc, gcs = MavlinkCodec(1, 1), MavlinkCodec(1, 191)
    async with running(link):
        await wait_until(lambda: link.up, "the socket")
        assert link.send(heartbeat(gcs, 1))  # nobody listens yet: an ICMP refusal comes back
        await asyncio.sleep(0.05)
        assert link.poll() == 0 and link.up
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as px4:
            px4.bind(("127.0.0.1", udp_port))
            assert link.send(heartbeat(gcs, 2))
            _, daemon_addr = px4.recvfrom(65536)
            px4.sendto(heartbeat(fc, 7), daemon_addr)
            await wait_until(lambda: link.poll() > 0, "the reply")
        assert rec.markers() == [7]


async def test_a_callback_error_while_polled_ends_run(udp_port: int) -> None:
    calls: list[bytes] = []

    def explode(data: bytes) -> None:
        calls.append(data)
        raise RuntimeError("bug in the consumer")

    link = open_link(f"udpin://127.0.0.1:{udp_port}", explode, lambda state: None, polled=True)
    task = asyncio.create_task(link.run())
    await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
    with _peer() as px4, _peer() as other:  # two senders: two chunks
        px4.sendto(heartbeat(MavlinkCodec(1, 1), 1), ("127.0.0.1", udp_port))
        other.sendto(heartbeat(MavlinkCodec(2, 1), 2), ("127.0.0.1", udp_port))
        await asyncio.sleep(0.05)
        link.poll()
        assert markers(MavlinkCodec(9, 9).decode(calls[0])) == [1]
        assert len(calls) == 1  # stops at the fault: the second sender's chunk is not delivered
    with pytest.raises(RuntimeError, match="bug in the consumer"):
        await asyncio.wait_for(task, 5.0)


def test_stream_links_are_never_polled() -> None:
    for url in ("tcpout://127.0.0.1:5760", "serial:///dev/ttyAMA0:921600"):
        link = open_link(url, lambda data: None, lambda state: None, polled=True)
        assert not link.polled and link.poll() == 0


async def test_one_poll_takes_at_most_its_byte_budget(udp_port: int) -> None:
    """A flood of big datagrams is read a budget at a time; the rest waits for the next
    poll (or is dropped by the kernel), so one poll cannot hold the control cycle (review:
    1,000 datagrams of 32 KB of crafted garbage stalled the stream for 4.4 s)."""
    rec = Recorder()
    link = open_link(f"udpin://127.0.0.1:{udp_port}", rec.on_bytes, rec.on_state, polled=True)
    with _peer() as flood:
        async with running(link):
            await wait_until(lambda: link.state.detail.startswith("listening"), "the bind")
            for _ in range(8):
                flood.sendto(bytes(16_000), ("127.0.0.1", udp_port))
            await asyncio.sleep(0.1)
            first = link.poll()
            assert 0 < first < 8
            assert sum(map(len, rec.chunks)) <= udp._MAX_BYTES_PER_POLL + 16_000
            assert first + link.poll() + link.poll() == 8  # the rest, on later polls
