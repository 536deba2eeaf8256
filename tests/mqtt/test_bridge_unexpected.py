"""Nothing on the MQTT side ends the daemon: an unexpected error while connecting is
logged and retried like a refused one. A host name with an empty label ("broker..lan")
raised UnicodeError out of getaddrinfo, past the bridge's loop: the daemon's TaskGroup
ended the FC link with it, no hand-back (review, 2026-11-29). Such a host is refused by
the config check too (test_config)."""

from __future__ import annotations

import asyncio

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from offboardd.mqtt import connection
from offboardd.mqtt.bridge import MqttBridge, MqttSettings


async def test_an_unexpected_connect_error_is_retried_not_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[int] = []

    def failing_client(*args: object, **kwargs: object) -> object:
        attempts.append(1)
        raise UnicodeError("label empty or too long")

    monkeypatch.setattr(connection, "daemon_client", failing_client)
    bridge = MqttBridge(MqttSettings(reconnect_min_s=0.05, reconnect_max_s=0.1),
                        lambda _command: None)
    task = asyncio.create_task(bridge.run())
    await asyncio.sleep(0.6)
    assert not task.done(), task
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(attempts) >= 3
    assert bridge.last_failure is not None and "unexpected" in bridge.last_failure.message


def test_a_refused_subscription_is_a_connect_failure_naming_the_acl() -> None:
    """aiomqtt returns SUBACK's codes without raising: a broker refusing the subscription
    (EMQX, HiveMQ, mosquitto's dynamic security) left the daemon connected, `online`, and
    deaf to every command (review, 2026-11-29)."""
    granted = ReasonCode(PacketTypes.SUBACK, identifier=1)
    refused = ReasonCode(PacketTypes.SUBACK, identifier=0x87)  # not authorised
    assert connection.refused_subscription("v/cmd", [granted]) is None
    assert connection.refused_subscription("v/cmd", [1]) is None  # 3.1.1's granted QoS
    for codes in ([refused], [0x80]):
        error = connection.refused_subscription("v/cmd", codes)
        assert error is not None
        failure = connection.explain(error)
        assert failure.kind is connection.FailureKind.REFUSED
        assert "refused our subscription to v/cmd" in failure.message and "ACL" in failure.message
