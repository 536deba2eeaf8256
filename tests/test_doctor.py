"""`offboardd doctor` against real parts: the sim over UDP, mosquitto with and without a
password file, a missing serial device, a real pty held by another process.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pwd
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from offboardd.cli import main as cli_main
from offboardd.doctor.device import device_checks, resolve_user
from offboardd.doctor.report import Status
from offboardd.sim import SimConfig, SimServer
from tests.conftest import Broker, free_port
from tests.sim.client import QUICK_BOOT_S

pytestmark = pytest.mark.integration


def _config(tmp_path: Path, url: str, broker_port: int, extra_mqtt: str = "") -> Path:
    path = tmp_path / "offboardd.toml"
    path.write_text(f'[mavlink]\nurl = "{url}"\n'
                    f'[mqtt]\nhost = "127.0.0.1"\nport = {broker_port}\n{extra_mqtt}')
    path.chmod(0o640)
    return path


async def _doctor(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "offboardd", "doctor", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env)
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode().splitlines()


async def test_doctor_against_the_sim_and_a_broker_is_all_ok(
    mosquitto: Broker, tmp_path: Path
) -> None:
    port = free_port()
    config = _config(tmp_path, f"udpin://127.0.0.1:{port}", mosquitto.port)
    # Parameter values a careful integrator sets (the defaults give warn/note lines).
    params = {"COM_OBL_RC_ACT": 5, "COM_RC_OVERRIDE": 3}
    # PX4 v1.16.2: the doctor reads COM_RC_OVERRIDE, which v1.18 removed (#27041)
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", params=params, px4_version="1.16",
                           boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config):
        code, lines = await _doctor("--config", str(config), "--user", "root")
    checks, summary = lines[:-1], lines[-1]
    assert code == 0, lines
    names = [line.split()[1] for line in checks]
    for wanted in ("config", "clock", "flight", "PX4", "COM_OF_LOSS_T", "COM_OBL_RC_ACT",
                   "MAV_FWDEXTSP", "COM_RC_OVERRIDE", "COM_RCL_EXCEPT", "broker"):
        assert wanted in names, lines
    # The clock line is this host's own: not synchronised (a note), or synchronised by a
    # kernel the service would not see so (a warning: a container without timedated).
    clock = next(line for line in checks if line.split()[1] == "clock")
    assert all(line.startswith("ok ") for line in checks if line != clock), lines
    assert summary == ("no FAIL, 1 warn: offboardd can run; read the warn lines"
                       if clock.startswith("warn ") else "all checks passed"), lines
    assert any("PX4 v1.16.2" in line for line in checks)


async def test_doctor_names_px4_limits_looser_than_the_envelope(
    mosquitto: Broker, tmp_path: Path
) -> None:
    """PX4 flies a position step to MPC_XY_VEL_MAX, not to the envelope's speed (docs/
    safety-envelope.md): an envelope tighter than PX4's own limits is named, with the
    parameter to set."""
    port = free_port()
    config = _config(tmp_path, f"udpin://127.0.0.1:{port}", mosquitto.port)
    config.write_text(config.read_text() + "[envelope]\nmax_horizontal_speed_m_s = 5.0\n")
    sim_config = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=("127.0.0.1", port),
                           gcs_bind=None, profile="light", params={"COM_OBL_RC_ACT": 5},
                           boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config):
        code, lines = await _doctor("--config", str(config), "--user", "root", "--no-mqtt")
    limits = [line for line in lines if line.split()[1:2] == ["envelope"]]
    assert len(limits) == 1 and limits[0].startswith("warn "), lines
    assert "MPC_XY_VEL_MAX=12 m/s is above [envelope] max_horizontal_speed_m_s=5" in limits[0]
    assert code == 0, lines  # a warning, not a failure


async def test_doctor_names_wrong_broker_credentials(mosquitto: Broker, tmp_path: Path) -> None:
    passwords = tmp_path / "passwords"
    made = await asyncio.create_subprocess_exec(
        "mosquitto_passwd", "-c", "-b", str(passwords), "pilot", "right-secret")
    assert await made.wait() == 0
    passwords.chmod(0o600)
    # `user`: stay who we are, or a broker started as root drops to `mosquitto`, which
    # cannot read a file in pytest's private tmp directory.
    me = pwd.getpwuid(os.geteuid()).pw_name
    mosquitto.config_path.write_text(
        f"user {me}\nlistener {mosquitto.port} 127.0.0.1\nallow_anonymous false\n"
        f"password_file {passwords}\npersistence false\n")
    mosquitto.start()  # same port, now with the password file
    config = _config(tmp_path, "udpin://127.0.0.1:14540", mosquitto.port,
                     'username = "pilot"\n')
    env = dict(os.environ, OFFBOARDD_MQTT_PASSWORD="wrong-secret")
    code, lines = await _doctor("--config", str(config), "--no-fc", "--user", "root", env=env)
    broker = [line for line in lines if line.split()[1:2] == ["broker"]]
    assert code == 1, lines
    assert broker[0].startswith("FAIL") and "refused the credentials" in broker[0], lines
    del env["OFFBOARDD_MQTT_PASSWORD"]  # (and no /etc/offboardd/env here)
    code, lines = await _doctor("--config", str(config), "--no-fc", "--user", "root", env=env)
    broker = [line for line in lines if line.split()[1:2] == ["broker"]]
    assert code == 1 and "no password was given" in broker[0], lines
    env["OFFBOARDD_MQTT_PASSWORD"] = "right-secret"
    code, lines = await _doctor("--config", str(config), "--no-fc", "--user", "root", env=env)
    assert code == 0, lines
    assert any(line.startswith("ok") and "accepts offboardd as 'pilot'" in line
               for line in lines), lines


def test_doctor_with_a_missing_serial_device(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    device = tmp_path / "ttyAMA7"
    config = _config(tmp_path, f"serial://{device}:921600", free_port())
    code = cli_main(["doctor", "--config", str(config), "--no-mqtt", "--user", "root"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    serial = next(line for line in lines if "serial device" in line)
    assert serial.startswith("FAIL") and f"{device} does not exist" in serial
    assert "enable the UART" in serial  # a ttyAMA name: the Raspberry Pi fix
    assert any("not probed" in line for line in lines)
    assert lines[-1].startswith("1 FAIL")


def test_a_held_pty_names_its_holder_and_policy() -> None:
    master, slave = os.openpty()
    path = os.ttyname(slave)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                              pass_fds=(slave,))
    try:
        checks = {c.name: c for c in device_checks(path, resolve_user("root"))}
        nobody = {c.name: c for c in device_checks(path, resolve_user("nobody"))}
    finally:
        holder.kill()
        holder.wait()
        os.close(master)
        os.close(slave)
    held = checks["serial holders"]
    assert held.status is Status.FAIL and f"pid {holder.pid}" in held.detail
    assert checks["serial access"].status is Status.OK  # root
    assert nobody["serial access"].status is Status.FAIL
    assert "user nobody cannot read and write" in nobody["serial access"].detail
    # a pty is not a UART: the unit's DevicePolicy would refuse it
    assert checks["device policy"].status is Status.WARN
    assert "DeviceAllow=char-" in checks["device policy"].fix


def test_unreadable_config_for_the_service_user(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "udpin://127.0.0.1:14540", free_port(),
                     'username = "u"\npassword = "in-the-file"\n')
    config.chmod(0o604)  # others may read it, the group may not: both are wrong here
    code = cli_main(["doctor", "--config", str(config), "--no-mqtt", "--no-fc",
                     "--user", "nobody"])
    out = capsys.readouterr().out
    assert code == 0  # nobody can read it via "others"; the password warning remains
    assert "warn  config secrets" in out and "chmod 0640" in out
    config.chmod(0o600)
    code = cli_main(["doctor", "--config", str(config), "--no-mqtt", "--no-fc",
                     "--user", "nobody"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL  config access" in out and "user nobody cannot read" in out


async def test_doctor_over_a_serial_pty_to_the_sim(tmp_path: Path) -> None:
    sim_config = SimConfig(udp_bind=None, udp_remote=None, gcs_bind=None, pty=True,
                           profile="light", boot_ready_s=QUICK_BOOT_S)
    async with SimServer(sim_config) as sim:
        config = _config(tmp_path, f"serial://{sim.pty_path}:921600", free_port())
        code, lines = await _doctor("--config", str(config), "--no-mqtt", "--user", "root")
    by_name = {" ".join(line.split()[1:3]): line for line in lines[:-1]}
    assert by_name["flight controller"].startswith("ok") and "serial://" in by_name[
        "flight controller"], lines
    assert by_name["PX4 version"].startswith("ok"), lines
    # The sim keeps the pty's slave open, as socat would: the doctor names this process.
    assert by_name["serial holders"].startswith("FAIL"), lines
    assert f"(pid {os.getpid()}:" in by_name["serial holders"], lines
    assert by_name["device policy"].startswith("warn")  # a pty is not a UART
    assert code == 1


def test_doctor_says_who_to_stop_when_the_udp_port_is_taken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as daemon_socket:
        daemon_socket.bind(("127.0.0.1", 0))  # the running service's udpin socket
        port = daemon_socket.getsockname()[1]
        config = _config(tmp_path, f"udpin://127.0.0.1:{port}", free_port())
        code = cli_main(["doctor", "--config", str(config), "--no-mqtt", "--user", "root",
                         "--timeout", "1"])
    line = next(x for x in capsys.readouterr().out.splitlines() if "flight controller" in x)
    assert code == 1
    assert line.startswith("FAIL") and "Address already in use" in line
    assert "systemctl stop offboardd" in line


def test_doctor_says_who_to_stop_when_the_serial_port_is_locked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A serial port the running service holds (an exclusive lock) is no wiring fault: the
    doctor sent the field engineer to the wiring (review, 2026-11-29)."""
    master, slave = os.openpty()
    try:
        path = os.ttyname(slave)
        with open(path, "rb", buffering=0) as held:  # the service's own open, locked
            fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            config = _config(tmp_path, f"serial://{path}:57600", free_port())
            code = cli_main(["doctor", "--config", str(config), "--no-mqtt", "--user", "root",
                             "--timeout", "1"])
    finally:
        os.close(master)
        os.close(slave)
    line = next(x for x in capsys.readouterr().out.splitlines() if "flight controller" in x)
    assert code == 1
    assert line.startswith("FAIL") and "device busy" in line, line
    assert "systemctl stop offboardd" in line and "wiring" not in line, line
