"""bench/motion.py cannot rot: a shrunken run produces every figure (never judged here:
the figures are the benchmark's, bench/motion-results.md), and the tracking helper."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from bench.tracking import percentile, polyline_distance_m, tracking_errors_m

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_tracking_is_the_distance_to_what_was_sent_just_before() -> None:
    line = [(0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (10.0, 10.0, 0.0)]
    assert polyline_distance_m((5.0, 1.0, 0.0), line) == 1.0
    assert math.isclose(polyline_distance_m((11.0, 11.0, 0.0), line), math.sqrt(2))
    sent = [(float(t), (float(t), 0.0, 0.0)) for t in range(20)]  # 1 m/s north
    flown = [(10.0, (9.5, 0.3, 0.0)), (15.0, (2.0, 0.0, 0.0))]  # the second: 13 m behind
    errors = tracking_errors_m(flown, sent, window_s=3.0)
    assert errors[0] == 0.3 and errors[1] == 10.0  # judged against the last 3 s only
    assert percentile(errors, 0.5) == 10.0


def test_a_short_motion_bench_produces_every_figure(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.motion", "--window-s", "0.5", "--scale", "0.3",
         "--out", str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=240,
        check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = json.loads((tmp_path / "motion-results.json").read_text())
    for key in ("path_max_error_m", "orbit_p95_error_m", "path_max_speed_m_s",
                "plan_500_waypoints_ms", "fence_check_500_waypoints_ms", "cpu_delta_pct"):
        assert isinstance(figures[key], float) and math.isfinite(figures[key]), key
    assert "CPU cost of a running motion" in (tmp_path / "motion-results.md").read_text()
