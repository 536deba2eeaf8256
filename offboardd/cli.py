"""The `offboardd` command: one subcommand a module, imported only when it runs.

Each subcommand module exposes `add_arguments(parser)` and `main(args) -> int`; listing
them here (and importing lazily) keeps `offboardd --version` fast on a Pi and keeps the
pieces that own each subcommand apart.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from offboardd import __version__

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("offboardd.runtime_cli", "run the daemon"),
    "sim": ("offboardd.sim.cli", "run the simulated PX4 vehicle"),
    "ctl": ("offboardd.mqtt.ctl", "send a command and print the reply / watch state"),
    "check-config": ("offboardd.check_config", "validate a configuration file"),
    "doctor": ("offboardd.doctor.cli", "check a deployment (device, FC, broker); say what to fix"),
    "scenario": ("offboardd.scenario.cli", "fly a built-in mission through the daemon"),
    "demo": ("offboardd.demo.cli", "start a broker, the sim and the daemon; fly; plot"),
    "log": ("offboardd.recorder.cli", "recorded flights: list, show, plot, export"),
    "engine-table": ("offboardd.engine_table", "print the offboard phase table (--mermaid)"),
}


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offboardd", description="offboard control for PX4")
    parser.add_argument("--version", action="version", version=f"offboardd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if name == chosen:  # only the chosen subcommand's module is imported
            importlib.import_module(module_name).add_arguments(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list[0] if args_list else None)
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    result: int = module.main(args)
    return result
