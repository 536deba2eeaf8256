"""Opening an MQTT connection (credentials, TLS) and saying why one failed, in plain words.

Used by the daemon's bridge and by the Python client / `offboardd ctl`, so both build the
same TLS context and report a refused password, an unverifiable broker or a missing client
certificate the same way. aiomqtt flattens TLS errors into strings and, when the broker
drops a TLS 1.3 session right after the handshake (no client certificate), only times
out; so paho's own error log is recorded per connection (`PahoErrors`) and consulted.

Must not: retry, sleep or log (callers own the backoff and the log line). With bridge.py and
the client, the only modules that import aiomqtt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn

import aiomqtt
import paho.mqtt.client as paho_mqtt
from aiomqtt.exceptions import MqttConnectError
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from offboardd.errors import OffboarddError
from offboardd.mqtt.settings import MqttSettings
from offboardd.mqtt.tls import TlsSettings, ssl_context
from offboardd.mqtt.topics import AVAILABILITY_OFFLINE

# CONNACK reason codes (MQTT 5 §3.2.2.2); paho maps MQTT 3.1.1's return codes 4 and 5
# onto the same two values (and older callbacks may still hand us the raw 4/5).
_BAD_CREDENTIALS = {134, 4}  # "Bad User Name or Password"
_NOT_AUTHORISED = {135, 5}  # "Not authorized"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class FailureKind(StrEnum):
    CREDENTIALS = "credentials"  # the broker refused user name / password
    TLS_VERIFY = "tls_verify"  # the broker's certificate failed verification
    TLS_CLIENT_CERT = "tls_client_cert"  # the broker wanted (another) client certificate
    TLS = "tls"  # any other TLS failure (version, protocol)
    TLS_FILES = "tls_files"  # our own CA / certificate / key files
    REFUSED = "refused"  # another CONNACK refusal (client id, server busy...)
    NETWORK = "network"  # unreachable, reset, timed out, lost


@dataclass(frozen=True)
class ConnectFailure:
    kind: FailureKind
    message: str


class PahoErrors(logging.Handler):
    """Keeps paho's last error line for one client (`logger` is given to aiomqtt)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        # A free-standing logger (not in logging's registry): nothing leaks per connection
        # and nothing reaches the root logger twice.
        self.logger = logging.Logger("offboardd.mqtt.paho", logging.ERROR)
        self.logger.addHandler(self)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage()

    def take(self) -> str | None:
        last, self.last = self.last, None
        return last


def client_options(*, username: str | None, password: str | None,
                   tls: TlsSettings | None) -> dict[str, Any]:
    """Keyword arguments for `aiomqtt.Client` (a fresh TLS context: files are re-read)."""
    # TCP_NODELAY: Nagle's algorithm with the broker's delayed ACKs held small PUBLISHes
    # (a setpoint) up to 40 ms; p99 command latency 45 -> 5 ms (bench/README.md).
    nodelay = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)
    options: dict[str, Any] = {
        "username": username, "password": password, "socket_options": nodelay,
    }
    if tls is not None:
        options["tls_context"] = ssl_context(tls)
    return options


# What a PUBLISH adds to its payload: fixed header, the topic (ours are < 100 bytes) and
# MQTT 5 properties (response topic, correlation data): generous, it only bounds memory.
PACKET_OVERHEAD_BYTES = 1024


# How far over `max_payload_bytes` a command is still delivered, to be answered
# `payload_too_large`: a path of a thousand waypoints is a mistake its sender must hear of
# (found by review: cut at the limit itself, the broker dropped it and nobody answered).
# Far beyond (a 10 MB "command") the broker drops it unanswered: memory stays bounded.
ANSWERED_OVERSIZE = 4


def max_packet_bytes(max_payload_bytes: int) -> int:
    """The largest MQTT packet worth receiving for commands of `max_payload_bytes`."""
    return ANSWERED_OVERSIZE * max_payload_bytes + PACKET_OVERHEAD_BYTES


# QoS 1 messages paho keeps in flight (its default, and mosquitto's Receive Maximum): a
# publish beyond the window waits for a PUBACK of the window before its own, and its
# timeout runs all the while, so the bridge never publishes more than this at once.
IN_FLIGHT = 20


def daemon_client(settings: MqttSettings, will_topic: str, paho_errors: PahoErrors
                  ) -> aiomqtt.Client:
    """The daemon's client: a retained `offline` will, no session carried over."""
    s = settings
    will = aiomqtt.Will(will_topic, AVAILABILITY_OFFLINE, qos=1, retain=True)
    common: dict[str, Any] = {
        "hostname": s.host, "port": s.port, "identifier": s.effective_client_id,
        "will": will, "keepalive": s.keepalive_s, "timeout": s.timeout_s,
        "logger": paho_errors.logger,
        # bounded: a flood of commands while we are busy is dropped, not buffered
        "max_queued_incoming_messages": 1000,
        "max_inflight_messages": IN_FLIGHT,
        **client_options(username=s.username, password=s.password, tls=s.tls_settings),
    }
    if s.protocol == "5":
        # clean start + session expiry 0 (paho's default): nothing queued for us
        # while we were away is ever delivered (replay safety). Maximum Packet Size: the
        # broker never sends us a packet we would refuse anyway, so a 10 MB "command" is
        # dropped at the broker instead of being read whole into our memory (RSS grew by
        # 20 MB and stayed there before).
        connect = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        connect.MaximumPacketSize = max_packet_bytes(s.max_payload_bytes)
        return aiomqtt.Client(protocol=aiomqtt.ProtocolVersion.V5, clean_start=True,
                              properties=connect, **common)
    return aiomqtt.Client(protocol=aiomqtt.ProtocolVersion.V311, clean_session=True, **common)


