"""The benchmark's CPU account of another process (bench/procs.py): to the nanosecond,
every thread counted, and in agreement with the kernel's tick count; its wake-ups, every
thread's."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.procs import cpu_s, ticks_cpu_s, wakeups

_BUSY = """
import threading, time
def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
worker = threading.Thread(target=spin, args=(0.3,))
worker.start()
spin(0.2)
worker.join()  # an exited thread's time still counts
print("done", flush=True)
time.sleep(30)
"""


def test_cpu_s_counts_every_thread_to_the_nanosecond() -> None:
    child = subprocess.Popen([sys.executable, "-c", _BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        first, second = cpu_s(child.pid), cpu_s(child.pid)
        ticks = ticks_cpu_s(child.pid)
        time.sleep(0.05)  # the child sleeps: its account does not move
        assert cpu_s(child.pid) - second < 0.005
    finally:
        child.kill()
        child.wait()
    assert 0.5 <= first < 0.5 + 1.0  # both threads' spins, plus the interpreter's start
    assert first != round(first, 2)  # finer than the 10 ms clock tick
    assert abs(first - ticks) <= 0.02 + 0.01 * first  # the kernel's tick count agrees
    assert second >= first


_SLEEPER = """
import sys, threading, time
go, done = threading.Event(), threading.Event()
def sleeper():
    go.wait()
    for _ in range(40):
        time.sleep(0.002)
    done.set()
    time.sleep(30)  # alive: its count stays in the account
threading.Thread(target=sleeper, daemon=True).start()
print("ready", flush=True)
sys.stdin.readline()
go.set()
done.wait()
print("done", flush=True)
time.sleep(30)
"""


def test_wakeups_counts_every_threads_sleeps() -> None:
    child = subprocess.Popen([sys.executable, "-c", _SLEEPER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.05)  # both threads asleep: the main one on stdin
        before = wakeups(child.pid)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        after = wakeups(child.pid)
    finally:
        child.kill()
        child.wait()
    # the worker's 40 sleeps, the main thread's read and wait: a few more, never fewer
    assert 40 <= after - before <= 40 + 10
