"""bench/fence.py for a few ticks, so it cannot rot: every row comes out (never how fast)."""

from __future__ import annotations

from pathlib import Path

from bench.fence import FLIGHTS, main


def test_a_short_fence_bench_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "fence-results.md"
    main(["--ticks", "40", "--out", str(out)])
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ") and
            line.split("|")[1].strip().isdigit()]
    assert len(rows) == 3 * len(FLIGHTS)
