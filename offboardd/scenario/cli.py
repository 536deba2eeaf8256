"""`offboardd scenario`: fly a built-in mission through any broker and vehicle id.

    offboardd scenario --broker 127.0.0.1:1883 --vehicle vehicle1 [--mission square]

It arms and flies: the vehicle must be on the ground, disarmed, with a position estimate,
and the daemon (`offboardd run`) connected to it. Progress goes to stdout (bars on a
terminal, plain lines otherwise), then a summary; `--json FILE` also writes the summary with
the commanded and flown paths. Exit status: 0 mission completed, 1 mission failed (the
runner asked for a landing), 2 bad usage, 4 broker unreachable, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

import aiomqtt

from offboardd.client import OffboardClient
from offboardd.config import MQTT_PASSWORD_ENV
from offboardd.scenario.display import ProgressDisplay
from offboardd.scenario.mission import MISSIONS
from offboardd.scenario.report import Summary
from offboardd.scenario.runner import RunnerSettings, ScenarioRunner

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_INTERRUPTED = 0, 1, 2, 4, 130


def broker_address(text: str) -> tuple[str, int]:
    """HOST:PORT or HOST (port 1883, MQTT's registered port)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, 1883
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: port must be a number") from None
    if not host or not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT, port 1..65535")
    return host, number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", type=broker_address, default=("127.0.0.1", 1883),
                        metavar="HOST:PORT", help="MQTT broker (default 127.0.0.1:1883)")
    parser.add_argument("--vehicle", default="vehicle1", help="vehicle id (mqtt.vehicle_id)")
    parser.add_argument("--mission", choices=sorted(MISSIONS), default="square")
    parser.add_argument("--topic-root", default="offboardd", help="mqtt.topic_root")
    parser.add_argument("--protocol", choices=["5", "3.1.1"], default="5")
    parser.add_argument("--username")
    parser.add_argument("--ready-timeout", type=float, default=30.0, dest="ready_timeout_s",
                        help="seconds to wait for the daemon to report the FC ready")
    parser.add_argument("--json", type=Path, dest="json_path",
                        help="also write the summary (with paths) to this file")


async def fly(args: argparse.Namespace, display: ProgressDisplay) -> Summary:
    host, port = args.broker
    client = OffboardClient(host, port, args.vehicle, protocol=args.protocol,
                            username=args.username, password=os.environ.get(MQTT_PASSWORD_ENV),
                            topic_root=args.topic_root)
    settings = RunnerSettings(ready_timeout_s=args.ready_timeout_s)
    async with client:
        runner = ScenarioRunner(client, MISSIONS[args.mission], on_progress=display,
                                settings=settings)
        return await runner.run()


def main(args: argparse.Namespace) -> int:
    display = ProgressDisplay(sys.stdout)
    mission = MISSIONS[args.mission]
    host, port = args.broker
    print(f"offboardd scenario: flying {mission.name!r} ({len(mission.legs)} legs) as "
          f"vehicle {args.vehicle} through {host}:{port}", flush=True)
    try:
        summary = asyncio.run(fly(args, display))
    except KeyboardInterrupt:
        display.close()
        print("offboardd scenario: interrupted (a landing was requested if it held the "
              "vehicle)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ValueError as exc:  # e.g. a vehicle id that cannot be a topic level
        print(f"offboardd scenario: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except aiomqtt.MqttError as exc:
        display.close()
        print(f"offboardd scenario: broker {host}:{port} unreachable: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    display.close()
    print("\n".join(summary.lines()), flush=True)
    if args.json_path is not None:
        args.json_path.write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    return EXIT_OK if summary.ok else EXIT_FAILED
