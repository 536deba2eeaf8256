"""The doctor as deploy.md runs it (`sudo offboardd doctor`): with the MQTT password the
unit gives the service (its EnvironmentFile), fixes that point the right way for a broker
on this machine and for a config file that is not there, and a missing password named as
such (review, 2026-11-29: a correct install read "broker refused the credentials")."""

from __future__ import annotations

from pathlib import Path

import pytest

from offboardd.doctor.broker import broker_checks
from offboardd.doctor.cli import check_config
from offboardd.doctor.device import User
from offboardd.doctor.report import Status
from offboardd.mqtt.settings import MqttSettings
from tests.conftest import free_port

ROOT = User("root", 0, frozenset({0}), False)


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "offboardd.toml"
    path.write_text('[mqtt]\nusername = "offboardd"\n')
    path.chmod(0o640)
    return path


def test_the_password_the_unit_gives_is_read_from_its_environment_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OFFBOARDD_MQTT_PASSWORD", raising=False)
    env_file = tmp_path / "env"
    env_file.write_text('# the broker\nOFFBOARDD_MQTT_PASSWORD="s3cret word"\n')
    config, checks = check_config(_config(tmp_path), ROOT, unit_env=env_file)
    assert config is not None and config.mqtt.password == "s3cret word"
    assert checks[0].status is Status.NOTE and str(env_file) in checks[0].detail


def test_the_shells_own_password_wins_and_no_file_is_no_matter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = tmp_path / "env"
    env_file.write_text("OFFBOARDD_MQTT_PASSWORD=from-the-file\n")
    monkeypatch.setenv("OFFBOARDD_MQTT_PASSWORD", "from-the-shell")
    config, checks = check_config(_config(tmp_path), ROOT, unit_env=env_file)
    assert config is not None and config.mqtt.password == "from-the-shell"
    assert [c.name for c in checks] == ["config"]
    monkeypatch.delenv("OFFBOARDD_MQTT_PASSWORD")
    config, checks = check_config(_config(tmp_path), ROOT, unit_env=tmp_path / "none")
    assert config is not None and config.mqtt.password is None and len(checks) == 1


def test_a_config_file_that_is_not_there_says_how_to_make_one(tmp_path: Path) -> None:
    config, checks = check_config(tmp_path / "nope.toml", ROOT)
    assert config is None and checks[0].status is Status.FAIL
    assert "no such file" in checks[0].detail and "install.sh" in checks[0].fix


async def test_no_broker_on_this_machine_is_no_listener_advice() -> None:
    (check,) = await broker_checks(MqttSettings(host="127.0.0.1", port=free_port(),
                                                timeout_s=2.0))
    assert check.status is Status.FAIL and "systemctl status mosquitto" in check.fix
    assert "0.0.0.0" not in check.fix  # would open the broker to the network
