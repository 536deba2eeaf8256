"""Connection URLs in MAVSDK's conventions: parse, validate, print back.

`udpin://0.0.0.0:14540`, `udpout://host:port`, `tcpin://host:port`, `tcpout://host:port`,
`serial:///dev/ttyAMA0:921600`, `serial_flowcontrol:///dev/ttyAMA0:921600`; IPv6 literals go
in brackets (`udpin://[::1]:14540`). Every malformed URL raises `LinkUrlError` with a message
that names the part that is wrong, so a typo in a config file is fixed in one go.

This module must not open anything, resolve names or touch the file system: it only checks text.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from offboardd.errors import LinkUrlError

__all__ = ["NETWORK_SCHEMES", "SERIAL_SCHEMES", "STANDARD_BAUDS", "LinkUrl", "parse_link_url"]

NETWORK_SCHEMES = ("udpin", "udpout", "tcpin", "tcpout")
SERIAL_SCHEMES = ("serial", "serial_flowcontrol")
_ALL_SCHEMES = NETWORK_SCHEMES + SERIAL_SCHEMES
# MAVSDK's deprecated spellings: say what replaced them rather than "unknown scheme".
_OLD_SCHEMES = {
    "udp": "udpin:// (listen) or udpout:// (send to)",
    "tcp": "tcpout:// (connect) or tcpin:// (listen)",
}

# The rates Linux termios names (B50 ... B4000000), which pyserial and PX4's SER_*_BAUD use;
# anything else is almost always a typo (92160 for 921600).
STANDARD_BAUDS = frozenset(
    (50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400, 57600,
     115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000,
     2500000, 3000000, 3500000, 4000000)
)  # fmt: skip

# RFC 1123 host names: labels of letters, digits and inner hyphens.
_HOSTNAME = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?$")


@dataclass(frozen=True)
class LinkUrl:
    """A parsed, validated link URL; network links have host/port, serial ones device/baud."""

    scheme: str
    host: str | None = None
    port: int | None = None
    device: str | None = None
    baud: int | None = None

    @property
    def is_serial(self) -> bool:
        return self.scheme in SERIAL_SCHEMES

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) of a network URL."""
        if self.host is None or self.port is None:
            raise ValueError(f"{self} has no host:port")
        return self.host, self.port

    def __str__(self) -> str:
        if self.is_serial:
            return f"{self.scheme}://{self.device}:{self.baud}"
        return f"{self.scheme}://{format_host_port(*self.address)}"


