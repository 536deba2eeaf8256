"""`--rounds N`: every workload N times, in turn, and one figure per workload from them.

Why: on this machine a single window of the same peer moves by about ±10 % from run to
run (MAVSDK's CPU read 1.12 to 1.46 % within twenty minutes, bench/stream-plan.md), more
than the differences the goals judge. Rounds interleave the peers, so each is measured
across the same stretch of the machine's life. Each workload's row is then its median
round by CPU: a real run, whose columns belong together (not a mix of medians). A CPU
ratio against MAVSDK is judged on the median of the rounds' own ratios: the two runs of
a round are a minute or two apart, those of different rounds many minutes.

Pure: takes results, measures nothing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from bench.workloads import Result, Workload


def representative(rounds: Sequence[Sequence[Result]]) -> list[Result]:
    """Per workload (in the first round's order), its median round by CPU; with an even
    number of rounds the lower of the two middle ones (no figure made up between them)."""
    out = []
    for first in rounds[0]:
        runs = sorted(cpu_runs(rounds, first.workload), key=lambda r: r.cpu_per_s)
        out.append(runs[(len(runs) - 1) // 2])
    return out


def cpu_runs(rounds: Sequence[Sequence[Result]], workload: Workload) -> list[Result]:
    """The workload's run in each round, in round order."""
    return [r for results in rounds for r in results if r.workload == workload]


def cpu_ratios(rounds: Sequence[Sequence[Result]], ours: Workload,
               reference: Workload) -> list[float]:  # fmt: skip
    """Each round's CPU of `ours` over that of `reference` (rounds missing either, or with
    no CPU measured for the reference, are left out)."""
    ratios = []
    for results in rounds:
        mine = next((r for r in results if r.workload == ours), None)
        ref = next((r for r in results if r.workload == reference), None)
        if mine is not None and ref is not None and ref.cpu_per_s > 0:
            ratios.append(mine.cpu_per_s / ref.cpu_per_s)
    return ratios


def median_ratio(ratios: Sequence[float]) -> float:
    return float(statistics.median(ratios)) if ratios else float("nan")
