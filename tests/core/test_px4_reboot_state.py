"""PX4 restarted in flight (measured on real PX4 SIH, tests/px4/test_px4_reboot.py): the
retained state said `fc_link: lost` and `in_control: true`, from the last heartbeat."""

from __future__ import annotations

from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings

from .bench import Bench


def test_px4_gone_in_flight_is_not_in_control() -> None:
    b = Bench(EngineSettings(fc_timeout_s=3.0))
    b.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
    assert b.engine.snapshot(b.now).in_control
    b.fc_alive = False
    b.step(3.5)
    state = b.engine.snapshot(b.now)
    assert state.fc_link == "lost" and not state.in_control
    # what it last said is not what it is now (review): unknown until it speaks again
    assert (state.fc_mode, state.fc_custom_mode, state.armed, state.landed_state) == (
        "unknown", None, None, "undefined")
    # (streaming, it stopped at 0.9 x COM_OF_LOSS_T of silence: FC_SILENT, engine_fc.py)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.FC_SILENT
