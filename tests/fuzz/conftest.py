"""Fuzz fixtures: a per-test case counter, recorded so the run shows the budget.

`cases` counts what one test ran and checks its budget at the end (budget.py). Every
count is also attached to the test report (`fuzz_cases` user property), which
pytest-xdist carries back to the controller, so the terminal summary can print the
total whether or not the run is distributed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fuzz.budget import END_TO_END, MIN_END_TO_END_CASES, MIN_TOTAL_CASES, Cases


@pytest.fixture
def cases(request: pytest.FixtureRequest,
          record_property: Any) -> Iterator[Cases]:
    counter = Cases(request.node.originalname)
    yield counter
    record_property("fuzz_cases", counter.count)
    for what, n in counter.notes.items():
        record_property(f"fuzz_{what}", n)
    counter.check()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    total = end_to_end = 0
    notes: dict[str, int] = {}
    reports = [r for group in terminalreporter.stats.values() for r in group]
    for report in reports:
        if getattr(report, "when", "") != "teardown":
            continue
        props = dict(getattr(report, "user_properties", []))
        n = int(props.get("fuzz_cases", 0))
        for key, value in props.items():
            what = key.removeprefix("fuzz_")
            if key.startswith("fuzz_") and what != "cases":
                notes[what] = notes.get(what, 0) + int(value)
        total += n
        if report.nodeid.split("::")[-1] in END_TO_END:
            end_to_end += n
    if total:
        terminalreporter.write_line(
            f"fuzz budget: {total} cases run ({end_to_end} end to end); "
            f"required {MIN_TOTAL_CASES} ({MIN_END_TO_END_CASES} end to end)"
        )
        if notes:
            terminalreporter.write_line(
                "fuzz outcomes: " + ", ".join(f"{k}: {v}" for k, v in sorted(notes.items())))
