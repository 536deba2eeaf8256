"""`offboardd run [--config FILE]`: load the configuration, set up logging, run the runtime.

Without --config the daemon runs with what an empty config file gives (`default_config`),
the default stream plan included."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys

from offboardd.config import DaemonConfig, default_config, load_config
from offboardd.errors import ConfigError, LinkUrlError
from offboardd.logs import configure_logging
from offboardd.mavlink.links import LinkUrl, parse_link_url
from offboardd.runtime import Runtime


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE",
                        help="TOML configuration file (without it: the built-in defaults, "
                             "which config/offboardd.toml lists; no file is read "
                             "implicitly: the systemd unit passes "
                             "/etc/offboardd/offboardd.toml)")
    parser.add_argument("--link", metavar="URL", help="override mavlink.url")
    parser.add_argument("--no-mqtt", action="store_true", help="run without the MQTT bridge")


def build_config(args: argparse.Namespace) -> DaemonConfig:
    """The configuration `run` flies with: the file, or an empty file's; then --link."""
    config = load_config(args.config) if args.config else default_config()
    if args.link:
        config = dataclasses.replace(
            config, mavlink=dataclasses.replace(config.mavlink, url=_link(args.link))
        )
    return config


def main(args: argparse.Namespace) -> int:
    try:
        config = build_config(args)
    except ConfigError as exc:
        where = f"{args.config}: " if args.config else ""
        print(f"offboardd: {where}{exc.message}", file=sys.stderr)
        return 2
    fmt = config.log.format
    configure_logging(config.log.level, json=None if fmt == "auto" else fmt == "json")
    asyncio.run(Runtime(config, mqtt=not args.no_mqtt, freeze_start_up=True).run())
    return 0


def _link(url: str) -> LinkUrl:
    try:
        return parse_link_url(url)
    except LinkUrlError as exc:
        raise ConfigError(f"--link {url!r}: {exc.message}") from None
