"""`--rounds N`: every workload N times, in turn, and one figure per workload from them.

Why: on this machine a single window of the same peer moves by about ±10 % from run to
run (MAVSDK's CPU read 1.12 to 1.46 % within twenty minutes, bench/stream-plan.md), more
than the differences the goals judge. Rounds interleave the peers, so each is measured
across the same stretch of the machine's life. Each workload's row is then its median
round by CPU: a real run, whose columns belong together (not a mix of medians). A target
is judged on the median over the rounds of its own figure, and a ratio against MAVSDK
(CPU, p99) on the median of the rounds' own ratios: the two runs of a round are a minute
or two apart, those of different rounds many minutes.

Pure: takes results, measures nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.workloads import Result, Workload


def representative(rounds: Sequence[Sequence[Result]]) -> list[Result]:
    """Per workload (in the first round's order), its median round by CPU; with an even
    number of rounds the lower of the two middle ones (no figure made up between them)."""
    out = []
    for first in rounds[0]:
        runs = sorted(runs_of(rounds, first.workload), key=lambda r: r.cpu_per_s)
        out.append(runs[(len(runs) - 1) // 2])
    return out


def runs_of(rounds: Sequence[Sequence[Result]], workload: Workload) -> list[Result]:
    """The workload's run in each round, in round order."""
    return [r for results in rounds for r in results if r.workload == workload]


def ratios(rounds: Sequence[Sequence[Result]], ours: Workload, reference: Workload,
           figure: str = "cpu_per_s") -> list[float]:  # fmt: skip
    """Each round's `figure` (a Result field) of `ours` over that of `reference` (rounds
    missing either, or with nothing measured for the reference, are left out)."""
    out = []
    for results in rounds:
        mine = next((r for r in results if r.workload == ours), None)
        ref = next((r for r in results if r.workload == reference), None)
        if mine is not None and ref is not None and float(getattr(ref, figure)) > 0:
            out.append(float(getattr(mine, figure)) / float(getattr(ref, figure)))
    return out
