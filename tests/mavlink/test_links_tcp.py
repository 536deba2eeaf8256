"""TCP links over real loopback sockets: frames both ways, tcpout reconnecting to a restarted
peer, tcpin serving one client at a time."""

from __future__ import annotations

import asyncio
import socket

import pytest

from offboardd.mavlink.codec import MavlinkCodec
from offboardd.mavlink.links import LinkStats, TcpInLink, TcpOutLink, open_link
from offboardd.mavlink.links.unsent import UnsentWatch
from tests.mavlink.conftest import Recorder, heartbeat, markers, running, wait_until


class FlightController:
    """A TCP server like PX4 SITL's :5760: accepts clients, can be stopped and restarted."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.codec = MavlinkCodec(1, 1)
        self.clients: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._server: asyncio.Server | None = None
        self._release = asyncio.Event()

    async def start(self) -> None:
        self._release = asyncio.Event()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients.append((reader, writer))
        await self._release.wait()  # keep the handler (and the connection) alive until stop

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for _, writer in self.clients:
            writer.close()
            await writer.wait_closed()
        self.clients.clear()
        self._release.set()
        await self._server.wait_closed()


async def read_markers(
    reader: asyncio.StreamReader, codec: MavlinkCodec, count: int = 1
) -> list[int]:
    got: list[int] = []
    while len(got) < count:
        data = await asyncio.wait_for(reader.read(65536), 5.0)
        assert data, "the link closed the connection"
        got += markers(codec.decode(data))
    return got


async def test_tcpout_exchanges_frames_and_reconnects_to_a_restarted_peer(tcp_port: int) -> None:
    rec = Recorder()
    link = open_link(f"tcpout://127.0.0.1:{tcp_port}", rec.on_bytes, rec.on_state)
    fc = FlightController(tcp_port)
    gcs = MavlinkCodec(1, 191)
    async with running(link):
        # The peer is not there yet: refused, retried, reported in the state detail.
        await wait_until(lambda: "refused" in link.state.detail, "a refused connect")
        assert link.send(heartbeat(gcs, 1)) is False
        await fc.start()
        try:
            await wait_until(lambda: link.up and len(fc.clients) == 1, "the connection")
            assert link.state.detail == f"connected to 127.0.0.1:{tcp_port}"
            reader, writer = fc.clients[0]
            writer.write(heartbeat(fc.codec, 10) + heartbeat(fc.codec, 11))
            await wait_until(lambda: rec.markers() == [10, 11], "frames from the peer")
            assert link.send(heartbeat(gcs, 2)) is True
            assert await read_markers(reader, MavlinkCodec(9, 9)) == [2]

            # The peer restarts: the link goes down, then comes back by itself.
            await fc.stop()
            await wait_until(lambda: rec.ups == [True, False], "down after the peer left")
            assert "peer closed the connection" in rec.transitions[-1].detail
            assert link.send(heartbeat(gcs, 3)) is False
            await asyncio.sleep(0.3)  # a few refused retries while the peer is away
            await fc.start()
            await wait_until(lambda: rec.ups == [True, False, True], "up again", timeout_s=8.0)
            await wait_until(lambda: len(fc.clients) == 1, "the new connection")
            reader, writer = fc.clients[0]
            writer.write(heartbeat(fc.codec, 12))
            await wait_until(lambda: rec.markers() == [10, 11, 12], "frames after reconnect")
            assert link.send(heartbeat(gcs, 4)) is True
            assert await read_markers(reader, MavlinkCodec(9, 9)) == [4]
            frame_len = len(heartbeat(gcs, 0))
            assert link.stats == LinkStats(
                bytes_in=3 * frame_len, bytes_out=2 * frame_len, sends_dropped=2, ups=2, downs=1
            )
        finally:
            await fc.stop()


async def test_tcpin_serves_one_client_at_a_time(tcp_port: int) -> None:
    rec = Recorder()
    link = open_link(f"tcpin://127.0.0.1:{tcp_port}", rec.on_bytes, rec.on_state)
    fc = MavlinkCodec(1, 1)
    me = MavlinkCodec(1, 191)
    async with running(link):
        await wait_until(lambda: link.state.detail.startswith("listening"), "the listen")
        assert link.send(heartbeat(me, 1)) is False  # no client yet

        reader1, writer1 = await asyncio.open_connection("127.0.0.1", tcp_port)
        await wait_until(lambda: link.up, "the first client")
        writer1.write(heartbeat(fc, 10))
        await wait_until(lambda: rec.markers() == [10], "the first client's frame")
        assert link.send(heartbeat(me, 2)) is True
        assert await read_markers(reader1, MavlinkCodec(9, 9)) == [2]

        writer1.close()  # the client leaves: down
        await writer1.wait_closed()
        await wait_until(lambda: rec.ups == [True, False], "down after the client left")
        assert "left" in rec.states[-1].detail

        reader2, writer2 = await asyncio.open_connection("127.0.0.1", tcp_port)
        await wait_until(lambda: rec.ups == [True, False, True], "the second client")
        writer2.write(heartbeat(fc, 20))
        await wait_until(lambda: rec.markers() == [10, 20], "the second client's frame")

        # A third client while the second is live (it just sent): turned away, the second
        # served on (a port scan or a GCS must not cut the FC off).
        intruder_reader, intruder_writer = await asyncio.open_connection("127.0.0.1", tcp_port)
        assert await asyncio.wait_for(intruder_reader.read(65536), 5.0) == b""
        assert rec.ups == [True, False, True] and link.send(heartbeat(me, 4)) is True
        assert await read_markers(reader2, MavlinkCodec(9, 9)) == [4]
        intruder_writer.close()

        # Once the second has been quiet for live_client_s, a third client replaces it:
        # reported as down then up, the old one is cut.
        assert isinstance(link, TcpInLink)
        link.live_client_s = 0.2
        await asyncio.sleep(0.3)
        reader3, writer3 = await asyncio.open_connection("127.0.0.1", tcp_port)
        await wait_until(lambda: rec.ups == [True, False, True, False, True], "the replacement")
        assert "replaced by" in rec.states[-2].detail
        assert await asyncio.wait_for(reader2.read(65536), 5.0) == b""  # EOF for the old one
        assert link.send(heartbeat(me, 3)) is True
        assert await read_markers(reader3, MavlinkCodec(9, 9)) == [3]
        writer3.write(heartbeat(fc, 30))
        await wait_until(lambda: rec.markers() == [10, 20, 30], "the third client's frame")
        for writer in (writer2, writer3):
            writer.close()
            await writer.wait_closed()


async def test_tcpout_drops_instead_of_queueing_behind_a_stalled_peer(tcp_port: int) -> None:
    rec = Recorder()
    link = open_link(f"tcpout://127.0.0.1:{tcp_port}", rec.on_bytes, rec.on_state)
    fc = FlightController(tcp_port)  # accepts, never reads
    await fc.start()
    try:
        async with running(link):
            await wait_until(lambda: link.up, "the connection")
            chunk = bytes(1024)
            taken = sum(link.send(chunk) for _ in range(20_000))  # 20 MB, far past any buffer
            assert link.stats.sends_dropped == 20_000 - taken > 0
            assert link.stats.bytes_out == taken * len(chunk)
    finally:
        await fc.stop()


async def test_tcp_sockets_give_up_on_a_silent_peer_within_seconds(tcp_port: int) -> None:
    link = open_link(f"tcpout://127.0.0.1:{tcp_port}", lambda d: None, lambda s: None)
    fc = FlightController(tcp_port)
    await fc.start()
    try:
        async with running(link):
            await wait_until(lambda: link.up, "the connection")
            assert isinstance(link, TcpOutLink) and link._stream is not None
            assert link._stream.transport is not None
            sock = link._stream.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 5000
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
            with pytest.raises(RuntimeError, match="already running"):
                await link.run()
    finally:
        await fc.stop()


async def test_tcpin_on_port_0_tells_the_port_the_kernel_chose() -> None:
    link = open_link("tcpin://127.0.0.1:0", lambda data: None, lambda state: None)
    assert isinstance(link, TcpInLink)
    async with running(link):
        await wait_until(lambda: link.bound_address is not None, "listening")
        assert link.bound_address is not None
        host, port = link.bound_address
        assert host == "127.0.0.1" and port > 0
        _, writer = await asyncio.open_connection(host, port)
        await wait_until(lambda: link.up, "client connected")
        writer.close()
        await writer.wait_closed()


async def test_a_stalled_peer_is_abandoned_by_the_unsent_watch(tcp_port: int) -> None:
    """A peer whose kernel stops taking our bytes (no ACKs: a host that froze, a network
    that stalled) would get them late and in a burst, retransmitted by TCP. Once bytes
    have waited longer than PX4 trusts a stream the watch ends the connection (it reconnects), so
    they never arrive (links/unsent.py): the runtime passes PX4's COM_OF_LOSS_T."""
    rec = Recorder()
    link = open_link(f"tcpout://127.0.0.1:{tcp_port}", rec.on_bytes, rec.on_state)
    fc = FlightController(tcp_port)  # accepts, never reads
    await fc.start()
    watch = UnsentWatch()
    try:
        async with running(link):
            await wait_until(lambda: link.up, "the connection")
            now = 0.0
            assert watch.check(link, now, 0.5) == 0
            while link.unsent_bytes() == 0:  # fill the peer's receive buffer, then ours
                link.send(bytes(16 * 1024))
                await asyncio.sleep(0)
            for _ in range(5):  # 0.4 s of cycles: nothing has waited 0.5 s yet
                now += 0.1
                assert watch.check(link, now, 0.5) == 0
            now += 0.2
            assert watch.check(link, now, 0.5) > 0
            await wait_until(lambda: any("abandoned" in s.detail for s in rec.states),
                             "the connection abandoned")
            await wait_until(lambda: link.up, "the reconnection")
    finally:
        await fc.stop()


async def test_a_peer_that_accepts_and_closes_at_once_is_dialled_ever_more_slowly(
        tcp_port: int) -> None:
    """ser2net saying "port in use", a busy bridge: it accepts, then closes. The backoff
    started over at every open, and it was dialled 10 times a second for ever, each an FC
    link up and down (review, 2026-11-29). Only a session that lasted starts it over."""
    accepted: list[float] = []

    async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(asyncio.get_running_loop().time())
        writer.close()

    server = await asyncio.start_server(close_at_once, "127.0.0.1", tcp_port)
    link = open_link(f"tcpout://127.0.0.1:{tcp_port}", lambda d: None, lambda s: None)
    try:
        async with running(link):
            await asyncio.sleep(3.0)
    finally:
        server.close()
        await server.wait_closed()
    # 0.1, 0.2, 0.4, 0.8, 1.6 s apart (doubling to 2 s): 5 or 6 in 3 s, not ~30
    assert 3 <= len(accepted) <= 7, accepted
