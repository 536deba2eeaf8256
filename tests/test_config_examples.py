"""The configuration examples in config/: each passes `offboardd check-config`, says what
it is for, keeps the telemetry it does not mention (as does the config the demo writes), and
the mavlink-router pair agrees on the ports (no sockets, no devices)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

from offboardd.cli import main as offboardd_main
from offboardd.config import load_config
from offboardd.demo.processes import Deployment
from offboardd.mqtt.settings import DEFAULT_TELEMETRY_RATES_HZ

CONFIG = Path(__file__).resolve().parents[1] / "config"
EXAMPLES = ["offboardd.toml", "sitl.toml", "pi-serial.toml", "jetson.toml",
            "mavlink-router.toml"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_passes_check_config(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = CONFIG / name
    assert offboardd_main(["check-config", str(path)]) == 0, capsys.readouterr().err
    assert f"{path}: ok" in capsys.readouterr().out


@pytest.mark.parametrize("name", EXAMPLES[1:])
def test_example_explains_itself(name: str) -> None:
    text = (CONFIG / name).read_text()
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert len(comments) >= 8, "an example says why, not only what"
    assert "config/offboardd.toml" in text, "and points at the full reference"
    assert "password =" not in text, "no secret in an example: OFFBOARDD_MQTT_PASSWORD"


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_example_turns_a_telemetry_kind_off(name: str) -> None:
    """An example's [mqtt.telemetry_rates_hz] speeds kinds up and leaves the rest at their
    defaults: when the table replaced the defaults, sitl.toml and jetson.toml published
    position and velocity (and jetson's attitude) only, battery, gps and home never."""
    rates = load_config(CONFIG / name, {}).mqtt.telemetry_rates_hz
    assert all(rates[kind] >= hz for kind, hz in DEFAULT_TELEMETRY_RATES_HZ.items())


def test_the_demos_daemon_publishes_every_kind_and_position_faster(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo sets only position (10 Hz, a smoother flown path in its plot; its runner
    reads position alone); every other kind keeps its default, as a user watching the
    demo's broker would expect."""
    deployment = Deployment(tmp_path)
    deployment.broker_port = 1883  # (set when its broker starts)
    monkeypatch.setattr(deployment, "_spawn", lambda name, argv: None)  # no daemon started
    deployment._start_daemon(14540)
    rates = load_config(tmp_path / "offboardd.toml", {}).mqtt.telemetry_rates_hz
    assert rates == {**DEFAULT_TELEMETRY_RATES_HZ, "position": 10.0}


def test_each_example_reaches_the_flight_controller_its_way() -> None:
    env: dict[str, str] = {}
    sitl = load_config(CONFIG / "sitl.toml", env)
    assert str(sitl.mavlink.url) == "udpin://127.0.0.1:14540"  # PX4 SITL's onboard link
    pi = load_config(CONFIG / "pi-serial.toml", env).mavlink
    assert (pi.url.device, pi.url.baud) == ("/dev/serial0", 921600)
    jetson = load_config(CONFIG / "jetson.toml", env).mavlink
    assert (jetson.url.device, jetson.url.baud) == ("/dev/ttyTHS1", 921600)
    routed = load_config(CONFIG / "mavlink-router.toml", env).mavlink
    assert routed.url.scheme == "udpin" and routed.url.host == "127.0.0.1"
    # a shared (routed or serial) link may carry other systems: fly only PX4 system 1
    assert pi.fc_system_id == jetson.fc_system_id == routed.fc_system_id == 1


def _router_conf() -> configparser.ConfigParser:
    text = (CONFIG / "mavlink-router.conf").read_text()
    # mavlink-router allows no comment at the end of a line: every value must be bare
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            assert "#" not in line, f"end-of-line comment in mavlink-router.conf: {line!r}"
    parser = configparser.ConfigParser(comment_prefixes=("#",), inline_comment_prefixes=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_mavlink_router_owns_the_uart_and_serves_qgc_offboardd_and_a_logger() -> None:
    conf = _router_conf()
    uarts = [s for s in conf.sections() if s.startswith("UartEndpoint ")]
    assert len(uarts) == 1 and conf[uarts[0]]["Device"] == "/dev/serial0"
    assert conf[uarts[0]]["Baud"] == "921600"
    assert conf["General"]["TcpServerPort"] == "0", "no open TCP port on the vehicle"
    udp = {s.split()[1]: conf[s] for s in conf.sections() if s.startswith("UdpEndpoint ")}
    assert set(udp) == {"qgc", "offboardd", "logger"}
    assert udp["qgc"]["Port"] == "14550"  # QGroundControl's default UDP port
    for endpoint in udp.values():
        assert endpoint["Mode"].lower() in ("normal", "server")
        assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", endpoint["Address"])
    # the router sends to where offboardd listens, on loopback
    routed = load_config(CONFIG / "mavlink-router.toml", {}).mavlink.url
    assert (udp["offboardd"]["Address"], int(udp["offboardd"]["Port"])) == routed.address
    assert udp["logger"]["Address"] == "127.0.0.1"
    ports = [int(e["Port"]) for e in udp.values()]
    assert len(set(ports)) == len(ports)
