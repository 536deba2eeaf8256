"""`offboardd doctor [--config FILE]`: check a deployment and say what to fix.

Order: the configuration file (valid, readable by the service user, no world-readable
password), the serial device when the link is serial, the host clock (synchronised, as the
service sees it: the recorder's age pruning), then the flight controller and the broker
(probed concurrently). One line per check, `ok` / `note` / `warn` / `FAIL` and the
fix; exit 0 when nothing FAILed. Stop the service first when it owns the link (a UART can
have one user; a UDP port one listener).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import stat
import tomllib
from pathlib import Path

from offboardd.config import MQTT_PASSWORD_ENV, DaemonConfig, default_config, load_config
from offboardd.doctor.broker import broker_checks
from offboardd.doctor.clock import clock_checks, clock_views
from offboardd.doctor.device import (
    SERVICE_USER,
    User,
    device_checks,
    may_access,
    resolve_user,
)
from offboardd.doctor.fc_probe import probe_fc
from offboardd.doctor.fc_verdicts import fc_verdicts
from offboardd.doctor.report import Check, exit_code, fail, note, ok, summary, warn
from offboardd.doctor.writable import writable_checks
from offboardd.errors import ConfigError

DEFAULT_CONFIG = Path("/etc/offboardd/offboardd.toml")
UNIT_ENV_FILE = Path("/etc/offboardd/env")  # the unit's EnvironmentFile= (the MQTT password)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE",
                        help=f"configuration to check (default {DEFAULT_CONFIG} if present)")
    parser.add_argument("--user", metavar="NAME",
                        help="check device/config access for this user (default: offboardd if "
                             "it exists, else you)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                        help="how long to wait for the flight controller (default 5)")
    parser.add_argument("--no-fc", action="store_true", help="skip the flight controller")
    parser.add_argument("--no-mqtt", action="store_true", help="skip the broker")


def main(args: argparse.Namespace) -> int:
    checks: list[Check] = []

    def report(new: list[Check]) -> None:
        for check in new:
            print(check.line(), flush=True)
        checks.extend(new)

    path = Path(args.config) if args.config else (DEFAULT_CONFIG if DEFAULT_CONFIG.exists()
                                                   else None)
    try:
        user = resolve_user(args.user)
    except KeyError:
        report([fail("user", f"no user {args.user!r} here",
                     "run systemd/install.sh, or pass --user NAME")])
        return 1
    if args.user is None and not user.service:
        report([note("user", f"no user {SERVICE_USER} here (systemd/install.sh creates it): "
                     f"access checked for {user.name}")])
    config, config_checks = check_config(path, user)
    report(config_checks)
    if config is None:
        print(summary(checks))
        return exit_code(checks)
    url = config.mavlink.url
    serial_missing = False
    if url.is_serial and url.device is not None:
        serial = device_checks(url.device, user)
        report(serial)
        serial_missing = serial[0].status.value == "FAIL"
    report(clock_checks(config.recorder, *clock_views()))
    report(writable_checks(config, user))
    report(asyncio.run(_remote_checks(config, args, skip_fc=serial_missing)))
    print(summary(checks))
    return exit_code(checks)


async def _remote_checks(config: DaemonConfig, args: argparse.Namespace,
                         *, skip_fc: bool) -> list[Check]:
    async def fc() -> list[Check]:
        if args.no_fc:
            return [note("flight controller", "skipped (--no-fc)")]
        if skip_fc:
            return [note("flight controller", "not probed: the serial device is unusable")]
        probe = await probe_fc(config.mavlink.url, timeout_s=args.timeout,
                               fc_system_id=config.mavlink.fc_system_id,
                               envelope=config.engine.envelope)
        return fc_verdicts(probe, config.engine.setpoint_rate_hz)

    async def mqtt() -> list[Check]:
        if args.no_mqtt:
            return [note("broker", "skipped (--no-mqtt)")]
        return await broker_checks(config.mqtt)

    fc_lines, mqtt_lines = await asyncio.gather(fc(), mqtt())
    return fc_lines + mqtt_lines


def check_config(path: Path | None, user: User, unit_env: Path = UNIT_ENV_FILE
                 ) -> tuple[DaemonConfig | None, list[Check]]:
    """Load and validate (with the MQTT password the unit would have); then whether the
    service user can read it, and who else can."""
    environ, env_checks = _service_environ(unit_env)
    if path is None:
        return default_config(environ), [
            *env_checks,
            note("config", f"no --config and no {DEFAULT_CONFIG}: checking the built-in "
                 "defaults")]
    if not path.exists():  # check-config would only say the same again (review)
        return None, [fail("config", f"{path}: no such file",
                           f"pass the right --config, or create it (systemd/install.sh "
                           f"writes {DEFAULT_CONFIG})")]
    try:
        config = load_config(path, environ)
    except ConfigError as exc:
        return None, [fail("config", f"{path}: {exc.message}", f"offboardd check-config {path}")]
    checks = [*env_checks, ok("config", f"{path}: valid")]
    st = path.stat()
    if not may_access(st.st_mode, st.st_uid, st.st_gid, user.uid, user.gids, write=False):
        checks.append(fail("config access", f"user {user.name} cannot read {path} "
                           f"(mode {stat.S_IMODE(st.st_mode):04o})",
                           f"chown root:{user.name} {path}; chmod 0640 {path}"))
    if st.st_mode & stat.S_IROTH and _password_in_file(path):
        checks.append(warn("config secrets", f"{path} holds the MQTT password and every user "
                           "can read it", f"chmod 0640 {path}, or move it to "
                           "OFFBOARDD_MQTT_PASSWORD in /etc/offboardd/env"))
    return config, checks


def _service_environ(unit_env: Path) -> tuple[dict[str, str], list[Check]]:
    """The environment with the MQTT password the unit gives the daemon: its EnvironmentFile
    when the shell has none. `sudo offboardd doctor` (deploy.md) loads no such file, and a
    correct install read "broker refused the credentials" (review, 2026-11-29)."""
    environ = dict(os.environ)
    if environ.get(MQTT_PASSWORD_ENV):
        return environ, []
    try:
        text = unit_env.read_text(encoding="utf-8")
    except FileNotFoundError:
        return environ, []
    except OSError as exc:
        return environ, [note("password", f"cannot read {unit_env} ({exc.strerror}): the "
                              "broker is tried without the password the service gets there",
                              "run the doctor as root (sudo)")]
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == MQTT_PASSWORD_ENV:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            environ[MQTT_PASSWORD_ENV] = value
            return environ, [note("password", f"{MQTT_PASSWORD_ENV} read from {unit_env}, as "
                                  "the service gets it (EnvironmentFile=)")]
    return environ, []


def _password_in_file(path: Path) -> bool:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    mqtt = document.get("mqtt")
    return isinstance(mqtt, dict) and bool(mqtt.get("password"))

