"""`offboardd check-config FILE`: validate a configuration file and say what is wrong."""

from __future__ import annotations

import argparse
import sys

from offboardd.client import HEARTBEAT_PERIOD_S
from offboardd.config import load_config
from offboardd.core.fc_link import LOSS_TIMEOUT_MARGIN
from offboardd.core.settings import DEFAULT_COM_OF_LOSS_T_S
from offboardd.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="TOML configuration file")


def main(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(f"{args.file}: {exc.message}", file=sys.stderr)
        return 1
    print(
        f"{args.file}: ok (link {config.mavlink.url}, broker {config.mqtt.host}:"
        f"{config.mqtt.port}, vehicle {config.mqtt.vehicle_id}, "
        f"{config.engine.setpoint_rate_hz:g} Hz)"
    )
    period_s = config.engine.stream_period_s
    if period_s > DEFAULT_COM_OF_LOSS_T_S / LOSS_TIMEOUT_MARGIN:  # (the engage gate's rule)
        print(f"{args.file}: note: a {period_s:.3f} s stream period engages only where PX4's "
              f"COM_OF_LOSS_T is at least {LOSS_TIMEOUT_MARGIN * period_s:.2f} s (its default, "
              f"{DEFAULT_COM_OF_LOSS_T_S:g} s, refuses it: stream_too_slow)")  # fmt: skip
    lease_s = config.engine.command_timeout_s
    if lease_s < 2 * HEARTBEAT_PERIOD_S:  # one heartbeat late, and the lease has lapsed
        print(f"{args.file}: note: a {lease_s:g} s commander lease (engine.command_timeout_s) "
              f"lapses between the bundled clients' heartbeats ({HEARTBEAT_PERIOD_S:g} s: "
              "offboardd.client, ctl --keep-lease, the README's loop): engage fails "
              "lease_lapsed; give it 0.5 s at least, or heartbeat faster")
    return 0
