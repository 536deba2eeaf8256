"""`offboardd ctl`: send any command from the shell and print its reply; watch the vehicle.

    offboardd ctl --vehicle v1 hold
    offboardd ctl engage --arm --keep-lease \\
        --setpoint '{"kind":"position_ned","north_m":0,"east_m":0,"down_m":-5}'
    offboardd ctl goto 5 0 -5 --resume --wait  # from a holding vehicle; leased till done
    offboardd ctl disarm --force
    offboardd ctl emergency-stop --confirm
    offboardd ctl send '{"v":1,"id":"x","cmd":"heartbeat"}'
    offboardd ctl state
    offboardd ctl watch [--all] [--count N] [--duration S]
    offboardd ctl --port 8883 --tls-ca-file ca.crt --username commander hold  # TLS + auth

Replies are printed as one JSON line on stdout. Exit status: 0 ok, 1 refused,
2 bad usage, 3 no reply in time, 4 broker unreachable, 5 broker refused us (credentials,
TLS), 6 control lost while `engage --keep-lease` or a motion's `--wait` held it (a pilot, a
GCS, a failsafe, another commander, a daemon restart: the reason goes to stderr and --then
is not sent), 7 `state` printed the last state of a daemon that is offline. Every
subcommand prints a refusal's reply and exits 1. Built on `offboardd.client`; it keeps no
state of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any

import aiomqtt

from offboardd.client import (
    ClientError,
    CommandRefused,
    ConnectFailed,
    ControlLost,
    NoToken,
    OffboardClient,
    Reply,
    ReplyTimeout,
    TlsSettings,
)
from offboardd.core.commands import (
    Arm,
    Command,
    CommanderHeartbeat,
    Disarm,
    EmergencyStop,
    Hold,
    Land,
    Release,
    Rtl,
)
from offboardd.errors import OffboarddError
from offboardd.mqtt.connection import FailureKind
from offboardd.mqtt.ctl_motion import MOTIONS, add_motion_parsers, run_motion
from offboardd.mqtt.schema import CommandDecoder
from offboardd.mqtt.topics import AVAILABILITY_OFFLINE
from offboardd.mqtt.wire import Rejection

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_TIMEOUT, EXIT_UNREACHABLE = 0, 1, 2, 3, 4
EXIT_BROKER_REFUSED = 5
EXIT_CONTROL_LOST = 6  # --keep-lease: a pilot, a GCS, a failsafe or a restart took control
EXIT_OFFLINE = 7  # `state`: the daemon is offline, the state printed is its last
_QUOTING: dict[str, type[Hold | Land | Rtl | Arm]] = {
    "hold": Hold, "land": Land, "rtl": Rtl, "arm": Arm}
_SIMPLE: dict[str, type[Release | Hold | Land | Rtl | Arm | CommanderHeartbeat]] = {
    "release": Release, **_QUOTING, "heartbeat": CommanderHeartbeat}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1883)
    parser.add_argument("--vehicle", default="vehicle1", help="vehicle id (topic prefix)")
    parser.add_argument("--protocol", choices=["5", "3.1.1"], default="5")
    parser.add_argument("--username")
    parser.add_argument("--password", default=os.environ.get("OFFBOARDD_MQTT_PASSWORD"),
                        help="default: $OFFBOARDD_MQTT_PASSWORD (keeps it out of `ps`)")
    parser.add_argument("--tls", action="store_true",
                        help="connect with TLS (implied by any --tls-* option)")
    parser.add_argument("--tls-ca-file", default="", help="CA to verify the broker "
                        "(default: the system trust store)")
    parser.add_argument("--tls-cert-file", default="", help="client certificate (PEM)")
    parser.add_argument("--tls-key-file", default="", help="its private key (PEM)")
    parser.add_argument("--tls-insecure-skip-verify", action="store_true",
                        help="do not verify the broker at all (testing only)")
    parser.add_argument("--timeout", type=float, default=5.0, dest="timeout_s",
                        help="seconds to wait for a reply (engage: 4x this)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name in _SIMPLE:
        actions.add_parser(name, help=f"send {name}")
    disarm = actions.add_parser("disarm", help="disarm (refused in flight unless --force)")
    disarm.add_argument("--force", action="store_true")
    estop = actions.add_parser("emergency-stop", help="force-disarm at once: the vehicle falls")
    estop.add_argument("--confirm", action="store_true", help="required")
    engage = actions.add_parser("engage", help="engage with a first setpoint (default: hold here)")
    engage.add_argument("--setpoint", help='setpoint JSON, e.g. {"kind":"position_ned",...}')
    engage.add_argument("--arm", action="store_true")
    engage.add_argument("--keep-lease", action="store_true",
                        help="keep the lease alive until Ctrl-C/SIGTERM (or --duration), "
                             "then send --then")
    engage.add_argument("--duration", type=float, dest="duration_s")
    engage.add_argument("--then", choices=["release", "hold", "land", "rtl"], default="release")
    setpoint = actions.add_parser("setpoint", help="send one setpoint as a command")
    setpoint.add_argument("json", help='setpoint JSON, e.g. {"kind":"velocity_ned",...}')
    setpoint.add_argument("--resume", action="store_true",
                          help="take control (from holding, or from another commander) "
                               "quoting the daemon's token")
    send = actions.add_parser("send", help="send a raw command document")
    send.add_argument("json", help='e.g. {"v":1,"id":"x","cmd":"hold"}')
    add_motion_parsers(actions)
    flights = actions.add_parser("flights", help="list the flights the daemon recorded")
    flights.add_argument("--limit", type=int, default=20)
    flights.add_argument("--json", action="store_true", help="the reply as JSON")
    actions.add_parser("state", help="print the retained state once")
    watch = actions.add_parser("watch", help="print live state, telemetry and events")
    watch.add_argument("--all", action="store_true", help="every topic of the vehicle")
    watch.add_argument("--count", type=int, help="exit after this many messages")
    watch.add_argument("--duration", type=float, dest="duration_s", help="exit after seconds")


def main(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except KeyboardInterrupt:
        return 130  # the shell's convention for "ended by SIGINT"


def _setpoint_json(text: str, where: str) -> Any:
    """Check a setpoint given on the command line with the daemon's own schema."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise OffboarddError(f"{where}: not JSON: {exc}") from None
    probe = {"v": 1, "id": "ctl", "cmd": "setpoint", "setpoint": doc}
    decoded = CommandDecoder().decode("cmd", probe)
    if isinstance(decoded, Rejection):
        raise OffboarddError(f"{where}: {decoded.code}: {decoded.message}")
    return decoded.setpoint  # type: ignore[union-attr]


