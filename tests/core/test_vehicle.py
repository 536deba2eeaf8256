"""VehicleState: estimate validity (fresh LOCAL_POSITION_NED, ESTIMATOR_STATUS flags may
veto), "in control" from mode + armed + landed together, and reboot detection."""

from __future__ import annotations

from offboardd.core.actions import NoticeKind
from offboardd.core.events import (
    FcAttitude,
    FcEstimatorStatus,
    FcExtendedSysState,
    FcGlobalPosition,
    FcHeartbeat,
    FcLocalPosition,
    LandedState,
    SystemStatus,
)
from offboardd.core.modes import Px4Mode
from offboardd.core.setpoints import EstimateNeed, PositionNed
from offboardd.core.vehicle import VehicleState

from .bench import FC, Bench

LOCAL = EstimateNeed.LOCAL_POSITION
VEL = EstimateNeed.LOCAL_VELOCITY
GLOBAL = EstimateNeed.GLOBAL_POSITION


def fed(*events: object, now: float = 0.0) -> VehicleState:
    v = VehicleState(estimate_timeout_s=0.5)
    v.accepts(FcHeartbeat(12, 2, 0, 0, 4, **FC))
    for e in events:
        assert v.accepts(e)  # type: ignore[arg-type]
        v.fold(e, now)  # type: ignore[arg-type]
    return v


def pos(boot_ms: int = 1000) -> FcLocalPosition:
    return FcLocalPosition(boot_ms, 1, 2, -3, 0, 0, 0, **FC)


def test_local_position_valid_only_while_fresh() -> None:
    v = fed(pos(), now=10.0)
    assert v.estimate_valid(LOCAL, 10.4) and v.estimate_valid(VEL, 10.4)
    assert not v.estimate_valid(LOCAL, 10.6)
    assert not v.estimate_valid(GLOBAL, 10.0)
    assert v.estimate_valid(EstimateNeed.NONE, 99.0)


def test_estimator_flags_veto() -> None:
    v = fed(pos(), FcEstimatorStatus(2 | 4, **FC), now=10.0)  # velocity only, no position
    assert not v.estimate_valid(LOCAL, 10.1)
    assert v.estimate_valid(VEL, 10.1)
    v.fold(FcEstimatorStatus(2 | 4 | 8 | 32, **FC), 10.2)
    assert v.estimate_valid(LOCAL, 10.3)
    v.fold(FcEstimatorStatus(0, **FC), 10.3)
    v.fold(pos(1100), 14.0)  # flags 3.7 s old, the position fresh: still vetoed
    assert not v.estimate_valid(LOCAL, 14.0) and not v.estimate_valid(VEL, 14.0)


def test_an_estimate_lost_stays_lost_until_estimator_status_says_otherwise() -> None:
    # [SITL main] GPS cut in flight: LOCAL_POSITION_NED went on at 30/s, dead-reckoned,
    # while ESTIMATOR_STATUS dropped the horizontal flags (895 -> 869 -> 101); on a
    # 57,600-baud line with PX4's streams left alone ESTIMATOR_STATUS comes every ~12 s
    v = fed(pos(), FcEstimatorStatus(895, **FC), now=10.0)
    assert v.estimate_valid(LOCAL, 10.0)
    v.fold(FcEstimatorStatus(101, **FC), 10.5)
    for i in range(1, 12 * 30):
        now = 10.5 + i / 30
        v.fold(pos(1000 + i * 33), now)
        assert not v.estimate_valid(LOCAL, now) and not v.estimate_valid(VEL, now)
        assert v.hold_setpoint(now) is None and v.local_position_now_ned(now) is None
    v.fold(FcEstimatorStatus(895, **FC), 22.5)  # the next one, 12 s on: back
    assert v.estimate_valid(LOCAL, 22.5)