def paho_client(client: aiomqtt.Client) -> paho_mqtt.Client:
    """The paho client inside `client`, for QoS 0 publishing without aiomqtt's per-message
    tasks (stream_publisher.py). aiomqtt 2 offers no accessor and keeps it as `_client`;
    `aiomqtt<3` is pinned, and tests/mqtt/test_stream_publisher.py fails if that changes."""
    paho = getattr(client, "_client", None)
    if not isinstance(paho, paho_mqtt.Client):
        raise OffboarddError("this aiomqtt keeps no paho client where offboardd expects it;"
                             " install aiomqtt 2.x (pyproject.toml pins it)")
    return paho


def _future(client: aiomqtt.Client, name: str) -> asyncio.Future[None]:
    """aiomqtt 2 keeps how the session began and ended as the futures `_connected` and
    `_disconnected`; tests/mqtt/test_session_end.py fails if not."""
    future = getattr(client, name, None)
    if not isinstance(future, asyncio.Future):
        raise OffboarddError(f"this aiomqtt keeps no {name.strip('_')} future where offboardd"
                             " expects it; install aiomqtt 2.x (pyproject.toml pins it)")
    return future


def _session_end(client: aiomqtt.Client) -> asyncio.Future[None]:
    return _future(client, "_disconnected")


def read_session_end(client: aiomqtt.Client) -> None:
    """Read the error that ends this session whenever it comes, whoever else waits for it.
    aiomqtt's `__aexit__` returns without reading it when it came while nobody waited
    (the broker gone after the bridge's receiver was cancelled, a publish having timed out
    first); asyncio then printed "Future exception was never retrieved" to stderr, outside
    the JSON logs, when the client was collected (seen after a 12 s broker stall)."""
    _session_end(client).add_done_callback(_read)


def _read(ended: asyncio.Future[None]) -> None:
    if not ended.cancelled():
        ended.exception()  # read: how the session ended is the bridge's to say (logged there)


async def enter(client: aiomqtt.Client) -> None:
    """`await client.__aenter__()`, except that an attempt that fails is closed (`abandon`),
    and how the session ends is read (`read_session_end`) whether it began or not."""
    read_session_end(client)  # an error while connecting: aiomqtt then swaps in a new future
    try:
        await client.__aenter__()
    except BaseException:
        abandon(client)
        raise
    read_session_end(client)  # (the session's own, if aiomqtt swapped it in)


@contextlib.asynccontextmanager
async def session(client: aiomqtt.Client) -> AsyncIterator[aiomqtt.Client]:
    """`async with client`, entered by `enter`: an attempt that fails leaves nothing behind."""
    await enter(client)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_exit(client)  # aiomqtt's __aexit__, as `async with client` calls it
        yield client


def abandon(client: aiomqtt.Client) -> None:
    """Close a connection attempt that failed, and read how it ends.

    aiomqtt gives up on a CONNACK that does not come within its timeout but leaves the
    connection open, paho still reading it. A broker that was only stalled (SIGSTOP, an
    overloaded host) answers that stale CONNECT when it continues: the abandoned client has
    a session nobody uses (paho even pings to keep it), until our next CONNECT with the same
    client id takes it over (or, read the other way round, it takes over ours). Its
    `_disconnected` then took "Unexpected disconnection", which nobody reads (its
    `__aenter__` failed: no `__aexit__`), and asyncio printed "Future exception was never
    retrieved" to stderr when the client was collected (seen ~10 s after the reconnect that
    followed a 12 s broker stall). The DISCONNECT queued here behind the CONNECT ends that
    session as soon as the broker reads them, and paho closes the socket once it is
    written. Whatever the attempt still ends with (a late CONNACK, a socket error) is read:
    its failure is already the caller's to say."""
    read_session_end(client)
    _future(client, "_connected").add_done_callback(_read)  # (reset: a late CONNACK's)
    paho_client(client).disconnect()  # no socket (never connected): a no-op


async def until_disconnected(client: aiomqtt.Client) -> NoReturn:
    """Wait for the session to end, then raise the MqttError that ended it, as aiomqtt's
    message iterator does (the bridge takes messages from paho's callback instead)."""
    disconnected = _session_end(client)
    await asyncio.wait((disconnected,))  # (never cancels the future: aiomqtt reads it too)
    cause = None if disconnected.cancelled() else disconnected.exception()
    raise aiomqtt.MqttError("disconnected from the broker") from cause


