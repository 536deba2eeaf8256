"""What the daemon loads: heavy modules only when a feature needs them (issue 18's
peak-RSS goal; the figures are in bench/README.md)."""

from __future__ import annotations

import subprocess
import sys


def test_a_daemon_that_only_streams_never_loads_ruckig() -> None:
    """ruckig and its C++ runtime cost 2.1 MB of RSS: loaded on the first planned motion
    (tests/core/test_motion.py plans many), not by the daemon's imports."""
    probe = ("import sys, offboardd.runtime_cli, offboardd.runtime; "
             "print('ruckig' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"
