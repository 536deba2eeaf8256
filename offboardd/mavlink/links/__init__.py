"""MAVLink link transports: bytes to and from a flight controller, nothing more.

`open_link(url, on_bytes, on_state)` builds the link a URL names (see url.py for the
forms); `await link.run()` opens it and keeps it open, reconnecting by itself, until
cancelled. `link.send(data)` never blocks and never raises. Framing and decoding belong
to codec.py; liveness of the flight controller (HEARTBEAT timeouts) to the runtime.
"""

from __future__ import annotations

from offboardd.mavlink.links.base import (
    MAX_BACKLOG_BYTES,
    BytesCallback,
    Link,
    LinkState,
    LinkStats,
    StateCallback,
)
from offboardd.mavlink.links.serial import SerialLink
from offboardd.mavlink.links.tcp import TcpInLink, TcpOutLink
from offboardd.mavlink.links.udp import UdpInLink, UdpOutLink
from offboardd.mavlink.links.url import LinkUrl, parse_link_url

__all__ = [
    "MAX_BACKLOG_BYTES",
    "Link",
    "LinkState",
    "LinkStats",
    "LinkUrl",
    "SerialLink",
    "TcpInLink",
    "TcpOutLink",
    "UdpInLink",
    "UdpOutLink",
    "open_link",
    "parse_link_url",
]

_LINK_TYPES: dict[str, type[Link]] = {
    "udpin": UdpInLink,
    "udpout": UdpOutLink,
    "tcpin": TcpInLink,
    "tcpout": TcpOutLink,
    "serial": SerialLink,
    "serial_flowcontrol": SerialLink,
}


def open_link(
    url: str | LinkUrl,
    on_bytes: BytesCallback,
    on_state: StateCallback,
    *,
    confirm_peers: bool = False,
    polled: bool = False,
) -> Link:
    """The link for `url` (parsed here if given as text: raises `LinkUrlError`).

    Nothing is opened until `run()`; `on_bytes` gets each received chunk and `on_state`
    each up/down transition, both called synchronously from the event loop.
    `confirm_peers`: a udpin link replies only to senders `confirm_sender()` vouched for.
    `polled`: UDP links deliver only when `poll()` is called (others ignore it: `link.polled`
    says which it is).
    """
    parsed = url if isinstance(url, LinkUrl) else parse_link_url(url)
    link = _LINK_TYPES[parsed.scheme](parsed, on_bytes, on_state)
    if isinstance(link, UdpInLink):
        link.confirm_peers = confirm_peers
    link.polled = polled and link.can_poll
    return link
