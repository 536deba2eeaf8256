"""TOML file -> frozen `DaemonConfig`; every error names the key, the value and what is allowed.

Each section maps onto the settings type of the part that owns it (`[engine]` ->
`core.settings.EngineSettings`, `[envelope]` -> its `envelope` field,
`core.envelope_settings.EnvelopeSettings`, `[motion]` -> `core.motion_settings`,
`[mavlink.streams]` -> `core.stream_plan.StreamPlanSettings`, `[mqtt]` ->
`mqtt.bridge.MqttSettings`, `[recorder]` -> `recorder.settings.RecorderSettings`), which validate
themselves; this module only reads the file, rejects unknown keys and sections, and takes
secrets from the environment so they need not sit in a world-readable file.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.motion_settings import MotionSettings
from offboardd.core.settings import EngineSettings
from offboardd.core.stream_plan import StreamPlanSettings, build_plan
from offboardd.errors import ConfigError, LinkUrlError
from offboardd.mavlink.codec import message_id
from offboardd.mavlink.links import LinkUrl, parse_link_url
from offboardd.mavlink.signing import load_key
from offboardd.mqtt.bridge import MqttSettings
from offboardd.mqtt.settings import DEFAULT_TELEMETRY_RATES_HZ
from offboardd.mqtt.topics import valid_publish_topic, valid_vehicle_id
from offboardd.recorder.settings import RecorderSettings

# The MQTT password may come from the environment (systemd EnvironmentFile=, a secret store).
MQTT_PASSWORD_ENV = "OFFBOARDD_MQTT_PASSWORD"
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("auto", "json", "console")
# Longer, and a pilot's mode switch or a refused command would be noticed late, and PX4's
# heaviest streams would start to fill the socket's receive buffer between reads.
_MAX_READ_PERIOD_S = 0.1


@dataclass(frozen=True)
class MavlinkSettings:
    url: LinkUrl = field(default_factory=lambda: parse_link_url("udpin://0.0.0.0:14540"))
    # 0: fly the first PX4 autopilot heard on the link; else only this MAVLink system id.
    fc_system_id: int = 0
    # MAVLink 2 signing (docs/security.md): "" = off; else a 32-byte key file
    # (64 hex digits or base64, chmod 600, owned by the daemon's user or root).
    signing_key_file: str = ""
    signing_timestamp_file: str = "/var/lib/offboardd/signing-timestamp"  # "" = not kept
    accept_unsigned: bool = False  # with a key: also accept unsigned frames (not advised)
    accept_unsigned_messages: tuple[str, ...] = ("RADIO_STATUS",)  # accepted unsigned anyway
    # UDP links are read once per cycle, not per datagram (links/udp.py): on every stream
    # tick and at least this often. The longest a flight controller message waits.
    read_period_s: float = 0.05
    # [mavlink.streams]: ask PX4 for only what the daemon needs on this link (stream_plan.py)
    streams: StreamPlanSettings = field(default_factory=StreamPlanSettings)


@dataclass(frozen=True)
class LogSettings:
    level: str = "info"
    format: str = "auto"  # auto: key=value on a terminal, JSON otherwise (journald)


@dataclass(frozen=True)
class DaemonConfig:
    mavlink: MavlinkSettings = field(default_factory=MavlinkSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    log: LogSettings = field(default_factory=LogSettings)
    recorder: RecorderSettings = field(default_factory=RecorderSettings)


def load_config(path: str | Path, environ: dict[str, str] | None = None) -> DaemonConfig:
    """Read and validate a config file; raise ConfigError with key, value and what is allowed."""
    env = dict(os.environ if environ is None else environ)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}") from None  # (callers name the file)
    return config_from_dict(document, env)


def default_config(environ: dict[str, str] | None = None) -> DaemonConfig:
    """What a config file with no keys gives: the defaults, the stream plan built from them
    (`DaemonConfig()` alone has no plan rows) and the MQTT password from the environment.
    `offboardd run` without --config flies with this."""
    return config_from_dict({}, dict(os.environ if environ is None else environ))


def config_from_dict(document: dict[str, Any], environ: dict[str, str]) -> DaemonConfig:
    known = {f.name for f in dataclasses.fields(DaemonConfig)} | {"envelope", "motion"}
    for section, value in document.items():
        if section not in known:
            what = (f"unknown section [{section}]" if isinstance(value, dict)
                    else f"unknown top-level key {section} (keys belong in a [section])")
            raise ConfigError(f"{what}; allowed sections: {', '.join(sorted(known))}")
    mavlink = _mavlink(_table(document, "mavlink"))
    engine = _engine(_table(document, "engine"), _table(document, "envelope"),
                     _table(document, "motion"))
    mqtt = _mqtt(_table(document, "mqtt"), environ)
    return DaemonConfig(mavlink=mavlink, engine=with_stream_plan(engine, mavlink, mqtt),
                        mqtt=mqtt, log=_log(_table(document, "log")),
                        recorder=_build("recorder", RecorderSettings,
                                        _table(document, "recorder")))


def with_stream_plan(engine: EngineSettings, mavlink: MavlinkSettings,
                     mqtt: MqttSettings) -> EngineSettings:
    """The engine's stream plan rows: [mavlink.streams] joined with what the MQTT side
    publishes (telemetry rates, relayed messages), names resolved to message ids."""
    rows = build_plan(mavlink.streams, mqtt.telemetry_rates_hz, mqtt.mavlink_relay,
                      mqtt.mavlink_relay_rate_hz, message_id,
                      estimate_timeout_s=engine.estimate_timeout_s)
    return dataclasses.replace(engine, stream_plan=rows)


def _table(document: dict[str, Any], name: str) -> dict[str, Any]:
    table = document.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{name} must be a table ([{name}]), got {table!r}")
    return dict(table)


def _build(section: str, cls: Any, table: dict[str, Any], internal: tuple[str, ...] = ()
           ) -> Any:
    """`internal`: fields filled here, not keys of the section (not offered as allowed)."""
    allowed = [f.name for f in dataclasses.fields(cls) if f.name not in internal]
    for key in table:
        if key not in allowed and key not in internal:
            raise ConfigError(
                f"unknown key {section}.{key}; allowed keys: {', '.join(sorted(allowed))}"
            )
    try:
        return cls(**table)
    except ConfigError as exc:
        message = exc.message
        prefix = f"{section}."
        raise ConfigError(message if message.startswith(prefix) else prefix + message) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[{section}]: {exc}") from None


def _mavlink(table: dict[str, Any]) -> MavlinkSettings:
    url = table.pop("url", None)
    streams = table.pop("streams", {})
    if not isinstance(streams, dict):
        raise ConfigError(f"mavlink.streams must be a table ([mavlink.streams]), got {streams!r}")
    rates = streams.get("rates_hz", {})
    if not isinstance(rates, dict):
        raise ConfigError(f"mavlink.streams.rates_hz must be a table of NAME = Hz, got {rates!r}")
    streams["rates_hz"] = {str(k).upper(): v for k, v in rates.items()}
    table["streams"] = _build("mavlink.streams", StreamPlanSettings, streams)
    settings = _build("mavlink", MavlinkSettings, table)
    if url is not None:
        if not isinstance(url, str):
            raise ConfigError(
                f"mavlink.url must be a string like udpin://0.0.0.0:14540, got {url!r}"
            )
        try:
            settings = dataclasses.replace(settings, url=parse_link_url(url))
        except LinkUrlError as exc:
            raise ConfigError(f"mavlink.url = {url!r}: {exc.message}") from None
    sysid = settings.fc_system_id
    if isinstance(sysid, bool) or not isinstance(sysid, int) or not 0 <= sysid <= 255:
        raise ConfigError(f"mavlink.fc_system_id = {sysid!r}: allowed 0 (any PX4) or 1..255")
    period_s = settings.read_period_s
    if isinstance(period_s, bool) or not isinstance(period_s, int | float) \
            or not 0.001 <= period_s <= _MAX_READ_PERIOD_S:
        raise ConfigError(f"mavlink.read_period_s = {period_s!r}: allowed 0.001..0.1 s")
    return _signing(settings)


def _signing(settings: Any) -> MavlinkSettings:
    for key in ("signing_key_file", "signing_timestamp_file"):
        if not isinstance(getattr(settings, key), str):
            raise ConfigError(f"mavlink.{key} must be a file path string, "
                              f"got {getattr(settings, key)!r}")  # fmt: skip
    if not isinstance(settings.accept_unsigned, bool):
        raise ConfigError(f"mavlink.accept_unsigned = {settings.accept_unsigned!r}: "
                          "allowed true or false")  # fmt: skip
    names = settings.accept_unsigned_messages
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"mavlink.accept_unsigned_messages must be a list of MAVLink "
                          f"message names, got {names!r}")  # fmt: skip
    unknown = [n for n in names if message_id(n) is None]
    if unknown:
        raise ConfigError(f"mavlink.accept_unsigned_messages: unknown MAVLink message "
                          f"{unknown[0]!r}; allowed: names such as RADIO_STATUS")  # fmt: skip
    settings = dataclasses.replace(
        settings, accept_unsigned_messages=tuple(n.upper() for n in names)
    )
    if settings.signing_key_file:
        load_key(settings.signing_key_file)  # refuse a missing or unsafe key now, not at start
    return settings  # type: ignore[no-any-return]


def _engine(table: dict[str, Any], envelope_table: dict[str, Any],
            motion_table: dict[str, Any]) -> EngineSettings:
    for own in ("envelope", "motion"):
        if own in table:
            raise ConfigError(f"engine.{own}: it has its own section, [{own}]")
    if "stream_plan" in table:
        raise ConfigError("engine.stream_plan: it is built from [mavlink.streams] and [mqtt]")
    if "polygon" in envelope_table and isinstance(envelope_table["polygon"], list):
        envelope_table["polygon"] = tuple(
            tuple(v) if isinstance(v, list) else v for v in envelope_table["polygon"]
        )
    envelope: EnvelopeSettings = _build("envelope", EnvelopeSettings, envelope_table)
    table["envelope"] = envelope
    table["motion"] = _build("motion", MotionSettings, motion_table)
    settings: EngineSettings = _build("engine", EngineSettings, table,
                                      internal=("envelope", "motion", "stream_plan"))
    return settings


def _mqtt(table: dict[str, Any], environ: dict[str, str]) -> MqttSettings:
    if "telemetry_rates_hz" in table and isinstance(table["telemetry_rates_hz"], dict):
        # kind by kind over the defaults, as every other key: a file that sets one kind
        # kept only that one, and the rest of the telemetry stopped without a word
        # (config/sitl.toml published position and velocity only: review)
        table["telemetry_rates_hz"] = {**DEFAULT_TELEMETRY_RATES_HZ, **table["telemetry_rates_hz"]}
    if "mavlink_relay" in table:
        relay = table["mavlink_relay"]
        if not isinstance(relay, list) or not all(isinstance(n, str) for n in relay):
            raise ConfigError(f"mqtt.mavlink_relay must be a list of message names, got {relay!r}")
        table["mavlink_relay"] = frozenset(n.upper() for n in relay)
    if table.get("password") is None and environ.get(MQTT_PASSWORD_ENV):
        table["password"] = environ[MQTT_PASSWORD_ENV]
    _mqtt_types(table)
    settings: MqttSettings = _build("mqtt", MqttSettings, table)
    _mqtt_values(settings)
    return settings


# [mqtt] keys MqttSettings takes as they come: their types are checked here, before it
# compares them (a quoted "1883" is not a port), each with what is allowed
_MAX_PENDING_EVENTS = 65536
_MQTT_WHOLE = {
    "port": "1..65535", "keepalive_s": "1..65535 s", "max_payload_bytes": "64..1000000",
    "max_pending_events": f"1..{_MAX_PENDING_EVENTS}",
}
_MQTT_NUMBERS = {
    "timeout_s": "0.1..120 s", "reconnect_min_s": "above 0 s, at most reconnect_max_s",
    "reconnect_max_s": "at least reconnect_min_s", "state_min_interval_s": "0..10 s",
    "motion_state_interval_s": "0.05..10 s", "mavlink_relay_rate_hz": "above 0 up to 100 Hz",
}
_MQTT_STRINGS = ("host", "vehicle_id", "client_id", "topic_root", "username", "password")


def _mqtt_bad(key: str, value: object, allowed: str) -> ConfigError:
    return ConfigError(f"mqtt.{key} = {value!r} is invalid; {allowed}")


def _mqtt_types(table: dict[str, Any]) -> None:
    """Each value of the type its key needs (a quoted "1883" is not a port)."""
    for key, allowed in _MQTT_WHOLE.items():
        value = table.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _mqtt_bad(key, value, f"allowed: a whole number, {allowed}")
    for key, allowed in _MQTT_NUMBERS.items():
        value = table.get(key, 1.0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _mqtt_bad(key, value, f"allowed: a number, {allowed}")
    for key in _MQTT_STRINGS:
        value = table.get(key, "")
        if value is not None and not isinstance(value, str):
            raise _mqtt_bad(key, value, "allowed: a string")
    rates = table.get("telemetry_rates_hz", {})
    if not isinstance(rates, dict):
        raise _mqtt_bad("telemetry_rates_hz", rates, "allowed: a table of kind = Hz")
    for kind, rate_hz in rates.items():
        if isinstance(rate_hz, bool) or not isinstance(rate_hz, int | float):
            raise _mqtt_bad(f"telemetry_rates_hz.{kind}", rate_hz, "allowed: 0..100 Hz")


def _mqtt_values(s: MqttSettings) -> None:
    """What MqttSettings does not check itself, and the run would crash on or ignore."""
    if not s.host or any(c.isspace() for c in s.host) or not _resolvable_name(s.host):
        raise _mqtt_bad("host", s.host, "allowed: the broker's host name or IP address")
    if s.client_id and not valid_vehicle_id(s.client_id):  # it may fill an ACL's %c
        raise _mqtt_bad("client_id", s.client_id,
                        'allowed: "" (offboardd-<vehicle_id>) or 1-64 of A-Z a-z 0-9 _ . -')
    root = s.topic_root.strip("/")
    if not valid_publish_topic(root) or root.startswith("$"):
        raise _mqtt_bad("topic_root", s.topic_root,
                        "allowed: a topic prefix such as offboardd or fleet/site1, without "
                        "the wildcards + and #, not starting with $")
    if not 1 <= s.max_pending_events <= _MAX_PENDING_EVENTS:
        raise _mqtt_bad("max_pending_events", s.max_pending_events,
                        f"allowed: {_MQTT_WHOLE['max_pending_events']}")
    if not 0 <= s.state_min_interval_s <= 10:
        raise _mqtt_bad("state_min_interval_s", s.state_min_interval_s,
                        "allowed: 0..10 s (0: every change)")
    if not 0 < s.mavlink_relay_rate_hz <= 100:
        raise _mqtt_bad("mavlink_relay_rate_hz", s.mavlink_relay_rate_hz,
                        f"allowed: {_MQTT_NUMBERS['mavlink_relay_rate_hz']} "
                        "(an empty mavlink_relay relays nothing)")


def _log(table: dict[str, Any]) -> LogSettings:
    settings: LogSettings = _build("log", LogSettings, table)
    if settings.level not in LOG_LEVELS:
        raise ConfigError(f"log.level = {settings.level!r}: allowed {', '.join(LOG_LEVELS)}")
    if settings.format not in LOG_FORMATS:
        raise ConfigError(f"log.format = {settings.format!r}: allowed {', '.join(LOG_FORMATS)}")
    return settings


def _resolvable_name(host: str) -> bool:
    """A name getaddrinfo can take: "broker..lan" (an empty label) or a label over 63
    characters raised UnicodeError inside paho's connect, not a connect error (review)."""
    if ":" in host:  # an IPv6 address
        return True
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True
