"""The fuzz budget adds up to what issue 8 asks, and every budgeted test exists."""

from __future__ import annotations

from pathlib import Path

from .budget import BUDGET, END_TO_END, MIN_END_TO_END_CASES, MIN_TOTAL_CASES


def test_budget_meets_the_issue() -> None:
    assert sum(BUDGET.values()) >= MIN_TOTAL_CASES
    assert sum(BUDGET[name] for name in END_TO_END) >= MIN_END_TO_END_CASES


def test_every_budgeted_test_exists() -> None:
    sources = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    for name in BUDGET:
        assert f"def {name}(" in sources, name
