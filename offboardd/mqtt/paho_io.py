"""paho's socket writes on the event loop's own thread, without aiomqtt's round trips.

aiomqtt 2 learns that paho has bytes to write through paho's `on_socket_register_write`
and answers with `loop.call_soon_threadsafe(loop.add_writer, ...)`, since paho may call it
from the thread that connects. From the loop's thread that costs, per batch of packets: a
byte through the loop's self-pipe (a send, a wake-up, two reads), an epoll registration, a
second wake-up when the socket is writable, and an epoll de-registration. The daemon
publishes telemetry in 5 such batches a second; strace showed them as a third of its
event-loop passes (bench/README.md).

`InlineWrites` answers the same callback from the loop's thread by writing at once:
at the end of the current batch (`held()`, which the runtime wraps around its cycle), or
else in the next pass of the loop (`call_soon`: no syscall), with the socket corked
meanwhile: the batch leaves as one TCP segment, not one per packet. Only when the
socket takes less than paho holds (a slow broker) does it hand over to aiomqtt's writer,
which waits for the socket to become writable as before; a write that fails is handed
over too, so aiomqtt sees the broken connection and ends the session exactly as it
would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import paho.mqtt.client as paho_mqtt

_RegisterWrite = Callable[[paho_mqtt.Client, Any, Any], None]


class InlineWrites:
    def __init__(self, paho: paho_mqtt.Client, loop: asyncio.AbstractEventLoop) -> None:
        self._paho = paho
        self._loop = loop
        self._thread_id = threading.get_ident()
        fallback: _RegisterWrite | None = paho.on_socket_register_write
        if fallback is None:
            raise ValueError("paho has no socket writer callback: not an aiomqtt session")
        self._fallback = fallback
        self._held = 0
        self._pending = False  # paho has asked to write and nothing has written yet
        self._scheduled = False
        paho.on_socket_register_write = self._on_register_write
        self.inline_writes = 0  # batches written in the loop's pass (counted for tests)

    def held(self) -> InlineWrites:
        """`with writes.held():` packets queue in paho; at the end, one write for them all.
        (The object is its own context manager: no generator per cycle.)"""
        return self

    def __enter__(self) -> None:
        self._held += 1

    def __exit__(self, *exc_info: object) -> None:
        self._held -= 1
        if not self._held and self._pending:
            self._write()

    def _on_register_write(self, client: paho_mqtt.Client, userdata: Any, sock: Any) -> None:
        if threading.get_ident() != self._thread_id:  # (connecting, on aiomqtt's executor)
            self._fallback(client, userdata, sock)
            return
        self._pending = True
        if not self._held and not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._write_soon)

    def _write_soon(self) -> None:
        self._scheduled = False
        if self._pending:
            self._write()

    def _write(self) -> None:
        self._pending = False
        paho = self._paho
        sock = paho.socket()
        if sock is None:  # disconnected meanwhile: aiomqtt already knows
            return
        # For each QoS 0 packet it writes, paho builds a ReasonCode and a Properties for the
        # completion callback (~6 % of the daemon's Python time at the default telemetry
        # rates, cProfile). Only aiomqtt's own QoS 0 publishes wait for that callback, and the
        # daemon makes none (outbox.Outbound refuses QoS 0): it is off while we write.
        on_publish = paho.on_publish
        paho.on_publish = None
        try:
            with _corked(sock):
                paho.loop_write()
            self.inline_writes += 1
        except Exception:  # a broken connection: aiomqtt's writer meets it and reports it
            self._fallback(paho, paho.user_data_get(), sock)
            return
        finally:
            paho.on_publish = on_publish
        if paho.want_write():  # the socket is full: wait until it is writable
            self._fallback(paho, paho.user_data_get(), sock)


@contextlib.contextmanager
def _corked(sock: Any) -> Iterator[None]:
    """paho sends each packet with its own `send`, and sets TCP_NODELAY: a cycle's telemetry
    (3-5 PUBLISHes) went out as 3-5 TCP segments, each waking the broker. Corked, they
    leave together, as the cork is pulled at the end of the write. A TLS socket is corked
    all the same (its records go out together); what is not a TCP socket (a Unix socket,
    paho's websocket wrapper) is written as it is."""
    corked = _set_cork(sock, True)
    try:
        yield
    finally:
        if corked:
            _set_cork(sock, False)


def _set_cork(sock: Any, on: bool) -> bool:
    setsockopt = getattr(sock, "setsockopt", None)
    if setsockopt is None:
        return False
    try:
        setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, int(on))
    except OSError:  # not TCP, or closed meanwhile (then nothing is left to push)
        return False
    return True
