"""Link URLs: the MAVSDK forms parse and print back; each malformed class names its fault."""

from __future__ import annotations

import pytest

from offboardd.errors import ErrorCode, LinkUrlError
from offboardd.mavlink.links import (
    LinkUrl,
    SerialLink,
    TcpInLink,
    TcpOutLink,
    UdpInLink,
    UdpOutLink,
    open_link,
    parse_link_url,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("udpin://0.0.0.0:14540", LinkUrl("udpin", host="0.0.0.0", port=14540)),
        ("udpout://127.0.0.1:14580", LinkUrl("udpout", host="127.0.0.1", port=14580)),
        ("udpout://px4.local:14580", LinkUrl("udpout", host="px4.local", port=14580)),
        ("tcpout://localhost:5760", LinkUrl("tcpout", host="localhost", port=5760)),
        ("tcpin://0.0.0.0:5760", LinkUrl("tcpin", host="0.0.0.0", port=5760)),
        ("udpin://[::1]:14540", LinkUrl("udpin", host="::1", port=14540)),
        ("tcpout://[fe80::1]:5760", LinkUrl("tcpout", host="fe80::1", port=5760)),
        ("serial:///dev/ttyAMA0:921600", LinkUrl("serial", device="/dev/ttyAMA0", baud=921600)),
        (
            "serial_flowcontrol:///dev/ttyACM0:57600",
            LinkUrl("serial_flowcontrol", device="/dev/ttyACM0", baud=57600),
        ),
        (  # udev's by-path names hold colons: the baud is after the last one
            "serial:///dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0:115200",
            LinkUrl(
                "serial", device="/dev/serial/by-path/pci-0000:00:14.0-usb-0:1:1.0", baud=115200
            ),
        ),
        ("  UDPIN://0.0.0.0:14540 ", LinkUrl("udpin", host="0.0.0.0", port=14540)),
    ],
)
def test_valid_urls_parse_and_print_back(text: str, expected: LinkUrl) -> None:
    parsed = parse_link_url(text)
    assert parsed == expected
    assert parse_link_url(str(parsed)) == parsed


def test_str_is_the_canonical_text() -> None:
    assert str(parse_link_url("udpin://[::1]:14540")) == "udpin://[::1]:14540"
    assert str(parse_link_url("serial:///dev/ttyS0:57600")) == "serial:///dev/ttyS0:57600"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", "empty"),
        ("udpin://0.0.0.0: 14540", "whitespace"),
        ("0.0.0.0:14540", "missing '://'"),
        ("udpin:/0.0.0.0:14540", "missing '://'"),
        ("http://0.0.0.0:14540", "unknown scheme 'http'"),
        ("udp://:14540", "MAVSDK's old form; use udpin://"),
        ("tcp://127.0.0.1:5760", "MAVSDK's old form; use tcpout://"),
        ("udpin://:14540", "missing the host"),
        ("tcpout://", "missing the host"),
        ("udpin://0.0.0.0", "missing the port"),
        ("udpin://0.0.0.0:", "missing the port"),
        ("udpin://0.0.0.0:abc", "port 'abc' is not a number"),
        ("udpin://0.0.0.0:-1", "port '-1' is not a number"),
        ("udpout://127.0.0.1:0", "port 0 is out of range 1..65535"),
        ("tcpout://127.0.0.1:65536", "port 65536 is out of range"),
        ("udpin://0.0.0.0:14540/mavlink", "unexpected path '/mavlink'"),
        ("udpin://0.0.0.0:14540?ttl=1", "unexpected query '?ttl=1'"),
        ("serial:///dev/ttyS0:57600#x", "unexpected fragment '#x'"),
        ("udpin://user@0.0.0.0:14540", "user info"),
        ("udpin://::1:14540", "IPv6 host must be in brackets"),
        ("udpin://[::1:14540", "missing its closing ']'"),
        ("udpin://[1.2.3.4]:14540", "'1.2.3.4' in brackets is not an IPv6 address"),
        ("udpin://[::1]14540", "unexpected '14540' after the IPv6 host"),
        ("udpin://bad_host!:14540", "host 'bad_host!' is not an IP address or name"),
        ("udpin://300.1.1.1:14540", "host '300.1.1.1' is not an IP address or name"),
        ("udpout://0.0.0.0:14540", "listen-on-all address, not a destination"),
        ("tcpout://[::]:5760", "listen-on-all address, not a destination"),
        ("serial://", "missing the serial device"),
        ("serial://:921600", "missing the serial device"),
        ("serial://dev/ttyS0:57600", "must be an absolute path"),
        ("serial:///dev/:57600", "is a directory path"),
        ("serial:///dev/ttyAMA0", "missing the baud rate"),
        ("serial:///dev/ttyAMA0:", "missing the baud rate"),
        ("serial:///dev/ttyAMA0:fast", "baud rate 'fast' is not a number"),
        ("serial:///dev/ttyAMA0:5760", "5760 is not a standard rate (did you mean 57600?)"),
        ("serial:///dev/ttyAMA0:17000", "not a standard rate (did you mean 19200?)"),
        ("serial:///dev/ttyAMA0:100000", "not a standard rate (did you mean 1000000?)"),
        (
            "serial_flowcontrol:///dev/ttyAMA0:92160",
            "92160 is not a standard rate (did you mean 921600?)",
        ),
    ],
)
def test_each_malformed_url_names_its_fault(text: str, names: str) -> None:
    with pytest.raises(LinkUrlError) as caught:
        parse_link_url(text)
    assert names in caught.value.message
    assert caught.value.code is ErrorCode.LINK_URL_INVALID


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("udpin://127.0.0.1:14540", UdpInLink),
        ("udpout://127.0.0.1:14580", UdpOutLink),
        ("tcpin://127.0.0.1:5760", TcpInLink),
        ("tcpout://127.0.0.1:5760", TcpOutLink),
        ("serial:///dev/ttyAMA0:921600", SerialLink),
        ("serial_flowcontrol:///dev/ttyAMA0:921600", SerialLink),
    ],
)
def test_open_link_builds_the_named_transport_without_opening_it(text: str, kind: type) -> None:
    link = open_link(text, lambda data: None, lambda state: None)
    assert type(link) is kind
    assert link.url == parse_link_url(text)
    assert not link.up
    assert link.send(b"x") is False  # not running: down, dropped and counted
    assert link.stats.sends_dropped == 1
    assert link.stats.bytes_out == 0


def test_open_link_rejects_a_malformed_url() -> None:
    with pytest.raises(LinkUrlError, match="unknown scheme"):
        open_link("mavlink://x:1", lambda data: None, lambda state: None)