def format_host_port(host: str, port: int) -> str:
    """`host:port`, with IPv6 literals in brackets as URLs write them."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_link_url(url: str) -> LinkUrl:
    """Parse `url`; raise `LinkUrlError` naming the wrong part if it is malformed."""
    if not isinstance(url, str) or not url.strip():
        raise LinkUrlError("link URL is empty; expected e.g. udpin://0.0.0.0:14540")
    text = url.strip()
    if any(c.isspace() for c in text):
        raise LinkUrlError(f"link URL {text!r} contains whitespace")
    if "://" not in text:
        raise LinkUrlError(
            f"link URL {text!r} is missing '://' after the scheme; expected e.g. "
            "udpin://0.0.0.0:14540 or serial:///dev/ttyAMA0:921600"
        )
    scheme, rest = text.split("://", 1)
    scheme = scheme.lower()
    if scheme in _OLD_SCHEMES:
        raise LinkUrlError(
            f"link URL {text!r}: scheme {scheme!r} is MAVSDK's old form; use {_OLD_SCHEMES[scheme]}"
        )
    if scheme not in _ALL_SCHEMES:
        raise LinkUrlError(
            f"link URL {text!r}: unknown scheme {scheme!r}; use one of "
            + ", ".join(s + "://" for s in _ALL_SCHEMES)
        )
    for mark, part in (("?", "query"), ("#", "fragment")):
        if mark in rest:
            raise LinkUrlError(f"link URL {text!r}: unexpected {part} {rest[rest.index(mark) :]!r}")
    if scheme in SERIAL_SCHEMES:
        return _parse_serial(text, scheme, rest)
    return _parse_network(text, scheme, rest)


def _parse_network(text: str, scheme: str, rest: str) -> LinkUrl:
    if "/" in rest:
        raise LinkUrlError(
            f"link URL {text!r}: unexpected path {rest[rest.index('/') :]!r} after host:port"
        )
    if "@" in rest:
        raise LinkUrlError(f"link URL {text!r}: user info ('...@') is not supported")
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise LinkUrlError(f"link URL {text!r}: IPv6 host is missing its closing ']'")
        host = rest[1:close]
        after = rest[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise LinkUrlError(
                f"link URL {text!r}: host {host!r} in brackets is not an IPv6 address"
            ) from None
        if after and not after.startswith(":"):
            raise LinkUrlError(f"link URL {text!r}: unexpected {after!r} after the IPv6 host")
        port_text = after[1:] if after else None
    else:
        if rest.count(":") > 1:
            raise LinkUrlError(
                f"link URL {text!r}: an IPv6 host must be in brackets, e.g. {scheme}://[::1]:14540"
            )
        host, sep, port_after = rest.partition(":")
        port_text = port_after if sep else None
        if host and not _valid_host(host):
            raise LinkUrlError(f"link URL {text!r}: host {host!r} is not an IP address or name")
    if not host:
        raise LinkUrlError(
            f"link URL {text!r} is missing the host; e.g. {scheme}://"
            + ("0.0.0.0:14540 to listen on every address" if scheme.endswith("in") else
               "127.0.0.1:14580")
        )  # fmt: skip
    if scheme.endswith("out") and _is_unspecified(host):
        raise LinkUrlError(
            f"link URL {text!r}: host {host!r} is a listen-on-all address, not a destination"
        )
    # A listener may ask for port 0: the kernel picks a free one (tests, ephemeral set-ups).
    port = _parse_port(text, port_text, lowest=0 if scheme.endswith("in") else 1)
    return LinkUrl(scheme=scheme, host=host, port=port)


def _parse_port(text: str, port_text: str | None, lowest: int) -> int:
    if not port_text:
        raise LinkUrlError(f"link URL {text!r} is missing the port after the host (host:port)")
    if not port_text.isdigit() or not port_text.isascii():
        raise LinkUrlError(f"link URL {text!r}: port {port_text!r} is not a number")
    port = int(port_text)
    if not lowest <= port <= 65535:
        raise LinkUrlError(f"link URL {text!r}: port {port} is out of range {lowest}..65535")
    return port


def _parse_serial(text: str, scheme: str, rest: str) -> LinkUrl:
    device, sep, baud_text = rest.rpartition(":")
    if not sep:
        device, baud_text = rest, ""
    if not device:
        raise LinkUrlError(
            f"link URL {text!r} is missing the serial device; e.g. {scheme}:///dev/ttyAMA0:921600"
        )
    if not device.startswith("/"):
        raise LinkUrlError(
            f"link URL {text!r}: serial device {device!r} must be an absolute path "
            f"(three slashes: {scheme}:///dev/...)"
        )
    if device.endswith("/"):
        raise LinkUrlError(f"link URL {text!r}: serial device {device!r} is a directory path")
    if not baud_text:
        raise LinkUrlError(
            f"link URL {text!r} is missing the baud rate after the device "
            f"(e.g. {scheme}://{device}:921600)"
        )
    if not baud_text.isdigit() or not baud_text.isascii():
        raise LinkUrlError(f"link URL {text!r}: baud rate {baud_text!r} is not a number")
    baud = int(baud_text)
    if baud not in STANDARD_BAUDS:
        raise LinkUrlError(
            f"link URL {text!r}: baud rate {baud} is not a standard rate "
            f"(did you mean {_suggest_baud(baud_text)}?)"
        )
    return LinkUrl(scheme=scheme, device=device, baud=baud)


def _suggest_baud(typed: str) -> int:
    """A digit dropped or added (92160, 1152000) is the usual typo; else the nearest rate."""
    digits = typed.lstrip("0")
    similar = [
        b
        for b in STANDARD_BAUDS
        if digits and (str(b).startswith(digits) or digits.startswith(str(b)))
    ]
    if similar:
        return min(similar, key=lambda b: abs(len(str(b)) - len(digits)))
    return min(STANDARD_BAUDS, key=lambda b: (abs(b - int(typed)), b))


def _valid_host(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        # Not a dotted quad; a name must not look like a broken one (1.2.3 or 300.1.1.1).
        return _HOSTNAME.match(host) is not None and not host.replace(".", "").isdigit()
    return True


def _is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False
