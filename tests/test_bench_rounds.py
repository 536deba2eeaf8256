"""`--rounds`: a row per workload from its median round, and a CPU ratio judged on the
median of the rounds' own ratios (bench/rounds.py, bench/report.py). Pure: made-up rows."""

from __future__ import annotations

import dataclasses

from bench.report import markdown, stream_plan_goal, targets
from bench.rounds import ratios, representative
from bench.stats import percentile
from bench.workloads import Result, Workload

OURS = Workload("offboardd", 20.0, "px4")
MAVSDK = Workload("mavsdk", 20.0, "px4")
INFO = {"cpu": "test", "cores": "2", "python": "3", "kernel": "k", "mavsdk": "m",
        "pymavlink": "p", "aiomqtt": "a", "loadavg": "0", "date_utc": "now"}  # fmt: skip


def _row(workload: Workload, cpu_pct: float, p99_ms: float = 0.2) -> Result:
    return Result(workload, 10.0, 57.0, 20.0, 0.05, p99_ms, 0.3, 0, cpu_pct / 100, 33.0,
                  1000.0, None, None)  # fmt: skip


def _rounds(pairs: list[tuple[float, float]]) -> list[list[Result]]:
    """(MAVSDK's CPU %, ours) per round."""
    return [[_row(MAVSDK, ref), _row(OURS, mine)] for ref, mine in pairs]


def test_each_row_is_the_workloads_median_round_a_real_run() -> None:
    rounds = _rounds([(1.4, 1.30), (1.1, 1.20), (1.2, 1.40)])
    rounds[1][1] = dataclasses.replace(rounds[1][1], dev_p99_ms=0.9)  # the median round's own
    ref, ours = representative(rounds)
    assert (ref.cpu_per_s, ours.cpu_per_s) == (1.2 / 100, 1.3 / 100)
    assert ours.dev_p99_ms == 0.2  # from the round whose CPU is the median, not mixed
    assert representative(rounds[:2])[1].cpu_per_s == 1.2 / 100  # even: the lower middle one


def test_the_cpu_ratio_is_the_median_of_each_rounds_ratio() -> None:
    rounds = _rounds([(1.5, 1.05), (1.0, 1.1), (1.2, 0.9)])
    assert [round(x, 2) for x in ratios(rounds, OURS, MAVSDK)] == [0.7, 1.1, 0.75]
    assert round(percentile(ratios(rounds, OURS, MAVSDK), 50.0), 2) == 0.75
    goal = stream_plan_goal(representative(rounds), rounds)[0]
    # the median rows alone (1.05 % vs 1.2 %, from different rounds) would read 0.88x
    assert "**met**" in goal and "median of 3 rounds' ratios 0.75×" in goal, goal
    assert "(0.70×, 1.10×, 0.75×)" in goal and "1.05 % vs 1.20 %: 0.88×" in goal


def test_one_round_is_judged_on_its_rows_and_shows_no_rounds_table() -> None:
    rounds = _rounds([(1.2, 1.3)])
    rows = representative(rounds)
    assert "**MISSED**" in targets(rows, rounds)[0]
    text = markdown(rows, INFO, 10.0, rounds)
    assert "CPU over the rounds" not in text and "1.30 % vs 1.20 %: 1.08×" in text


def test_several_rounds_list_every_rounds_cpu() -> None:
    rounds = _rounds([(1.4, 1.3), (1.1, 1.2)])
    text = markdown(representative(rounds), INFO, 10.0, rounds)
    assert "2 rounds" in text
    assert "| offboardd-20hz-px4 | 1.30 / 1.20 | 1.20–1.30 |" in text


def test_timing_targets_are_judged_on_the_median_round_and_missed_ticks_on_any() -> None:
    heavy = Workload("offboardd", 50.0, "heavy")
    rounds = [[_row(heavy, 1.8, p99)] for p99 in (0.152, 1.061, 0.415)]
    rows = representative(rounds)
    assert rows[0].dev_p99_ms == 1.061  # the median round by CPU (all 1.8 %: the lower middle)
    line = targets(rows, rounds)[3]
    assert "**met**" in line and "0 missed in 3 rounds, median p99 0.415 ms" in line, line
    rounds[2][0] = dataclasses.replace(rounds[2][0], missed_ticks=1)
    assert "**MISSED**" in targets(representative(rounds), rounds)[3]


def test_a_verdict_over_the_rounds_says_when_the_host_stole_in_any_of_them() -> None:
    rounds = _rounds([(1.4, 1.3), (1.1, 1.2), (1.2, 1.4)])
    rounds[2][1] = dataclasses.replace(rounds[2][1], steal=0.2)  # not the median round
    goal = stream_plan_goal(representative(rounds), rounds)[0]
    assert "not trustworthy: the host stole 20 %" in goal, goal


def test_the_plan_off_row_is_its_own_workload_and_is_compared_with_the_plan_on() -> None:
    off = Workload("offboardd", 20.0, "px4", plan="px4")
    assert off.name == "offboardd-20hz-px4-plan-off" and OURS.name == "offboardd-20hz-px4"
    assert off.daemon_settings() == ('mavlink.streams = {plan = "px4"}',)
    assert OURS.daemon_settings() == ()
    rounds = [[_row(MAVSDK, ref), dataclasses.replace(_row(off, plan_off), load_msg_s=428.0),
               _row(OURS, mine)]
              for ref, mine, plan_off in [(1.2, 1.0, 1.25), (1.3, 1.1, 1.1), (1.0, 1.2, 1.5)]]
    rows = representative(rounds)
    goal = stream_plan_goal(rows, rounds)
    # the goal is judged on the plan-on row, not on the plan-off one listed before it
    assert "median of 3 rounds' ratios 0.85×" in goal[0], goal[0]
    assert goal[-1].startswith("- the plan off (`plan = \"px4\"`, PX4's streams left alone): "
                               "428 msg/s at the daemon; CPU with the plan against without: "
                               "median of 3 rounds' ratios 0.80× (0.80×, 1.00×, 0.80×); "
                               "the rows above 1.10 % vs 1.25 %: 0.88×"), goal[-1]
    without = [[r[0], r[2]] for r in rounds]
    assert "plan off" not in "".join(stream_plan_goal(representative(without), without))