def test_a_booting_px4_counts_no_estimate_before_its_estimator_status() -> None:
    # [SITL main] PX4 streams LOCAL_POSITION_NED from 0.5 s of uptime; its HEARTBEAT says
    # UNINIT, ESTIMATOR_STATUS has the position only at 3.4 s
    v = VehicleState(estimate_timeout_s=0.5)
    booting = FcHeartbeat(12, 2, 0, 0, SystemStatus.UNINIT, **FC)
    assert v.accepts(booting)
    v.fold(booting, 1.4)
    v.fold(pos(1400), 1.4)
    assert not v.estimate_valid(LOCAL, 1.4)
    v.fold(FcEstimatorStatus(2 | 4 | 8 | 32, **FC), 3.4)
    v.fold(pos(3400), 3.4)
    assert v.estimate_valid(LOCAL, 3.4)
    # UNINIT later on (disarmed after a landing) on a link without ESTIMATOR_STATUS: the
    # position counts, as it always did there
    later = VehicleState(estimate_timeout_s=0.5)
    assert later.accepts(booting)
    later.fold(booting, 600.0)
    later.fold(pos(600_000), 600.0)
    assert later.estimate_valid(LOCAL, 600.0)


def test_velocity_valid_by_the_message_it_came_in() -> None:
    """telemetry/velocity comes from GLOBAL_POSITION_INT when no LOCAL_POSITION_NED was
    heard: judged by that message's freshness and the velocity flags (review)."""
    v = fed(FcGlobalPosition(1000, 47.0, 8.0, 500.0, 10.0, **FC), now=1.0)
    assert v.velocity_valid(global_frame=True, now=1.2)
    assert not v.velocity_valid(global_frame=False, now=1.2)
    v.fold(FcEstimatorStatus(8 | 32, **FC), 1.3)  # no velocity flags
    assert not v.velocity_valid(global_frame=True, now=1.3)


def test_a_px4_taking_over_from_another_component_drops_its_flags() -> None:
    """A non-PX4 component spoke first; its ESTIMATOR_STATUS flags no longer age out, so
    they must not outlive the switch to PX4 (review)."""
    v = VehicleState(estimate_timeout_s=0.5)
    other = FcHeartbeat(3, 2, 0, 0, 4, source_system=1, source_component=5)  # not PX4
    assert v.accepts(other)
    v.fold(other, 1.0)
    flags = FcEstimatorStatus(0, source_system=1, source_component=5)
    assert v.accepts(flags)
    v.fold(flags, 1.0)
    px4 = FcHeartbeat(12, 2, 0, 0, 4, **FC)
    assert v.accepts(px4)
    v.fold(px4, 1.1)
    v.fold(pos(), 1.1)
    assert v.estimator_flags is None and v.estimate_valid(LOCAL, 1.1)


def test_global_position_needs_its_own_message() -> None:
    v = fed(FcGlobalPosition(1000, 47.0, 8.0, 500.0, 10.0, **FC), now=1.0)
    assert v.estimate_valid(GLOBAL, 1.2) and not v.estimate_valid(LOCAL, 1.2)


def test_in_control_needs_offboard_armed_and_not_on_ground() -> None:
    off = Px4Mode.OFFBOARD.custom_mode
    armed = FcHeartbeat(12, 2, 129, off, 4, **FC)
    v = fed(armed, FcExtendedSysState(int(LandedState.IN_AIR), **FC))
    assert v.in_control()
    # after AUTO.LAND PX4 reports OFFBOARD again, disarmed on the ground (§3)
    v.fold(FcHeartbeat(12, 2, 1, off, 4, **FC), 1.0)
    v.fold(FcExtendedSysState(int(LandedState.ON_GROUND), **FC), 1.0)
    assert v.in_offboard and not v.in_control()
    v.fold(armed, 2.0)
    assert not v.in_control()  # armed in OFFBOARD but still on the ground


