"""A loopback TCP proxy that can 'freeze' (a silent network partition: no FIN, no RST;
bytes pile up in buffers) and 'thaw' (the partition heals: the backlog is delivered)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Proxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while True:
                await self.flowing.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await self.flowing.wait()  # read during the freeze: held back
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers += [writer, up_writer]
        for task in (asyncio.create_task(self._pump(reader, up_writer)),
                     asyncio.create_task(self._pump(up_reader, writer))):
            self._tasks.add(task)

    def freeze(self) -> None:
        self.flowing.clear()

    def thaw(self) -> None:
        self.flowing.set()


@contextlib.asynccontextmanager
async def proxy(upstream_port: int) -> AsyncIterator[Proxy]:
    p = Proxy(upstream_port)
    server = await asyncio.start_server(p._serve, "127.0.0.1", 0)
    p.port = server.sockets[0].getsockname()[1]
    try:
        yield p
    finally:
        p.thaw()
        server.close()
        for task in p._tasks:
            task.cancel()
        for w in p._writers:
            w.close()
