"""`offboardd check-config FILE`: validate a configuration file and say what is wrong."""

from __future__ import annotations

import argparse
import sys

from offboardd.config import load_config
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
    return 0
