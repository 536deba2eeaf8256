"""The soak harness (bench/soak.py) for a short run: it flies cycles with disturbances
against the real daemon process, samples it, and the daemon's memory, fds and threads stay
flat. The hour-long figures are in bench/soak-results.md (`make soak SOAK_SECONDS=3600`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import report, soak

pytestmark = pytest.mark.integration


@pytest.mark.timeout(240)
async def test_a_short_soak_flies_disturbed_cycles_and_stays_flat(tmp_path: Path) -> None:
    result = await soak(70.0, tmp_path)
    assert result.cycles >= 2 and result.command_errors == 0, result
    assert len(result.samples) >= 20
    failed = {name: text for name, (met, text) in result.verdicts().items() if not met}
    assert not failed, (failed, report(result))
