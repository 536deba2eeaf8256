"""Keep CPython's cycle collector from stalling the control loop for long.

A full collection walks every object the collector tracks, and the loop waits for it: the
daemon's start-up (modules, the generated dialect, settings, the engine) leaves ~33,000,
and a full collection of them took 7-16 ms on the bench's VM (a Raspberry Pi is slower):
at 50 Hz, a late tick. CPython starts one when enough objects have outlived the younger
collections. The daemon makes few such objects (none came in 150 s of hover, nor in 30 s
of MQTT setpoints at 20/s; bench/stream-plan.md, "The collector's pauses"), but a long
flight may see one, at a moment nobody chooses.

So, once start-up is over, its garbage is collected and every object still alive is
frozen: moved where no later collection looks (`gc.freeze`). A full collection then walks
what was made since: 0.2-0.3 ms. Frozen objects are still freed when their last reference
goes; only a cycle among them would stay, and start-up's cycles are collected first.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Frozen:
    objects: int  # now out of every later collection's walk
    collect_ms: float  # the one full collection before the freeze


def freeze_start_up() -> Frozen:
    """Collect once, then freeze what is alive. Call it once, when start-up is over."""
    start_s = time.perf_counter()
    gc.collect()
    collect_ms = (time.perf_counter() - start_s) * 1e3
    gc.freeze()
    return Frozen(gc.get_freeze_count(), collect_ms)
