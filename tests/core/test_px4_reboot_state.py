"""PX4 restarted in flight (measured on real PX4 SIH, tests/px4/test_px4_reboot.py): the
retained state said `fc_link: lost` and `in_control: true`, from the last heartbeat."""

from __future__ import annotations

from offboardd.core.actions import NoticeKind
from offboardd.core.events import FcExtendedSysState, LandedState
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings

from .bench import FC, Bench


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


def test_a_returning_fc_is_not_in_the_air_until_it_says_so() -> None:
    """The FC came back on the ground after a restart in flight: its first HEARTBEAT made
    the link `up` and the retained state said `landed_state: in_air` from before, 0.2 s
    until its EXTENDED_SYS_STATE (seen against the sim, review)."""
    b = Bench(EngineSettings(fc_timeout_s=3.0))
    b.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
    b.feed(FcExtendedSysState(int(LandedState.IN_AIR), **FC))
    assert b.engine.snapshot(b.now).landed_state == "in_air"
    b.fc_alive = False
    b.step(3.5)
    b.fc.armed = False
    b.fc_alive = True
    b.step(1.0)  # a HEARTBEAT, and positions: no EXTENDED_SYS_STATE yet
    state = b.engine.snapshot(b.now)
    assert state.fc_link == "up" and state.armed is False
    assert state.landed_state == "undefined"
    b.feed(FcExtendedSysState(int(LandedState.ON_GROUND), **FC))
    assert b.engine.snapshot(b.now).landed_state == "on_ground"


def test_49_7_days_of_fc_uptime_do_not_stop_the_flight() -> None:
    """PX4's time_boot_ms (uint32 ms) wraps after 49.7 days: the engine read the wrap as
    an FC reboot and failed safe in flight (review)."""
    b = Bench()
    b.fc.boot_ms = (1 << 32) - 3_000
    b.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
    b.commander_alive = True
    b.step(10.0)  # the FC's clock passes 2^32 ms: reported as 0, 100, 200...
    assert b.fc.boot_ms > 1 << 32
    assert b.phase() is Phase.ACTIVE, b.reason()
    assert not [n for n in b.notices(NoticeKind.FC_LINK) if "rebooted" in n.message]
