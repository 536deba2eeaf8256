"""`offboardd demo` (what `make demo` runs): a private broker, the simulated vehicle and the
daemon, a short mission flown through MQTT with live progress, then a summary and a PNG.

    offboardd demo [--out demo-out] [--mission square]

Everything it starts is stopped before it exits, also on failure, Ctrl-C or SIGTERM; the
PIDs are printed at start and stop so that can be checked. The output directory gets
`flight.png`, `summary.json` (legs, times, paths), `flights/` (the daemon's own recording
of the flight: `offboardd log --dir OUT/flights show`) and `logs/` (each process's output and
the generated configuration files). Exit status: 0 mission flown and plotted, 1 mission
failed, 2 cannot start (what is missing is printed), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path
from types import FrameType

from offboardd.client import OffboardClient
from offboardd.demo.plot import INSTALL_HINT, plotting_available, write_flight_png
from offboardd.demo.processes import DemoError, Deployment
from offboardd.recorder.store import list_flights
from offboardd.scenario.display import ProgressDisplay
from offboardd.scenario.mission import MISSIONS, Mission
from offboardd.scenario.report import Summary
from offboardd.scenario.runner import ScenarioRunner

EXIT_OK, EXIT_FAILED, EXIT_CANNOT_START, EXIT_INTERRUPTED = 0, 1, 2, 130


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("demo-out"),
                        help="output directory for flight.png, summary.json, logs/ "
                             "(default demo-out)")
    parser.add_argument("--mission", choices=sorted(MISSIONS), default="square")
    parser.add_argument("--profile", choices=["px4", "light"], default="px4",
                        help="the sim's telemetry: px4 (~400 msg/s, as SITL sends) or light")


async def _fly(deployment: Deployment, mission: Mission, display: ProgressDisplay) -> Summary:
    # SIGTERM and Ctrl-C cancel the flight (the runner then asks for a landing) straight
    # from the loop: not through SIGINT, which a parent may have set to be ignored (a
    # shell's background job: CI ran the demo's SIGTERM test so, and it flew on).
    loop, flight = asyncio.get_running_loop(), asyncio.current_task()
    assert flight is not None
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, flight.cancel)
    client = OffboardClient("127.0.0.1", deployment.broker_port, deployment.vehicle_id)
    async with client:
        return await ScenarioRunner(client, mission, on_progress=display).run()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # Outside the flight's loop (starting, stopping) SIGTERM and SIGINT are a Ctrl-C: the
    # deployment stops everything it started.
    raise KeyboardInterrupt


def _say(text: str) -> None:
    print(f"demo: {text}", flush=True)


def main(args: argparse.Namespace) -> int:
    if not plotting_available():
        print(f"demo: {INSTALL_HINT}", file=sys.stderr)
        return EXIT_CANNOT_START
    mission = MISSIONS[args.mission]
    out: Path = args.out
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _interrupt)
    display = ProgressDisplay(sys.stdout)
    summary: Summary | None = None
    try:
        with Deployment(out / "logs", profile=args.profile,
                        flights_dir=out / "flights") as deployment:
            _say("starting a private mosquitto, the simulated vehicle and the daemon")
            deployment.start()
            for child in deployment.children:
                _say(f"started {child.name} (pid {child.pid}), output in {child.log_path}")
            _say(f"broker 127.0.0.1:{deployment.broker_port}, vehicle {deployment.vehicle_id}; "
                 f"flying {mission.name!r}: {', '.join(leg.name for leg in mission.legs)}")
            try:
                summary = asyncio.run(_fly(deployment, mission, display))
            except asyncio.CancelledError:
                raise KeyboardInterrupt from None
            finally:
                for sig in (signal.SIGTERM, signal.SIGINT):  # the loop's handlers are gone
                    signal.signal(sig, _interrupt)
                display.close()
                for child in deployment.stop():
                    _say(f"stopped {child.name} (pid {child.pid}, "
                         f"exit {child.process.returncode})")
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return EXIT_CANNOT_START
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started is stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _report(summary, out)


def _report(summary: Summary, out: Path) -> int:
    print("\n".join(summary.lines()), flush=True)
    (out / "summary.json").write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    png = write_flight_png(summary, out / "flight.png")
    _say(f"wrote {png} (flown vs commanded path) and {out / 'summary.json'}")
    _say_recorded(out / "flights")
    return EXIT_OK if summary.ok else EXIT_FAILED


def _say_recorded(root: Path) -> None:
    """The daemon's own record of the flight (its recorder, issue 17)."""
    flights = list_flights(root, limit=1)
    if not flights:
        _say(f"the daemon recorded no flight in {root}")
        return
    s = flights[0].summary
    _say(f"the daemon recorded the flight in {flights[0].folder} ({s.duration_s:.0f} s, "
         f"max {s.max_altitude_m:.1f} m, {s.commands} commands; tlog + journal): "
         f"`offboardd log --dir {root} show` or `... plot`")
