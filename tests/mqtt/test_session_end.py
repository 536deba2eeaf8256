"""How an MQTT session ends is always read, so asyncio never prints "Future exception was
never retrieved" to stderr, outside the daemon's JSON logs (seen once after a 12 s broker
stall: aiomqtt's `__aexit__` returns early, without reading it, when the error that ended
the session came while nobody waited for it)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from offboardd.mqtt import connection
from tests.conftest import Broker
from tests.mavlink.conftest import wait_until
from tests.mqtt.helpers import settings_for


async def test_a_session_ended_while_nobody_waited_is_read(mosquitto: Broker) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        settings = settings_for(mosquitto.port)
        client = connection.daemon_client(settings, "v1/availability", connection.PahoErrors())
        async with client:
            connection.read_session_end(client)  # as the bridge does
            ended = client._disconnected  # (what until_disconnected waits on)
            mosquitto.stop()  # the broker gone while no receiver waits for the end
            await wait_until(ended.done, "paho to see the connection closed")
        del client, ended
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert not [c for c in reported if "never retrieved" in str(c.get("message"))], reported
