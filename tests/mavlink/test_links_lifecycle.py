"""Every transport, cancelled while up with a live peer: descriptors closed, no ResourceWarning,
no task left behind; and a callback's exception ends `run()` instead of being swallowed."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import socket
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from offboardd.mavlink.links import LinkState, open_link
from tests.conftest import free_port
from tests.mavlink.conftest import Recorder, open_fds, wait_until

# Each peer factory sets up the far end and yields (link URL, a "kick" that makes the link
# come up, the fds the peer itself opens later); what it opens before the yield is in the
# "before" fd snapshot.
Peer = tuple[str, Callable[[], object], Callable[[], set[int]]]
PeerFactory = Callable[[Path], contextlib.AbstractAsyncContextManager[Peer]]


def _none() -> set[int]:
    return set()


@contextlib.asynccontextmanager
async def udpin_peer(tmp_path: Path) -> AsyncIterator[Peer]:
    port = free_port(socket.SOCK_DGRAM)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        yield (
            f"udpin://127.0.0.1:{port}",
            (lambda: peer.sendto(b"\xfd", ("127.0.0.1", port))),
            _none,
        )


@contextlib.asynccontextmanager
async def udpout_peer(tmp_path: Path) -> AsyncIterator[Peer]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        yield f"udpout://127.0.0.1:{peer.getsockname()[1]}", lambda: None, _none


@contextlib.asynccontextmanager
async def tcpout_peer(tmp_path: Path) -> AsyncIterator[Peer]:
    writers: list[asyncio.StreamWriter] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)

    port = free_port(socket.SOCK_STREAM)
    server = await asyncio.start_server(accept, "127.0.0.1", port)
    try:
        yield (
            f"tcpout://127.0.0.1:{port}",
            lambda: None,
            lambda: {w.get_extra_info("socket").fileno() for w in writers},
        )
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def tcpin_peer(tmp_path: Path) -> AsyncIterator[Peer]:
    port = free_port(socket.SOCK_STREAM)
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        yield f"tcpin://127.0.0.1:{port}", lambda: client.connect(("127.0.0.1", port)), _none
    finally:
        client.close()  # opened before the snapshot, so it is in both


@contextlib.asynccontextmanager
async def serial_peer(tmp_path: Path) -> AsyncIterator[Peer]:
    master, slave = os.openpty()
    path = tmp_path / "ttyFC"
    path.symlink_to(os.ttyname(slave))
    os.close(slave)
    try:
        yield f"serial_flowcontrol://{path}:921600", lambda: None, _none
    finally:
        os.close(master)


@pytest.mark.parametrize(
    "make_peer",
    [udpin_peer, udpout_peer, tcpout_peer, tcpin_peer, serial_peer],
    ids=["udpin", "udpout", "tcpout", "tcpin", "serial"],
)
async def test_cancelling_run_closes_every_descriptor(
    make_peer: PeerFactory, tmp_path: Path
) -> None:
    rec = Recorder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        async with make_peer(tmp_path) as (url, kick, peer_fds):
            tasks_before = asyncio.all_tasks()
            fds_before = open_fds()
            link = open_link(url, rec.on_bytes, rec.on_state)
            task = asyncio.create_task(link.run())
            await wait_until(lambda: link.state.detail != "not opened yet", "the open")
            kick()
            await wait_until(lambda: link.up, "the link up")
            await asyncio.sleep(0.02)  # let the peer's side settle (accept, handlers)
            owned_by_peer = peer_fds()

            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not link.up
            assert rec.ups == [True, False]
            assert rec.states[-1] == LinkState(up=False, detail="closed")
            assert link.send(b"late") is False
            assert open_fds() - fds_before - owned_by_peer == set()
            assert asyncio.all_tasks() - tasks_before == set()
        gc.collect()  # unclosed transports and files warn when collected
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


async def test_an_exception_in_on_state_ends_run_with_it() -> None:
    class Boom(Exception):
        pass

    def explode(state: LinkState) -> None:
        if state.up:
            raise Boom("runtime bug in on_state")

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        fds_before = open_fds()
        link = open_link(f"udpout://127.0.0.1:{peer.getsockname()[1]}", lambda d: None, explode)
        with pytest.raises(Boom, match="runtime bug"):
            await asyncio.wait_for(link.run(), 5.0)
        assert not link.up
        assert open_fds() - fds_before == set()
