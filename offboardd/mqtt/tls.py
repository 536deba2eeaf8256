"""TLS for the MQTT connection: the settings value and the `ssl.SSLContext` built from it.

Shared by the daemon (`[mqtt] tls*` keys), the Python client and `offboardd ctl`, so all
three verify the broker the same way: the server certificate is checked against
`ca_file` (or the system trust store) *and* its name against the host we dialled (a SAN
entry for a DNS name or an IP address); TLS 1.2 is the minimum (1.0/1.1 are deprecated,
RFC 8996). A client certificate is presented when `cert_file` is set.

Every problem is a `ConfigError` naming the key and what is wrong with the file, raised
when the settings are built (so `offboardd check-config` catches it) and again when a
connection is made (files can change under a running daemon). Must not: connect, log, or
ever prompt on a terminal (an encrypted private key is refused, not asked about).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass

from offboardd.errors import ConfigError


@dataclass(frozen=True)
class TlsSettings:
    """How to secure one MQTT connection. `""` means "not set" (TOML has no null)."""

    ca_file: str = ""  # PEM bundle of trusted CAs; "" -> the system trust store
    cert_file: str = ""  # PEM client certificate (may also hold its key)
    key_file: str = ""  # PEM private key of cert_file, unencrypted
    insecure_skip_verify: bool = False  # no CA and no name check: testing only

    def __post_init__(self) -> None:
        ssl_context(self)  # validate now: a bad file is reported where it is configured


def _check_file(key: str, path: str) -> None:
    if not os.path.exists(path):
        raise ConfigError(f"mqtt.{key} = {path!r}: file not found")
    if not os.path.isfile(path):
        raise ConfigError(f"mqtt.{key} = {path!r}: not a regular file")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"mqtt.{key} = {path!r}: not readable by this user "
                          f"(uid {os.getuid()})")


def _refuse_encrypted_key() -> str:
    # Called by OpenSSL only if the key is encrypted; without this callback OpenSSL would
    # prompt for a pass phrase on the controlling terminal and hang a daemon.
    raise ConfigError("is encrypted; offboardd needs an unencrypted key "
                      "(`openssl pkey -in KEY -out PLAIN.key`, then chmod 600)")


def ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    """A client-side context for `settings`; raise ConfigError naming the key at fault."""
    if settings.key_file and not settings.cert_file:
        raise ConfigError(f"mqtt.tls_key_file = {settings.key_file!r} is set without "
                          "mqtt.tls_cert_file: a client key needs its certificate")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies peer and hostname by default
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if settings.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if settings.ca_file:
        _check_file("tls_ca_file", settings.ca_file)
        try:
            context.load_verify_locations(cafile=settings.ca_file)
        except ssl.SSLError as exc:
            raise ConfigError(f"mqtt.tls_ca_file = {settings.ca_file!r}: no usable PEM "
                              f"CA certificate in it ({exc.reason or exc})") from None
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if settings.cert_file:
        _load_client_certificate(context, settings)
    return context


def _load_client_certificate(context: ssl.SSLContext, settings: TlsSettings) -> None:
    _check_file("tls_cert_file", settings.cert_file)
    if settings.key_file:
        _check_file("tls_key_file", settings.key_file)
    where = (f"mqtt.tls_cert_file = {settings.cert_file!r}"
             + (f" / mqtt.tls_key_file = {settings.key_file!r}" if settings.key_file else ""))
    try:
        context.load_cert_chain(settings.cert_file, settings.key_file or None,
                                password=_refuse_encrypted_key)
    except ConfigError as exc:
        raise ConfigError(f"mqtt.tls_key_file = {settings.key_file or settings.cert_file!r} "
                          f"{exc.message}") from None
    except ssl.SSLError as exc:
        reason = str(exc.reason or exc)
        if "KEY_VALUES_MISMATCH" in reason:
            problem = "the private key does not belong to the certificate"
        elif not settings.key_file:
            problem = ("no private key in the certificate file; set mqtt.tls_key_file "
                       f"({reason})")
        else:
            problem = f"not a PEM certificate and unencrypted PEM private key ({reason})"
        raise ConfigError(f"{where}: {problem}") from None