def test_hold_setpoint_faces_where_the_vehicle_faces() -> None:
    v = fed(pos(), FcAttitude(1000, 0.0, 0.0, 1.2, **FC), now=5.0)
    hold = v.hold_setpoint(5.1)
    assert hold is not None and hold.yaw_rad == 1.2 and hold.north_m_s == 0.0
    assert v.hold_setpoint(6.0) is None  # stale position: nowhere to hold


def test_boot_time_going_back_means_reboot() -> None:
    v = fed(pos(50_000), now=1.0)
    assert not v.fold(pos(49_500), 1.1)  # reordering, not a reboot
    assert v.fold(pos(300), 1.2)


def test_time_boot_ms_wrapping_after_49_7_days_is_not_a_reboot() -> None:
    """time_boot_ms is a uint32: after 2^32 ms of FC uptime it goes back to 0. Read as a
    reboot, it failed safe in flight (review); a real reboot is still one."""
    wrap = 1 << 32
    v = fed(pos(wrap - 150), now=1.0)
    assert not v.fold(pos(wrap - 50), 1.1)
    assert not v.fold(pos(50), 1.2)  # wrapped
    assert not v.fold(pos(wrap - 20), 1.21)  # a late one from before the wrap: reordering
    assert not v.fold(pos(150), 1.3)
    v = fed(pos(wrap - 3_600_000), now=1.0)  # an hour before the wrap
    assert v.fold(pos(3_000), 1.5)  # back to a few seconds of uptime: a reboot


def test_other_autopilots_and_gcs_are_not_adopted() -> None:
    v = VehicleState(0.5)
    assert not v.accepts(FcHeartbeat(8, 6, 0, 0, 4, source_system=255, source_component=190))
    assert v.target is None
    assert not v.accepts(pos())  # no autopilot yet: nothing else counts


def test_a_px4_heartbeat_wins_over_a_non_px4_component_heard_first() -> None:
    v = VehicleState(0.5)
    generic = FcHeartbeat(0, 26, 0, 0, 4, source_system=1, source_component=154)
    assert v.accepts(generic)
    v.fold(generic, 0.0)
    px4 = FcHeartbeat(12, 2, 0, 0, 4, **FC)
    assert v.accepts(px4)
    v.fold(px4, 0.1)
    assert v.is_px4 and (v.target.system_id, v.target.component_id) == (1, 1)  # type: ignore[union-attr]
    assert not v.accepts(generic)


def test_after_the_fc_is_lost_only_the_same_px4_system_is_adopted_again() -> None:
    """Found by review: with fc_system_id = 0 an FC loss forgot which vehicle we flew, and
    the next PX4 heard on a shared radio (another vehicle) was adopted: the next engage
    would have flown it. The first PX4 adopted is kept for the run."""
    v = VehicleState(0.5)
    ours = FcHeartbeat(12, 2, 0, 0, 4, **FC)
    assert v.accepts(ours)
    v.fold(ours, 0.0)
    v.target = None  # the FC was lost (engine_fc.fc_lost)
    other = FcHeartbeat(12, 2, 0, 0, 4, source_system=2, source_component=1)
    assert not v.accepts(other) and v.target is None
    assert v.foreign_px4_systems == {2}
    assert v.accepts(ours) and v.target is not None and v.target.system_id == 1


def test_another_px4_on_the_link_is_warned_of_once_and_never_flown() -> None:
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    other = FcHeartbeat(12, 2, 0, 0, 4, source_system=2, source_component=1)
    for _ in range(3):
        b.feed(other)
    warnings = [n for n in b.notices(NoticeKind.WARNING) if "system 2" in n.message]
    assert len(warnings) == 1 and "following system 1" in warnings[0].message
    b.fc_alive = False
    b.step(b.settings.fc_timeout_s + 0.5)  # our FC is lost...
    b.feed(other)  # ...and the other vehicle heartbeats on
    assert b.engine.vehicle.target is None and not b.engine.fc_up
    assert b.engine.snapshot(b.now).fc_link == "lost"
