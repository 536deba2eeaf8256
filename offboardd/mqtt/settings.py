"""The daemon's MQTT settings (`[mqtt]` in the config) and the reconnect backoff.

Pure values: validated on construction (a `ConfigError` names key, value and what is
allowed). The TLS keys are flat (`tls`, `tls_ca_file`...) as in the TOML file; `tls_settings`
groups them for `mqtt.tls`, which checks the files when the settings are built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from offboardd.errors import ConfigError
from offboardd.mqtt.tls import TlsSettings
from offboardd.mqtt.topics import TELEMETRY_KINDS, valid_vehicle_id

DEFAULT_TELEMETRY_RATES_HZ: Mapping[str, float] = {
    "position": 5.0, "velocity": 5.0, "attitude": 5.0, "battery": 1.0, "gps": 1.0, "home": 0.2,
}


@dataclass(frozen=True)
class MqttSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    vehicle_id: str = "vehicle1"
    client_id: str = ""  # "" -> "offboardd-<vehicle_id>"
    username: str | None = None
    password: str | None = None
    protocol: Literal["5", "3.1.1"] = "5"
    keepalive_s: int = 10
    timeout_s: float = 5.0  # wait for CONNACK / SUBACK / PUBACK this long
    reconnect_min_s: float = 0.5
    reconnect_max_s: float = 30.0
    max_payload_bytes: int = 32768  # a path of ~400 waypoints (issue 16)
    topic_root: str = "offboardd"
    state_min_interval_s: float = 0.1
    # state is re-published this often while a goto / path / orbit runs (state.motion has
    # the planned point): 0.1 to plot planned against flown (the demo), ~+1 % of a core
    motion_state_interval_s: float = 1.0
    telemetry_rates_hz: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_TELEMETRY_RATES_HZ)
    )
    mavlink_relay: frozenset[str] = frozenset()  # message names, e.g. {"EFI_STATUS"}
    mavlink_relay_rate_hz: float = 5.0
    max_pending_events: int = 256
    tls: bool = False
    tls_ca_file: str = ""  # "" -> the system trust store
    tls_cert_file: str = ""  # client certificate, for brokers that require one
    tls_key_file: str = ""
    tls_insecure_skip_verify: bool = False  # never in production: anyone can pose as the broker

    def __post_init__(self) -> None:
        def bad(key: str, value: object, allowed: str) -> ConfigError:
            return ConfigError(f"mqtt.{key} = {value!r} is invalid; {allowed}")

        if not valid_vehicle_id(self.vehicle_id):
            raise bad("vehicle_id", self.vehicle_id, "use 1-64 of A-Z a-z 0-9 _ . -")
        if self.protocol not in ("5", "3.1.1"):
            raise bad("protocol", self.protocol, 'allowed: "5" or "3.1.1"')
        if not 0 < self.port < 65536:
            raise bad("port", self.port, "allowed: 1..65535")
        if not 1 <= self.keepalive_s <= 65535:
            raise bad("keepalive_s", self.keepalive_s, "allowed: 1..65535")
        if not 0.1 <= self.timeout_s <= 120:
            raise bad("timeout_s", self.timeout_s, "allowed: 0.1..120 s")
        if not 0 < self.reconnect_min_s <= self.reconnect_max_s:
            raise bad("reconnect_min_s", self.reconnect_min_s, "need 0 < min <= reconnect_max_s")
        if not 0.05 <= self.motion_state_interval_s <= 10:
            raise bad("motion_state_interval_s", self.motion_state_interval_s,
                      "allowed: 0.05..10 s")
        if not 64 <= self.max_payload_bytes <= 1_000_000:
            raise bad("max_payload_bytes", self.max_payload_bytes, "allowed: 64..1000000")
        for kind, rate_hz in self.telemetry_rates_hz.items():
            if kind not in TELEMETRY_KINDS or not 0 <= rate_hz <= 100:
                raise bad(f"telemetry_rates_hz.{kind}", rate_hz,
                          f"kinds {sorted(TELEMETRY_KINDS)}, rates 0..100 Hz (0 = off)")
        self._check_tls()

    def _check_tls(self) -> None:
        if not isinstance(self.tls, bool):
            raise ConfigError(f"mqtt.tls = {self.tls!r} is invalid; allowed: true or false")
        if not isinstance(self.tls_insecure_skip_verify, bool):
            raise ConfigError(f"mqtt.tls_insecure_skip_verify = {self.tls_insecure_skip_verify!r}"
                              " is invalid; allowed: true or false")
        files = {"tls_ca_file": self.tls_ca_file, "tls_cert_file": self.tls_cert_file,
                 "tls_key_file": self.tls_key_file}
        for key, value in files.items():
            if not isinstance(value, str):
                raise ConfigError(f"mqtt.{key} = {value!r} is invalid; allowed: a file path")
        if self.password is not None and not self.username:
            raise ConfigError("mqtt.password is set (in the file or OFFBOARDD_MQTT_PASSWORD) "
                              "but mqtt.username is not; MQTT sends a password only with a "
                              "user name")
        if not self.tls:
            stray = [k for k, v in files.items() if v]
            stray += ["tls_insecure_skip_verify"] if self.tls_insecure_skip_verify else []
            if stray:
                # A CA or certificate configured while TLS is off is almost surely a
                # forgotten `tls = true`: refuse rather than connect in clear text.
                raise ConfigError(f"mqtt.{stray[0]} is set but mqtt.tls = false; "
                                  "set tls = true (or remove the key)")
        _ = self.tls_settings  # building TlsSettings checks every file

    @property
    def tls_settings(self) -> TlsSettings | None:
        """The TLS part as a value for `mqtt.tls.ssl_context`, or None for plain TCP."""
        if not self.tls:
            return None
        return TlsSettings(self.tls_ca_file, self.tls_cert_file, self.tls_key_file,
                           self.tls_insecure_skip_verify)

    @property
    def effective_client_id(self) -> str:
        return self.client_id or f"offboardd-{self.vehicle_id}"



def backoff_s(attempt: int, min_s: float, max_s: float, rand: Callable[[], float]) -> float:
    """Exponential backoff with 'full jitter' between half and all of the capped delay."""
    capped = min(max_s, min_s * (2.0 ** min(attempt, 30)))
    return capped * (0.5 + 0.5 * rand())
