"""Can offboardd reach its MQTT broker with the configured credentials (and TLS)?

Connects once and disconnects, with the daemon's own connection options and failure
explanations (mqtt/connection.py), under a client id of its own so that a running daemon
is not kicked off the broker (MQTT drops the older of two sessions with one id). Publishes
and subscribes nothing.
"""

from __future__ import annotations

import asyncio

import aiomqtt

from offboardd.doctor.report import Check, fail, ok, warn
from offboardd.errors import OffboarddError
from offboardd.mqtt.connection import (
    FailureKind,
    PahoErrors,
    client_options,
    explain,
    security_warnings,
    with_settings_hint,
)
from offboardd.mqtt.settings import MqttSettings

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_FIXES = {
    FailureKind.NETWORK: "is the broker running there and listening on that address "
                         "(mosquitto: `listener 1883 0.0.0.0`)? check mqtt.host / mqtt.port",
    FailureKind.REFUSED: "check mqtt.client_id and the broker's log",
}


def _client(settings: MqttSettings, paho: PahoErrors) -> aiomqtt.Client:
    s = settings
    protocol = aiomqtt.ProtocolVersion.V5 if s.protocol == "5" else aiomqtt.ProtocolVersion.V311
    return aiomqtt.Client(
        hostname=s.host, port=s.port, identifier=f"{s.effective_client_id}-doctor",
        protocol=protocol, timeout=s.timeout_s, logger=paho.logger,
        **client_options(username=s.username, password=s.password, tls=s.tls_settings),
    )


async def broker_checks(settings: MqttSettings) -> list[Check]:
    where = f"{settings.host}:{settings.port}"
    paho = PahoErrors()
    try:
        async with asyncio.timeout(settings.timeout_s + 1.0), _client(settings, paho):
            pass
    except (aiomqtt.MqttError, OffboarddError, OSError, TimeoutError) as exc:
        failure = with_settings_hint(explain(exc, paho.take()), settings)
        detail = failure.message or type(exc).__name__
        fix = _FIXES.get(failure.kind, "")
        if failure.kind is FailureKind.NETWORK and settings.host in _LOOPBACK:
            fix = ("is a broker running on this machine, on that port? `systemctl status "
                   "mosquitto` (Debian: `apt-get install mosquitto`); check mqtt.port")
        return [fail("broker", f"{where}: {detail}", fix)]
    how = f"as {settings.username!r}" if settings.username else "anonymously"
    checks = [ok("broker", f"{where} accepts offboardd {how}"
                 + (" over TLS" if settings.tls else ""))]
    checks.extend(warn("broker security", message) for _, message in security_warnings(settings))
    return checks
