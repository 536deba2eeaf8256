"""Engaged engines to fuzz from: built once per configuration, copied for each case.

Engaging takes a few simulated seconds of warm-up, mode and arming exchanges (the
`tests/core/bench.py` fake PX4 plays them); a deep copy of the engaged bench is ~2 ms,
so every hypothesis case starts from a real ACTIVE engine without paying for it.
"""

from __future__ import annotations

import copy
import functools

from offboardd.core.commands import Engage
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcHomePosition
from offboardd.core.reasons import Phase
from offboardd.core.setpoints import Setpoint
from offboardd.core.settings import EngineSettings
from tests.core.bench import FC, Bench

from .judge import HomeFix


@functools.cache
def _engaged(setpoint: Setpoint | None, envelope: EnvelopeSettings, home: HomeFix) -> Bench:
    bench = Bench(EngineSettings(envelope=envelope, hold_s=1.0))
    bench.connect()
    bench.feed(FcHomePosition(home.lat_deg, home.lon_deg, home.alt_amsl_m, home.north_m,
                              home.east_m, home.down_m, **FC))
    bench.commander_alive = True
    bench.auto_fc()
    bench.feed(Engage("engage-1", setpoint, arm=True))
    bench.step(bench.settings.warmup_s + 2.5)
    assert bench.engine.phase is Phase.ACTIVE, bench.engine.phase
    bench.hooks.clear()
    bench.log.clear()
    return bench


def engaged_bench(setpoint: Setpoint | None, envelope: EnvelopeSettings,
                  home: HomeFix) -> Bench:
    """An engine ACTIVE with `setpoint` (None: hold), a live commander and PX4's home."""
    return copy.deepcopy(_engaged(setpoint, envelope, home))