def security_warnings(settings: MqttSettings) -> list[tuple[str, str]]:
    """(event, message) pairs worth a loud log line when the daemon starts."""
    warnings = []
    if settings.tls and settings.tls_insecure_skip_verify:
        warnings.append(("mqtt_tls_verification_disabled",
                         "mqtt.tls_insecure_skip_verify = true: the broker's certificate is NOT "
                         "checked; anyone on the path can pose as the broker"))
    if (settings.password is not None and not settings.tls
            and settings.host not in _LOOPBACK):
        warnings.append(("mqtt_password_in_cleartext",
                         "the MQTT password crosses the network unencrypted; set mqtt.tls"))
    return warnings


class SubscriptionRefused(aiomqtt.MqttError):
    """The broker answered a SUBSCRIBE with a failure code (an ACL, EMQX or HiveMQ, or
    mosquitto's dynamic security): connected but deaf to commands, which must not pass
    for a session (review, 2026-11-29)."""


def refused_subscription(topic: str, codes: Sequence[object]) -> SubscriptionRefused | None:
    """A SubscriptionRefused when any of a SUBACK's codes is a failure (0x80 and above)."""
    for code in codes:
        value = _reason_value(code)
        if getattr(code, "is_failure", False) or (value is not None and value >= 0x80):
            return SubscriptionRefused(
                f"the broker refused our subscription to {topic} ({code}): check its ACL "
                "for this client's user (read on the cmd and setpoint topics)")
    return None


def explain(exc: BaseException, paho_error: str | None = None) -> ConnectFailure:
    """Why a connection attempt (or session) failed, naming what to check."""
    if isinstance(exc, OffboarddError):  # our TLS files, checked again at connect time
        return ConnectFailure(FailureKind.TLS_FILES, exc.message)
    if isinstance(exc, SubscriptionRefused):
        return ConnectFailure(FailureKind.REFUSED, str(exc))
    if isinstance(exc, MqttConnectError):  # a CONNACK that said no
        code = _reason_value(exc.rc)
        if code in _NOT_AUTHORISED or code in _BAD_CREDENTIALS:
            why = "not authorised" if code in _NOT_AUTHORISED else "bad user name or password"
            return ConnectFailure(
                FailureKind.CREDENTIALS,
                f"broker refused the credentials ({why}); check mqtt.username and the "
                "password (OFFBOARDD_MQTT_PASSWORD), and the broker's password_file")
        return ConnectFailure(FailureKind.REFUSED, f"broker refused the connection: {exc}")
    cause = exc.__context__ or exc.__cause__
    if isinstance(cause, ssl.SSLCertVerificationError):
        return ConnectFailure(
            FailureKind.TLS_VERIFY,
            f"TLS: the broker's certificate failed verification ({cause.verify_message}); "
            "check mqtt.tls_ca_file and that the certificate names the host you dial")
    text = f"{exc} {paho_error or ''}"
    upper = text.upper()
    if "CERTIFICATE_REQUIRED" in upper or "PEER DID NOT RETURN A CERTIFICATE" in upper:
        return ConnectFailure(
            FailureKind.TLS_CLIENT_CERT,
            "TLS: the broker requires a client certificate; set mqtt.tls_cert_file and "
            f"mqtt.tls_key_file ({_short(paho_error or str(exc))})")
    if any(alert in upper for alert in ("ALERT_UNKNOWN_CA", "ALERT_BAD_CERTIFICATE",
                                         "ALERT_CERTIFICATE_UNKNOWN", "ALERT_DECRYPT_ERROR")):
        return ConnectFailure(
            FailureKind.TLS_CLIENT_CERT,
            "TLS: the broker refused our client certificate (not signed by a CA it trusts?) "
            f"({_short(paho_error or str(exc))})")
    if isinstance(cause, ssl.SSLError) or "[SSL" in text:
        return ConnectFailure(FailureKind.TLS, f"TLS: {_short(paho_error or str(exc))} "
                              "(is the port a TLS listener, and TLS >= 1.2?)")
    detail = str(exc) + (f" ({paho_error})" if paho_error else "")
    return ConnectFailure(FailureKind.NETWORK, detail)


def with_settings_hint(failure: ConnectFailure, settings: MqttSettings) -> ConnectFailure:
    """`failure`, saying so when the credentials were refused for a user name that went
    without a password (most often: the environment file holding it was not read)."""
    if failure.kind is FailureKind.CREDENTIALS and settings.username and not settings.password:
        return ConnectFailure(failure.kind, failure.message + "; no password was given "
                              "(mqtt.password, OFFBOARDD_MQTT_PASSWORD)")
    return failure


def _reason_value(rc: object) -> int | None:
    if isinstance(rc, int):
        return rc
    value = getattr(rc, "value", None)
    return value if isinstance(value, int) else None


def _short(text: str) -> str:
    return text.split(" (_ssl.c", maxsplit=1)[0]
