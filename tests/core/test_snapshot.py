"""The state document's numbers: ages and distances to the millisecond / millimetre."""

from __future__ import annotations

import json

from offboardd.core.commands import Engage
from offboardd.core.setpoints import PositionNed

from .bench import Bench


def test_the_state_documents_floats_are_rounded_and_never_negative_zero() -> None:
    b = Bench()
    b.connect()
    b.commander_alive = True
    b.feed(Engage("e", PositionNed(0, 0, -5)))
    b.step(0.4123456)
    snap = b.engine.snapshot(b.now + 0.0001234)
    doc = snap.as_dict()
    for name in ("fc_heartbeat_age_s", "lease_remaining_s", "stream_rate_hz",
                 "stream_worst_gap_s", "com_of_loss_t_s"):
        value = doc[name]
        assert isinstance(value, float) and value == round(value, 3), (name, value)
        assert len(json.dumps(value).split(".")[1]) <= 3, (name, value)
    raw = snap.fc_heartbeat_age_s
    assert raw is not None and raw != doc["fc_heartbeat_age_s"]  # the engine keeps its own
    assert "-0.0" not in json.dumps(doc)
