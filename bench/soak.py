"""The soak run (`make soak`, issue 15): offboardd flown for a long time through everything
that goes wrong on a real vehicle, while its memory, file descriptors and threads are read.

One private mosquitto and `offboardd run` as child processes, the built-in sim and a
commander (OffboardClient) in this process. A cycle: engage + arm, a few seconds of
setpoints, then one disturbance in turn (hold and land; a broker restart; an FC link
drop of 4 s; a GCS mode change; the commander going silent so the lease lapses; an FC
reboot), and back to flying. Every few seconds the daemon's VmRSS, open fds and threads
are sampled, and its asyncio tasks as its `state` reports them; the stream's missed ticks
are summed over the flying parts. Verdicts: RSS within 2 MB of its level after the warm-up
(the first fifth of the run), fds, threads and tasks flat, missed ticks no more than the
host's CPU steal explains (<= max(1 %, 2 x steal)), the daemon alive at the end. Writes
`bench/soak-results.md` (and .json) unless told otherwise.

    python -m bench.soak --seconds 3600          # the one-hour figures in bench/
    python -m bench.soak --seconds 60 --out /tmp # what the test suite runs (shorter)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.procs import Children, free_udp_port, machine_cpu_ticks, steal_fraction
from bench.run import start_broker
from offboardd.client import OffboardClient
from offboardd.core.setpoints import PositionNed
from offboardd.mqtt.client_types import ClientError
from offboardd.sim import SimConfig, SimServer

VEHICLE = "soak"
SAMPLE_PERIOD_S = 2.0
RSS_BUDGET_KB = 2048  # issue 15: within 2 MB after warm-up


@dataclass
class Sample:
    t_s: float
    rss_kb: int
    fds: int
    threads: int
    tasks: int | None = None  # the daemon's asyncio tasks, from its retained state


@dataclass
class SoakResult:
    seconds: float
    cycles: int = 0
    disturbances: dict[str, int] = field(default_factory=dict)
    command_errors: int = 0
    # why each failed commander call failed, by disturbance: "ExceptionType: message" -> count
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    daemon_alive: bool = False
    steal: float = 0.0
    missed_ticks: int = 0  # stream ticks missed while flying, summed over the cycles
    ticks: int = 0  # setpoints sent while flying, summed

    def after_warmup(self) -> list[Sample]:
        cut = self.seconds / 5
        return [s for s in self.samples if s.t_s >= cut] or self.samples

    def verdicts(self) -> dict[str, tuple[bool, str]]:
        tail = self.after_warmup()
        if not tail:
            return {"samples": (False, "no samples")}
        rss = [s.rss_kb for s in tail]
        fds = [s.fds for s in tail]
        threads = [s.threads for s in tail]
        tasks = [s.tasks for s in tail if s.tasks is not None]
        missed = self.missed_ticks / max(1, self.ticks + self.missed_ticks)
        return {
            "tasks flat": (not tasks or max(tasks) - tasks[0] <= 2,
                           f"{tasks[0]} -> max {max(tasks)}" if tasks else "not reported"),
            "missed ticks": (missed <= max(0.01, 2 * self.steal),
                             f"{self.missed_ticks} of {self.ticks + self.missed_ticks} "
                             f"({missed:.2%}; CPU steal {self.steal:.1%})"),
            "rss flat": (max(rss) - rss[0] <= RSS_BUDGET_KB,
                         f"{rss[0]} -> max {max(rss)} kB after warm-up (budget +{RSS_BUDGET_KB})"),
            "fds flat": (max(fds) - fds[0] <= 2, f"{fds[0]} -> max {max(fds)}"),
            "threads flat": (max(threads) - threads[0] <= 1,
                             f"{threads[0]} -> max {max(threads)}"),
            "daemon alive": (self.daemon_alive, "still running at the end"),
        }


def _proc_sample(pid: int, t_s: float) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {line.split(":")[0]: line.split(":", 1)[1].split() for line in status}
    return Sample(t_s, int(fields["VmRSS"][0]), len(os.listdir(f"/proc/{pid}/fd")),
                  int(fields["Threads"][0]))


class Soak:
    def __init__(self, sim: SimServer, broker_restart: Callable[[], None],
                 result: SoakResult) -> None:
        self.sim, self.restart_broker, self.result = sim, broker_restart, result
        self.last_tasks: int | None = None  # the daemon's asyncio tasks, last seen in `state`

    async def _client_call(self, call: Callable[[OffboardClient], Awaitable[object]],
                           port: int, disturbance: str) -> bool:
        try:
            async with OffboardClient("127.0.0.1", port, VEHICLE) as c:
                await call(c)
            return True
        except (ClientError, TimeoutError, OSError) as exc:
            self.result.command_errors += 1
            why = f"{type(exc).__name__}: {exc}"[:160]
            kinds = self.result.failures.setdefault(disturbance, {})
            kinds[why] = kinds.get(why, 0) + 1
            return False

    async def fly_cycle(self, port: int, disturbance: str) -> None:
        async def mission(c: OffboardClient) -> None:
            await c.wait_for_state(lambda s: s.get("com_of_loss_t_s") is not None
                                   and s.get("estimates", {}).get("local_position")
                                   and s.get("phase") in ("idle", "failsafe", "preempted"), 30)
            await c.engage(PositionNed(0.0, 0.0, -3.0), arm=True)
            before = c.state or {}
            for i in range(40):  # 4 s of a mission script's setpoints at 10 Hz
                await c.setpoint(PositionNed(0.5 * (i % 4), 0.0, -3.0))
                await asyncio.sleep(0.1)
            after = c.state or {}
            self.result.missed_ticks += max(0, after.get("missed_ticks", 0)
                                            - before.get("missed_ticks", 0))
            self.result.ticks += max(0, after.get("setpoints_sent", 0)
                                     - before.get("setpoints_sent", 0))
            self.last_tasks = after.get("asyncio_tasks")
            await self._disturb(c, disturbance)

        await self._client_call(mission, port, disturbance)
        self.result.disturbances[disturbance] = self.result.disturbances.get(disturbance, 0) + 1
        self.result.cycles += 1

    async def _disturb(self, c: OffboardClient, what: str) -> None:
        if what == "hold and land":
            await c.hold()
            await c.land()
            await self.sim.wait_until(lambda: not self.sim.vehicle.armed, 30)
        elif what == "broker restart":
            await asyncio.to_thread(self.restart_broker)
        elif what == "fc link drop":
            self.sim.drop_link()
            await asyncio.sleep(4.0)
            self.sim.restore_link()
        elif what == "gcs mode change":
            self.sim.pilot_mode_switch("AUTO.LOITER")
        elif what == "lease lapse":
            c._holding_lease = False  # the script hangs: its lease loop stops (client.py)
            await asyncio.sleep(4.0)
        elif what == "fc reboot":
            self.sim.reboot()
        await asyncio.sleep(1.0)
        with contextlib.suppress(ClientError, TimeoutError):
            await c.land()  # whatever happened, end the cycle on the ground
        await self.sim.wait_until(lambda: not self.sim.vehicle.armed, 40)


DISTURBANCES = ("hold and land", "broker restart", "fc link drop", "gcs mode change",
                "lease lapse", "fc reboot")


async def soak(seconds: float, workdir: Path) -> SoakResult:
    result = SoakResult(seconds)
    daemon_port = free_udp_port()
    with Children() as children:
        broker_port, broker_proc = start_broker(children, workdir)
        broker = [broker_proc]  # replaced on every restart

        def restart_broker() -> None:
            # a second without a broker: the daemon's reconnect loop runs
            broker[0] = children.restart(broker[0], pause_s=1.0)
            time.sleep(0.5)

        config = workdir / "offboardd.toml"
        config.write_text(f'[mavlink]\nurl = "udpin://127.0.0.1:{daemon_port}"\n'
                          'signing_timestamp_file = ""\n'
                          f'[mqtt]\nhost = "127.0.0.1"\nport = {broker_port}\n'
                          f'vehicle_id = "{VEHICLE}"\n[log]\nlevel = "warning"\n')
        daemon = children.start([sys.executable, "-m", "offboardd", "run", "--config",
                                 str(config)])
        sim_config = SimConfig(udp_bind=("127.0.0.1", 0),
                               udp_remote=("127.0.0.1", daemon_port), gcs_bind=None,
                               profile="px4", params={"COM_OBL_RC_ACT": 5})
        async with SimServer(sim_config) as sim:
            t0 = time.monotonic()
            steal_before = machine_cpu_ticks()

            runner = Soak(sim, restart_broker, result)

            async def sampler() -> None:
                while True:
                    sample = _proc_sample(daemon.pid, time.monotonic() - t0)
                    sample.tasks = runner.last_tasks
                    result.samples.append(sample)
                    await asyncio.sleep(SAMPLE_PERIOD_S)

            sampling = asyncio.create_task(sampler())
            k = 0
            while time.monotonic() - t0 < seconds:
                await runner.fly_cycle(broker_port, DISTURBANCES[k % len(DISTURBANCES)])
                k += 1
            sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampling
            result.steal = steal_fraction(steal_before, machine_cpu_ticks())
            result.daemon_alive = daemon.poll() is None
    return result


def report(result: SoakResult) -> str:
    lines = [f"# Soak run: {result.seconds:.0f} s", "",
             f"Machine: {platform.node()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; CPU steal during the run {result.steal:.1%}.", "",
             f"{result.cycles} cycles; disturbances: "
             + ", ".join(f"{k} x{v}" for k, v in result.disturbances.items())
             + f"; commander calls that failed: {result.command_errors}.", "",
             "| verdict | met | figures |", "|---|---|---|"]
    for name, (met, text) in result.verdicts().items():
        lines.append(f"| {name} | {'yes' if met else '**no**'} | {text} |")
    if result.failures:
        lines += ["", "Failed commander calls, by disturbance:", ""]
        for disturbance, kinds in result.failures.items():
            for why, n in kinds.items():
                lines.append(f"- {disturbance} x{n}: `{why}`")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    workdir = args.out / "soak-work"
    workdir.mkdir(exist_ok=True)
    result = asyncio.run(soak(args.seconds, workdir))
    text = report(result)
    (args.out / "soak-results.md").write_text(text)
    (args.out / "soak-results.json").write_text(json.dumps(asdict(result), indent=1))
    print(text)
    return 0 if all(met for met, _ in result.verdicts().values()) else 1


if __name__ == "__main__":
    sys.exit(main())
