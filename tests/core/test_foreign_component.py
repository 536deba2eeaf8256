"""Messages from another component of the FC's own system (a gimbal, a camera, an
external AHRS sharing MAV_SYS_ID, forwarded by PX4 or a router) are not the autopilot's:
only HEARTBEAT was checked by component once, and each of these went wrong (review)."""

from __future__ import annotations

from offboardd.core.commands import Engage
from offboardd.core.events import (
    MAV_AUTOPILOT_INVALID,
    MAV_CMD_DO_SET_MODE,
    FcAttitude,
    FcCommandAck,
    FcCurrentMode,
    FcHeartbeat,
    FcLocalPosition,
)
from offboardd.core.reasons import Phase
from offboardd.core.setpoints import PositionNed
from tests.core.bench import Bench

GIMBAL = {"source_system": 1, "source_component": 154}


def test_a_gimbals_attitude_is_never_read_as_an_fc_reboot() -> None:
    b = Bench()
    b.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
    assert b.phase() is Phase.ACTIVE
    # The gimbal (powered up later than PX4) heartbeats as what it is and reports its
    # own attitude with its own boot clock: 3 s since its boot, PX4 has 10+ s.
    b.feed(FcHeartbeat(MAV_AUTOPILOT_INVALID, 26, 0, 0, 4, **GIMBAL))
    b.feed(FcAttitude(3_000, 0.0, 0.3, 1.0, **GIMBAL))
    b.step(0.1)
    assert b.phase() is Phase.ACTIVE, (b.phase(), b.reason())


def test_another_components_position_never_becomes_the_hold_point() -> None:
    b = Bench()
    b.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
    # PX4's position is (0, 0, -5); another component of system 1 reports something else
    # with PX4-like timestamps (no reboot detection to hide behind).
    b.feed(FcLocalPosition(b.fc.boot_ms, 40.0, -30.0, -1.0, 0, 0, 0, **GIMBAL))
    hold = b.engine.vehicle.hold_setpoint(b.now)
    assert hold is not None
    assert (hold.north_m, hold.east_m) == (0.0, 0.0), hold


def test_another_components_mode_is_no_takeover() -> None:
    b = Bench()
    b.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
    loiter = 50593792  # AUTO.LOITER
    b.feed(FcCurrentMode(loiter, loiter, **GIMBAL))
    b.step(0.1)
    assert b.phase() is Phase.ACTIVE, (b.phase(), b.reason())


def test_another_components_ack_never_answers_our_mode_change() -> None:
    b = Bench()
    b.connect()
    b.commander_alive = True
    b.feed(Engage("e", PositionNed(0.0, 0.0, -5.0), arm=False))
    b.step(b.settings.warmup_s + 0.05)
    assert b.phase() is Phase.ENGAGING
    asked = len(b.mode_requests())
    # a camera (1/100) answers DO_SET_MODE "unsupported" to whoever sent it (us: 1/191)
    b.feed(FcCommandAck(MAV_CMD_DO_SET_MODE, 3, 1, 191,
                        source_system=1, source_component=100))
    assert b.engine.last_ack is None
    assert b.phase() is Phase.ENGAGING and len(b.mode_requests()) >= asked
