"""The doctor checks where the daemon writes as the shipped unit lets it: a flights folder
or a signing timestamp outside /var/lib/offboardd is read-only under ProtectSystem=strict
(the fix: a ReadWritePaths= drop-in), /home and /tmp are no place at all, a folder the
service user cannot create fails (review, 2026-11-29: check-config said ok, the doctor
said nothing)."""

from __future__ import annotations

import os
from pathlib import Path

from offboardd.config import DaemonConfig, MavlinkSettings
from offboardd.doctor.device import User
from offboardd.doctor.report import Status
from offboardd.doctor.writable import writable_checks
from offboardd.recorder.settings import RecorderSettings, RecordMode

ROOT = User("root", 0, frozenset({0}), False)
NOBODY = User("nobody", 65534, frozenset({65534}), False)


def _by_name(config: DaemonConfig, user: User = ROOT) -> dict[str, tuple[Status, str, str]]:
    return {c.name: (c.status, c.detail, c.fix) for c in writable_checks(config, user)}


def test_the_default_state_directory_is_the_units_own() -> None:
    status, detail, _ = _by_name(DaemonConfig())["flights folder"]
    assert status is Status.OK and "/var/lib/offboardd/flights" in detail


def test_a_folder_elsewhere_needs_a_read_write_paths_drop_in(tmp_path: Path) -> None:
    folder = "/srv/offboardd-flights"  # a bigger partition, say
    status, detail, fix = _by_name(DaemonConfig(recorder=RecorderSettings(dir=folder)))[
        "flights folder"]
    assert status is Status.WARN and "ProtectSystem=strict" in detail
    assert fix == f"`systemctl edit offboardd`, add: [Service] ReadWritePaths={folder}"


def test_home_and_tmp_are_no_place_under_the_unit(tmp_path: Path) -> None:
    for folder in ("/home/pi/flights", str(tmp_path / "flights")):
        status, detail, fix = _by_name(DaemonConfig(recorder=RecorderSettings(dir=folder)))[
            "flights folder"]
        assert status is Status.WARN and "hides" in detail and "outside /home and /tmp" in fix


def test_a_folder_the_service_user_cannot_create_fails(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o755)
    config = DaemonConfig(recorder=RecorderSettings(dir=str(locked / "flights")))
    status, detail, fix = _by_name(config, NOBODY)["flights folder"]
    assert status is Status.FAIL and f"user nobody cannot create {locked}/flights" in detail
    assert fix.startswith(f"mkdir -p {locked}/flights; chown nobody:")


def test_the_recorder_off_and_an_unsigned_link_ask_for_nothing() -> None:
    config = DaemonConfig(recorder=RecorderSettings(mode=RecordMode.OFF))
    checks = _by_name(config)
    assert checks["flights folder"][0] is Status.NOTE and "signing timestamp" not in checks


def test_a_signing_timestamp_outside_the_state_directory_is_named(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(os.urandom(32))
    config = DaemonConfig(mavlink=MavlinkSettings(
        signing_key_file=str(key), signing_timestamp_file="/etc/offboardd/signing-ts"))
    status, _, fix = _by_name(config)["signing timestamp"]
    assert status is Status.WARN and fix.endswith("ReadWritePaths=/etc/offboardd")
