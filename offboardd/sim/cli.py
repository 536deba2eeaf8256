"""`offboardd sim`: run the simulated PX4 vehicle until SIGINT/SIGTERM (exit 0).

Parses the command line into a SimConfig and runs a SimServer; prints the endpoints it
serves. No PX4 rules here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from offboardd.errors import ConfigError
from offboardd.mavlink.params import ParamValue
from offboardd.mavlink.signing import load_key
from offboardd.sim.config import PROFILE_NAMES, Endpoint, FaultSpec, SimConfig
from offboardd.sim.faults import FAULT_NAMES, parse_fault
from offboardd.sim.params import ParamTable
from offboardd.sim.px4_versions import VERSION_NAMES, version_by_name


def _endpoint(text: str) -> Endpoint | None:
    if text.lower() in ("", "none", "off"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    try:
        return (host or "127.0.0.1", int(port))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT or PORT") from None


def _param(text: str) -> tuple[str, ParamValue]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    number: ParamValue = float(value) if any(c in value for c in ".eE") else int(value)
    return name.strip().upper(), number


def _fault(text: str) -> FaultSpec:
    try:
        return parse_fault(text)
    except ValueError as exc:  # argparse shows an ArgumentTypeError's own message
        raise argparse.ArgumentTypeError(str(exc)) from None


def _key(path: str) -> bytes:
    try:
        return load_key(path)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SimConfig()
    parser.add_argument("--bind", type=_endpoint, default=d.udp_bind, metavar="HOST:PORT",
                        help="companion UDP link: local address (default 127.0.0.1:14580; "
                        "'none' disables)")  # fmt: skip
    parser.add_argument("--remote", type=_endpoint, default=d.udp_remote, metavar="HOST:PORT",
                        help="companion UDP link: send here until a peer speaks "
                        "(default 127.0.0.1:14540)")  # fmt: skip
    parser.add_argument("--gcs-bind", type=_endpoint, default=d.gcs_bind, metavar="HOST:PORT",
                        help="GCS UDP link: local address (default 127.0.0.1:18570; 'none')")
    parser.add_argument("--gcs-remote", type=_endpoint, default=d.gcs_remote,
                        metavar="HOST:PORT", help="GCS UDP link: remote (default :14550)")
    parser.add_argument("--tcp", type=int, default=None, metavar="PORT",
                        help="also serve MAVLink on tcp 127.0.0.1:PORT")
    parser.add_argument("--pty", nargs="?", const="", default=None, metavar="SYMLINK",
                        help="also serve a serial pty; print its path (optionally symlinked)")
    parser.add_argument("--pty-baud", type=int, default=None, metavar="BAUD",
                        help="emulate a UART at BAUD (8N1) on the pty, e.g. 57600 for a "
                             "telemetry radio (default: as fast as the pty)")
    parser.add_argument("--profile", choices=PROFILE_NAMES, default=d.profile,
                        help="telemetry load: px4 (~430 msg/s, PX4 SIH main's onboard "
                             "set), light, heavy (~2000 msg/s)")
    parser.add_argument("--boot-s", type=float, default=d.boot_ready_s, dest="boot_ready_s",
                        metavar="S", help="seconds until it can arm, as PX4 SIH boots (3.0; "
                        "its estimate valid after 2/3 of it; 0: ready at once)")
    parser.add_argument("--sysid", type=int, default=d.system_id, help="system id (1)")
    parser.add_argument("--compid", type=int, default=d.component_id, help="component id (1)")
    parser.add_argument("--px4-version", choices=VERSION_NAMES, default=d.px4_version,
                        help="the PX4 release to behave like (default: the newest, "
                        f"{d.px4_version}); see offboardd/sim/px4_versions.py")  # fmt: skip
    acks = parser.add_mutually_exclusive_group()
    acks.add_argument("--single-ack", action="store_const", const=False, dest="double_ack",
                      help="answer DO_SET_MODE once, whatever the release (v1.17+ do)")
    acks.add_argument("--double-ack", action="store_const", const=True, dest="double_ack",
                      help="answer DO_SET_MODE twice, whatever the release (v1.16.2 does)")
    parser.add_argument("--param", type=_param, action="append", default=[],
                        metavar="NAME=VALUE", help="initial parameter value (repeatable)")
    parser.add_argument("--home", type=float, nargs=3, metavar=("LAT", "LON", "ALT"),
                        default=(d.home_lat_deg, d.home_lon_deg, d.home_alt_m),
                        help="home position (deg, deg, m AMSL)")  # fmt: skip
    parser.add_argument("--fault", type=_fault, action="append", default=[],
                        metavar="NAME[:ARG]@SECONDS",
                        help="inject a fault; names: " + "; ".join(
                            f"{k}: {v}" for k, v in FAULT_NAMES.items()))  # fmt: skip
    parser.add_argument("--signing-key", type=_key, default=None, metavar="FILE",
                        help="MAVLink 2 signing like PX4 v1.17 with a key: sign everything and "
                        "refuse unsigned or wrongly signed frames (key file as for offboardd)")
    parser.add_argument("--signing-optional", action="store_true",
                        help="with --signing-key: also accept unsigned frames")


def config_from_args(args: argparse.Namespace) -> SimConfig:
    return SimConfig(
        system_id=args.sysid, component_id=args.compid, udp_bind=args.bind,
        udp_remote=args.remote, gcs_bind=args.gcs_bind, gcs_remote=args.gcs_remote,
        tcp_port=args.tcp, pty=args.pty is not None, pty_symlink=args.pty or None,
        pty_baud=args.pty_baud,
        profile=args.profile, px4_version=args.px4_version, double_ack=args.double_ack,
        boot_ready_s=args.boot_ready_s,
        params=dict(args.param),
        home_lat_deg=args.home[0], home_lon_deg=args.home[1], home_alt_m=args.home[2],
        faults=tuple(args.fault), signing_key=args.signing_key,
        require_signing=args.signing_key is not None and not args.signing_optional,
    )  # fmt: skip


def _udp_text(label: str, bind: Endpoint | None, port: int | None,
              remote: Endpoint | None) -> str:  # fmt: skip
    if bind is None or port is None:
        return ""
    to = f"{remote[0]}:{remote[1]}" if remote else "the first peer"
    return f"{label} {bind[0]}:{port} -> {to}"


async def _serve(config: SimConfig) -> None:
    from offboardd.sim.server import SimServer  # noqa: PLC0415 (keeps --help fast)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with SimServer(config) as sim:
        where = [_udp_text("udp", config.udp_bind, sim.udp_port, config.udp_remote),
                 _udp_text("gcs udp", config.gcs_bind, sim.gcs_port, config.gcs_remote),
                 f"tcp 127.0.0.1:{sim.tcp_port}" if sim.tcp_port else "",
                 f"pty {sim.pty_path}" if sim.pty_path else ""]  # fmt: skip
        print(f"offboardd sim (PX4 {config.px4_version}): serving "
              + ", ".join(w for w in where if w), flush=True)  # fmt: skip
        await stop.wait()


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
        # unknown parameter names (for this release) fail here, not mid-run
        ParamTable(config.params, version_by_name(config.px4_version))
    except ValueError as exc:
        print(f"offboardd sim: {exc}", file=sys.stderr)
        return 2
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(config))
    except OSError as exc:
        print(f"offboardd sim: {exc.strerror or exc} (--bind and --gcs-bind choose the ports; "
              "--gcs-bind none leaves the GCS link out)", file=sys.stderr)  # fmt: skip
        return 1
    return 0
