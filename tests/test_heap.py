"""The daemon's start-up heap frozen out of the collector's later walks (offboardd/heap.py).

In a child interpreter: freezing is for the process, and pytest's own objects must not be.
"""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = """
import gc, json
import offboardd.runtime  # what `offboardd run` has loaded by the time it freezes
from offboardd import heap
tracked = len(gc.get_objects())
frozen = heap.freeze_start_up()
class Cycle:
    pass
a, b = Cycle(), Cycle()
a.other, b.other = b, a  # made after the freeze: still the collector's
del a, b
print(json.dumps({"tracked": tracked, "objects": frozen.objects,
                  "collect_ms": frozen.collect_ms, "walked": len(gc.get_objects()),
                  "freed": gc.collect()}))
"""


def test_freeze_leaves_later_collections_only_what_came_after() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         check=True, timeout=60)
    child = json.loads(out.stdout)
    assert child["objects"] > 10_000  # modules, the dialect, settings: out of every walk
    assert child["objects"] >= child["tracked"] * 0.9  # (start-up's garbage was collected)
    assert child["collect_ms"] >= 0.0
    assert child["walked"] < 100  # what a full collection walks now
    assert child["freed"] >= 2  # a cycle made after the freeze is still collected