def _print_reply(reply: Reply) -> int:
    print(json.dumps(reply.document()), flush=True)
    return EXIT_OK if reply.ok else EXIT_REFUSED


async def _flights(c: OffboardClient, args: argparse.Namespace) -> int:
    from offboardd.recorder.cli import flight_table  # noqa: PLC0415
    from offboardd.recorder.summary import FlightSummary  # noqa: PLC0415

    reply = await c.send_document({"v": 1, "cmd": "flights", "limit": args.limit})
    if args.json or not reply.ok:
        return _print_reply(reply)
    flights = reply.extra.get("flights") or []
    print(reply.message)
    if flights:
        for line in flight_table([FlightSummary.from_dict(f) for f in flights]):
            print(line)
    return EXIT_OK


def _tls(args: argparse.Namespace) -> TlsSettings | None:
    files = (args.tls_ca_file, args.tls_cert_file, args.tls_key_file)
    if not (args.tls or args.tls_insecure_skip_verify or any(files)):
        return None
    if args.tls_insecure_skip_verify:
        print("offboardd ctl: WARNING: --tls-insecure-skip-verify: the broker is not "
              "verified; anyone on the path can pose as it", file=sys.stderr)
    return TlsSettings(*files, insecure_skip_verify=args.tls_insecure_skip_verify)


