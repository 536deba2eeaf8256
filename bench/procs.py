"""Child processes of the benchmark and what the kernel says they cost.

`Children` starts processes (their own session, SIGTERM to them if the benchmark dies:
PR_SET_PDEATHSIG) and stops them newest first, SIGTERM then SIGKILL. `cpu_s` reads
the process's CPU-time clock (user + system, all threads, to the ns), `wakeups` its
threads' voluntary context switches, `peak_rss_mb` /proc/PID/status (VmHWM),
`machine_cpu_ticks` the machine's CPU steal (a VM's host taking its CPUs); two `Usage`s
(wall clock, CPU time, wake-ups at an instant) bracket a measuring window. No MAVLink or
MQTT here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_CLOCK_TICKS_HZ = os.sysconf("SC_CLK_TCK")
_CPUCLOCK_SCHED = 2  # <linux/posix-timers.h>: the scheduler's ns count, not ticks
_STOP_TIMEOUT_S = 5.0


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mosquitto_binary() -> str:
    found = shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None
    )
    if found is None:
        raise RuntimeError("mosquitto is not installed: run `make deps` (or apt-get install it)")
    return found


def cpu_s(pid: int) -> float:
    """CPU time (user + system, every thread, exited ones included) the process used so
    far, in seconds, to the nanosecond: the kernel's own account of the process's run time,
    read through its CPU-time clock. /proc/PID/stat counts in clock ticks (10 ms here): over
    a 10 s window the difference of two counts is off by up to 0.1 % of a core, against
    figures of ~1.2 %, so a comparison could move by up to ±8 % on rounding alone."""
    try:
        return time.clock_gettime(_process_cpu_clock(pid))
    except OSError:  # (a kernel without per-process CPU clocks: the tick count)
        return ticks_cpu_s(pid)


def ticks_cpu_s(pid: int) -> float:
    """The same from /proc/PID/stat: utime + stime, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS_HZ  # utime, stime (proc(5))


def _process_cpu_clock(pid: int) -> int:
    """clock_getcpuclockid(3) for another process, which Python does not offer: Linux
    encodes the process's scheduler clock as (~pid << 3) | CPUCLOCK_SCHED (linux/posix-
    timers.h: MAKE_PROCESS_CPUCLOCK), and clock_gettime(2) reads it for any visible pid."""
    return (~pid << 3) | _CPUCLOCK_SCHED


def wakeups(pid: int) -> int:
    """How many times the process's threads have gone to sleep (and so woken) so far: the
    sum of their voluntary context switches. What a wake-up costs on a VM is most of what
    a process that sleeps between ticks costs (bench/stream-plan.md, "Wake-ups against
    MAVSDK's"). Live threads only: one that exits takes its count with it."""
    total = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        with contextlib.suppress(OSError):  # (a thread that exited meanwhile)
            for line in status.read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


@dataclass(frozen=True)
class Usage:
    """What a process had used by one instant: the wall clock (ns), its CPU time (s) and
    its wake-ups. Two of them bracket a measuring window."""

    t_ns: int
    cpu_s: float
    wakeups: int

    @classmethod
    def of(cls, pid: int) -> Usage:
        return cls(time.time_ns(), cpu_s(pid), wakeups(pid))

    def rates_until(self, later: Usage) -> tuple[float, float]:
        """(CPU seconds, wake-ups) per wall second from this instant to `later`."""
        window_s = (later.t_ns - self.t_ns) / 1e9
        return (later.cpu_s - self.cpu_s) / window_s, (later.wakeups - self.wakeups) / window_s


def peak_rss_mb(pid: int) -> float:
    """VmHWM: the resident set's high-water mark, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmHWM for pid {pid}")


def machine_cpu_ticks() -> tuple[int, int]:
    """(steal, total) clock ticks of the whole machine so far, from /proc/stat's cpu line.

    Steal is time the hypervisor ran something else while this VM wanted the CPU: the peer
    is frozen meanwhile, so timing measured across it is the host's, not the peer's."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    steal = fields[7] if len(fields) > 7 else 0  # user nice system idle iowait irq softirq steal
    return steal, sum(fields[:8])


def steal_fraction(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


class StealWatch:
    """The machine's CPU steal over a stretch of time: on average, and its worst
    `period_s` (a 40 ms freeze hides in a 20 s average of 0.5 %). A thread samples
    /proc/stat; use as a context manager."""

    def __init__(self, period_s: float = 0.2) -> None:
        self.period_s = period_s
        self.average = 0.0
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._first = machine_cpu_ticks()

    def __enter__(self) -> StealWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.average = steal_fraction(self._first, machine_cpu_ticks())

    def _sample(self) -> None:
        last = self._first
        while not self._stop.wait(self.period_s):
            now = machine_cpu_ticks()
            self.peak = max(self.peak, steal_fraction(last, now))
            last = now


def _die_with_parent() -> None:  # in the child, between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Children:
    """Processes started for one workload (or the whole run); all stopped on exit."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[str]] = []
        self._argv: dict[int, tuple[list[str], Path | None]] = {}  # pid -> how it started

    def __enter__(self) -> Children:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        self.stop_all()

    def start(self, argv: list[str], *, ready: str | None = None, timeout_s: float = 20.0,
              cwd: Path | None = None) -> subprocess.Popen[str]:  # fmt: skip
        """Start argv (in `cwd`); if `ready` is given, wait for a stdout line containing it."""
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, text=True, cwd=cwd,
            stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent,  # noqa: PLW1509 (no threads here)
        )  # fmt: skip
        self._procs.append(proc)
        self._argv[proc.pid] = (list(argv), cwd)
        if ready is not None:
            self._wait_line(proc, ready, timeout_s)
        return proc

    @staticmethod
    def _wait_line(proc: subprocess.Popen[str], ready: str, timeout_s: float) -> None:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if ready in line:
                return
            if not line and proc.poll() is not None:
                raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} before {ready!r}")
        raise RuntimeError(f"{proc.args!r} did not print {ready!r} within {timeout_s} s")

    def stop(self, proc: subprocess.Popen[str]) -> int:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        with contextlib.suppress(ValueError):
            self._procs.remove(proc)
        self._argv.pop(proc.pid, None)
        return proc.returncode

    def restart(self, proc: subprocess.Popen[str], pause_s: float = 0.0) -> subprocess.Popen[str]:
        """Stop `proc` and start it again as it was started, after `pause_s` (a broker
        restart in the soak run)."""
        argv, cwd = self._argv.pop(proc.pid)
        self.stop(proc)
        time.sleep(pause_s)
        return self.start(argv, cwd=cwd)

    def stop_all(self) -> None:
        for proc in reversed(list(self._procs)):
            self.stop(proc)
