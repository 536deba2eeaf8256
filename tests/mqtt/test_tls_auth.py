"""MQTT security against a real mosquitto running the example `config/mosquitto-secure.conf`
(ports and paths rewritten) with the example ACL: TLS with certificates made here by the
`openssl` CLI, passwords made by `mosquitto_passwd -b`, client certificates, and the
ACL letting only the commander command the vehicle."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog

from offboardd.client import ConnectFailed, OffboardClient, TlsSettings
from offboardd.core.commands import Hold
from offboardd.errors import ConfigError
from offboardd.mqtt import ctl
from offboardd.mqtt.bridge import MqttBridge
from offboardd.mqtt.connection import FailureKind, explain
from offboardd.mqtt.tls import ssl_context
from offboardd.mqtt.topics import Topics
from tests.conftest import Broker, _spawn_mosquitto, free_port
from tests.mqtt.helpers import body, dumps, next_message, observer, running_bridge, settings_for

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
TOPICS = Topics.for_vehicle("v1")
PASSWORDS = {"offboardd": "daemon-pw", "commander": "commander-pw", "viewer": "viewer-pw"}


@dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path  # a CA that signed nothing the broker uses
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    elsewhere_cert: Path  # signed by `ca`, but for another host name
    elsewhere_key: Path


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _make_ca(d: Path, name: str) -> tuple[Path, Path]:
    key, cert = d / f"{name}.key", d / f"{name}.crt"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}")
    return cert, key


def _make_leaf(d: Path, name: str, ca: tuple[Path, Path], extensions: str) -> tuple[Path, Path]:
    key, csr, cert, ext = (d / f"{name}.{s}" for s in ("key", "csr", "crt", "ext"))
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
    ext.write_text(f"basicConstraints=CA:FALSE\n{extensions}\n")
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-set_serial",
             str(abs(hash(name)) % 10**9), "-days", "2", "-out", cert, "-extfile", ext)
    return cert, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca = _make_ca(d, "test-ca")
    other_ca = _make_ca(d, "other-ca")
    # The broker's certificate names both ways a client may dial it (SAN, RFC 6125).
    server = _make_leaf(d, "server", ca, "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                        "extendedKeyUsage=serverAuth")
    client = _make_leaf(d, "offboardd", ca, "extendedKeyUsage=clientAuth")
    elsewhere = _make_leaf(d, "elsewhere", ca, "subjectAltName=DNS:elsewhere.example\n"
                           "extendedKeyUsage=serverAuth")
    return Pki(ca[0], other_ca[0], server[0], server[1], client[0], client[1], *elsewhere)


@dataclass
class SecureBroker:
    broker: Broker  # .port is the TLS listener
    plain_port: int  # the loopback listener without TLS (same passwords and ACL)


@contextlib.contextmanager
def secure_broker(tmp_path: Path, pki: Pki, *, require_certificate: bool = False,
                  server: tuple[Path, Path] | None = None) -> Iterator[SecureBroker]:
    passwd = tmp_path / "passwd"
    for user, password in PASSWORDS.items():
        create = ["-c"] if not passwd.exists() else []
        subprocess.run(["mosquitto_passwd", *create, "-b", str(passwd), user, password],
                       check=True, capture_output=True)
    server_cert, server_key = server or (pki.server_cert, pki.server_key)
    tls_port, plain_port = free_port(socket.SOCK_STREAM), free_port(socket.SOCK_STREAM)
    text = (REPO / "config" / "mosquitto-secure.conf").read_text()
    for old, new in {
        "/etc/mosquitto/offboardd.passwd": str(passwd),
        "/etc/mosquitto/offboardd-acl.conf": str(REPO / "config" / "mosquitto-acl.conf"),
        "/etc/mosquitto/certs/ca.crt": str(pki.ca),
        "/etc/mosquitto/certs/server.crt": str(server_cert),
        "/etc/mosquitto/certs/server.key": str(server_key),
        "listener 1883 127.0.0.1": f"listener {plain_port} 127.0.0.1",
        "listener 8883": f"listener {tls_port} 127.0.0.1",
        "#require_certificate true": f"require_certificate {str(require_certificate).lower()}",
    }.items():
        assert old in text, old
        text = text.replace(old, new)
    # Run as ourselves: mosquitto started as root would drop to `mosquitto`, who cannot
    # read pytest's private temporary directories.
    config = tmp_path / "mosquitto.conf"
    config.write_text(f"user {getpass.getuser()}\npersistence false\n{text}")
    broker = Broker("127.0.0.1", tls_port, _spawn_mosquitto(config, tls_port), config)
    try:
        yield SecureBroker(broker, plain_port)
    finally:
        broker.stop()


def tls_settings(pki: Pki, **overrides: Any) -> dict[str, Any]:
    values = {"tls": True, "tls_ca_file": str(pki.ca), "username": "offboardd",
              "password": PASSWORDS["offboardd"], "timeout_s": 1.0}
    return {**values, **overrides}


def commander(port: int, tls: TlsSettings | None = None, *, password: str = "commander-pw"
              ) -> OffboardClient:
    return OffboardClient("127.0.0.1", port, "v1", username="commander", password=password,
                          tls=tls, reply_timeout_s=5.0, broker_timeout_s=2.0)


@contextlib.asynccontextmanager
async def failing_bridge(port: int, **settings: Any) -> AsyncIterator[MqttBridge]:
    async with running_bridge(settings_for(port, **settings), wait_connected=False) as daemon:
        yield daemon.bridge


async def test_tls_and_credentials_round_trip_a_command(tmp_path: Path, pki: Pki) -> None:
    with secure_broker(tmp_path, pki) as secure:
        port = secure.broker.port
        async with running_bridge(settings_for(port, **tls_settings(pki))) as daemon, \
                commander(port, TlsSettings(str(pki.ca))) as client:
            reply = await client.send(Hold(client.new_command_id()))
    assert reply.ok and [i.command for i in daemon.received] == [Hold(reply.id or "")]
    assert daemon.bridge.last_failure is None and daemon.bridge.failed_attempts == 0


async def test_wrong_password_is_refused_clearly_and_retried_with_backoff(
        tmp_path: Path, pki: Pki) -> None:
    with secure_broker(tmp_path, pki) as secure, structlog.testing.capture_logs() as logs:
        async with failing_bridge(secure.plain_port, username="offboardd", password="wrong",
                                  reconnect_min_s=0.05, reconnect_max_s=0.4) as bridge:
            await asyncio.sleep(1.5)
            assert not bridge.connected.is_set()
        with pytest.raises(ConnectFailed) as info:
            async with commander(secure.plain_port, password="wrong"):
                pass
    failures = [e for e in logs if e["event"] == "mqtt_connect_failed"]
    assert failures and all(e["log_level"] == "error" for e in failures)
    assert failures[0]["error"].startswith("broker refused the credentials (not authorised)")
    assert bridge.last_failure is not None and bridge.last_failure.kind == FailureKind.CREDENTIALS
    # Backoff, not a tight loop: ~0.05, 0.1, 0.2, 0.4, 0.4 s (jittered) in 1.5 s.
    assert 3 <= bridge.failed_attempts <= 10, bridge.failed_attempts
    assert failures[-1]["retry_in_s"] > failures[0]["retry_in_s"]
    assert info.value.failure.kind == FailureKind.CREDENTIALS


async def test_a_user_name_without_password_says_the_password_is_missing(
        tmp_path: Path, pki: Pki) -> None:
    # the daemon's own log line, as `offboardd doctor` says it: the password lives in
    # /etc/offboardd/env, which a hand-started daemon does not read
    with secure_broker(tmp_path, pki) as secure, structlog.testing.capture_logs() as logs:
        async with failing_bridge(secure.plain_port, username="offboardd",
                                  reconnect_min_s=0.05, reconnect_max_s=0.1) as bridge:
            await asyncio.sleep(0.5)
            assert not bridge.connected.is_set()
    failures = [e for e in logs if e["event"] == "mqtt_connect_failed"]
    assert failures and "no password was given (mqtt.password, OFFBOARDD_MQTT_PASSWORD)" in (
        failures[0]["error"]), failures[0]


async def test_ctl_reports_refused_credentials(tmp_path: Path, pki: Pki,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    ctl.add_arguments(parser)
    with secure_broker(tmp_path, pki) as secure:
        args = parser.parse_args(["--port", str(secure.broker.port), "--vehicle", "v1",
                                  "--tls-ca-file", str(pki.ca), "--username", "commander",
                                  "--password", "wrong", "hold"])
        status = await ctl._run(args)
    assert status == ctl.EXIT_BROKER_REFUSED
    assert "broker refused the credentials (not authorised)" in capsys.readouterr().err


async def test_wrong_ca_is_refused_naming_the_verification_failure(
        tmp_path: Path, pki: Pki) -> None:
    with secure_broker(tmp_path, pki) as secure:
        async with failing_bridge(secure.broker.port,
                                  **tls_settings(pki, tls_ca_file=str(pki.other_ca))) as bridge:
            for _ in range(100):
                await asyncio.sleep(0.05)
                if bridge.failed_attempts >= 2:
                    break
        with pytest.raises(ConnectFailed) as info:
            async with commander(secure.broker.port, TlsSettings(str(pki.other_ca))):
                pass
    failure = bridge.last_failure
    assert failure is not None and failure.kind == FailureKind.TLS_VERIFY, failure
    assert "certificate failed verification" in failure.message
    assert "mqtt.tls_ca_file" in failure.message and bridge.failed_attempts >= 2
    assert info.value.failure.kind == FailureKind.TLS_VERIFY


async def test_a_certificate_for_another_host_is_refused(tmp_path: Path, pki: Pki) -> None:
    elsewhere = (pki.elsewhere_cert, pki.elsewhere_key)
    with secure_broker(tmp_path, pki, server=elsewhere) as secure, \
            pytest.raises(ConnectFailed) as info:
        async with commander(secure.broker.port, TlsSettings(str(pki.ca))):
            pass
    assert info.value.failure.kind == FailureKind.TLS_VERIFY
    assert "mismatch" in info.value.failure.message  # "IP address mismatch, certificate is..."


async def test_client_certificate_required_and_presented(tmp_path: Path, pki: Pki) -> None:
    with secure_broker(tmp_path, pki, require_certificate=True) as secure:
        port = secure.broker.port
        async with failing_bridge(port, **tls_settings(pki)) as bridge:
            for _ in range(100):  # the broker ends the TLS session after its handshake
                await asyncio.sleep(0.05)
                if bridge.failed_attempts:
                    break
        failure = bridge.last_failure
        assert failure is not None and failure.kind == FailureKind.TLS_CLIENT_CERT, failure
        assert "requires a client certificate" in failure.message
        with_cert_files = (str(pki.ca), str(pki.client_cert), str(pki.client_key))
        with_cert = tls_settings(pki, tls_cert_file=with_cert_files[1],
                                 tls_key_file=with_cert_files[2])
        async with running_bridge(settings_for(port, **with_cert)) as daemon, \
                commander(port, TlsSettings(*with_cert_files)) as c:
            assert (await c.send(Hold(c.new_command_id()))).ok
    assert len(daemon.received) == 1


async def test_acl_lets_only_the_commander_command(tmp_path: Path, pki: Pki) -> None:
    with secure_broker(tmp_path, pki) as secure:
        port = secure.plain_port
        daemon_settings = settings_for(port, username="offboardd", password="daemon-pw")
        async with running_bridge(daemon_settings) as daemon:
            daemon.bridge.publish_state({"v": 1, "phase": "idle"})
            async with observer(port, username="viewer", password="viewer-pw") as viewer:
                await viewer.subscribe(TOPICS.state, 1)  # viewers may read the state...
                state = body(await next_message(viewer, TOPICS.state))
                for topic in (TOPICS.cmd, TOPICS.setpoint):  # ...but never command
                    await viewer.publish(topic, dumps({"v": 1, "id": "x", "cmd": "land"}), qos=1)
            async with commander(port) as client:
                reply = await client.send(Hold(client.new_command_id()))
            await asyncio.sleep(0.2)  # slack for a (wrongly) delivered viewer command
    assert state["phase"] == "idle" and reply.ok
    assert [i.command for i in daemon.received] == [Hold(reply.id or "")]


def test_tls_files_are_checked_at_config_load(tmp_path: Path, pki: Pki) -> None:
    with pytest.raises(ConfigError, match="the private key does not belong to the certificate"):
        TlsSettings(str(pki.ca), str(pki.client_cert), str(pki.server_key))
    encrypted = tmp_path / "encrypted.key"
    _openssl("pkey", "-in", pki.client_key, "-aes256", "-passout", "pass:x", "-out", encrypted)
    with pytest.raises(ConfigError, match="is encrypted; offboardd needs an unencrypted key"):
        TlsSettings(str(pki.ca), str(pki.client_cert), str(encrypted))  # never prompts


async def test_insecure_skip_verify_connects_to_any_broker_and_says_so_loudly(
        tmp_path: Path, pki: Pki) -> None:
    with secure_broker(tmp_path, pki) as secure, structlog.testing.capture_logs() as logs:
        insecure = tls_settings(pki, tls_ca_file=str(pki.other_ca), tls_insecure_skip_verify=True)
        async with running_bridge(settings_for(secure.broker.port, **insecure)) as daemon:
            assert daemon.bridge.connect_count == 1
    [warning] = [e for e in logs if e["event"] == "mqtt_tls_verification_disabled"]
    assert warning["log_level"] == "warning" and "NOT checked" in warning["message"]


def test_tls_version_floor_and_runtime_file_errors_are_explained() -> None:
    assert ssl_context(TlsSettings()).minimum_version == ssl.TLSVersion.TLSv1_2
    failure = explain(ConfigError("mqtt.tls_ca_file = '/x': file not found"))
    assert failure.kind == FailureKind.TLS_FILES and "/x" in failure.message