async def _run(args: argparse.Namespace) -> int:
    try:
        client = OffboardClient(args.host, args.port, args.vehicle, protocol=args.protocol,
                                username=args.username, password=args.password, tls=_tls(args),
                                reply_timeout_s=args.timeout_s,
                                engage_timeout_s=4 * args.timeout_s,
                                follow_state=args.action != "watch")
        async with client:
            return await _act(client, args)
    except (OffboarddError, ValueError) as exc:
        print(f"offboardd ctl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ReplyTimeout as exc:
        print(f"offboardd ctl: {exc}", file=sys.stderr)
        return EXIT_TIMEOUT
    except NoToken as exc:  # --resume with no token to quote: refused here
        print(f"offboardd ctl: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except CommandRefused as exc:  # a setpoint or a motion is sent checked: its refusal
        return _print_reply(exc.reply)  # is a reply like any other, not a broker failure
    except ControlLost as exc:  # a motion's --wait: a pilot, a GCS, another commander...
        print(f"offboardd ctl: {exc}", file=sys.stderr)
        return EXIT_CONTROL_LOST
    except ConnectFailed as exc:
        print(f"offboardd ctl: broker {args.host}:{args.port}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE if exc.failure.kind == FailureKind.NETWORK else EXIT_BROKER_REFUSED
    except (aiomqtt.MqttError, ClientError) as exc:
        print(f"offboardd ctl: broker {args.host}:{args.port}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE


async def _act(c: OffboardClient, args: argparse.Namespace) -> int:
    action: str = args.action
    if action == "watch":
        return await _watch(c, args)
    if action == "state":
        state = await c.wait_for_state(lambda s: True, timeout_s=args.timeout_s)
        print(json.dumps(state), flush=True)
        if await c.availability() == AVAILABILITY_OFFLINE:
            print("offboardd ctl: the daemon is offline: this is the last state it published, "
                  "not the vehicle now", file=sys.stderr)  # fmt: skip
            return EXIT_OFFLINE
        return EXIT_OK
    if action == "send":
        doc = json.loads(args.json)
        if not isinstance(doc, dict):
            raise ValueError("send: the document must be a JSON object")
        return _print_reply(await c.send_document({"v": 1, **doc}))
    if action == "flights":
        return await _flights(c, args)
    if action == "engage":
        return await _engage(c, args)
    if action in MOTIONS or action == "setpoint":
        return await _flown(c, args)
    command_id = c.new_command_id()
    command: Command
    if action == "disarm":
        command = Disarm(command_id, force=args.force)
    elif action == "emergency-stop":
        command = EmergencyStop(command_id, confirm=args.confirm)
    elif action in _QUOTING:  # written now, by an operator: it quotes the token (mqtt-api.md)
        await c.read_state()
        command = _QUOTING[action](command_id, resume=c.taken_token())
    else:
        command = _SIMPLE[action](command_id)
    return _print_reply(await c.send(command, check=False))


async def _flown(c: OffboardClient, args: argparse.Namespace) -> int:
    """A setpoint or a motion. With --resume, a refusal `not_in_control` naming the daemon's
    current token is tried once more with it: control changed hands (the last `ctl`'s
    lease lapsed) between reading the token and the command's arrival. The token came from
    the daemon just now, so it is still a live commander that quotes it."""
    async def once() -> int:
        if args.action in MOTIONS:
            return await run_motion(c, args)
        setpoint = _setpoint_json(args.json, "setpoint")
        return _print_reply(await (c.resume(setpoint) if args.resume
                                   else c.setpoint_confirmed(setpoint)))

    try:
        return await once()
    except CommandRefused as exc:
        if not (args.resume and exc.current_token() is not None):
            raise
    return await once()


async def _engage(c: OffboardClient, args: argparse.Namespace) -> int:
    setpoint = None if args.setpoint is None else _setpoint_json(args.setpoint, "--setpoint")
    await c.read_state()  # first: after a takeover the engage quotes the token
    try:
        reply = await c.engage(setpoint, arm=args.arm)
    except CommandRefused as exc:
        reply = exc.reply
    status = _print_reply(reply)
    if status != EXIT_OK or not args.keep_lease:
        return status
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    stopping = asyncio.ensure_future(stop.wait())
    losing = asyncio.ensure_future(c.control_lost())
    try:
        await asyncio.wait((stopping, losing), timeout=args.duration_s,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        losing.cancel()
    if losing.done() and not losing.cancelled():
        # Not ours any more: say why at once, and send nothing (--then is for our own end).
        print(f"offboardd ctl: {losing.result()}", file=sys.stderr, flush=True)
        return EXIT_CONTROL_LOST
    then = {"release": c.release, "hold": c.hold, "land": c.land, "rtl": c.rtl}[args.then]
    try:
        return _print_reply(await then())
    except CommandRefused as exc:
        return _print_reply(exc.reply)


async def _watch(c: OffboardClient, args: argparse.Namespace) -> int:
    t = c.topics
    filters = [t.everything] if args.all else [
        t.state, t.availability, t.events, t.telemetry_all, t.mavlink_all]
    seen = 0

    async def printer() -> None:
        nonlocal seen
        async for message in c.watch(filters):
            text = message.payload.decode("utf-8", errors="replace")
            print(f"{message.relative_topic} {text}", flush=True)
            seen += 1
            if args.count is not None and seen >= args.count:
                return

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(args.duration_s):
            await printer()
    return EXIT_OK
