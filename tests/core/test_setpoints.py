"""Every setpoint validation rule (px4-offboard.md §1): a constructed value is flyable."""

from __future__ import annotations

import math

import pytest

from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    Attitude,
    BodyRates,
    EstimateNeed,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    VelocityBody,
    VelocityNed,
)
from offboardd.errors import ErrorCode, SetpointError

BAD_NUMBERS = [math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("bad", BAD_NUMBERS)
@pytest.mark.parametrize(
    ("factory", "field"),
    [
        (lambda v: PositionNed(v, 0, 0), "north_m"),
        (lambda v: PositionNed(0, v, 0), "east_m"),
        (lambda v: PositionNed(0, 0, v), "down_m"),
        (lambda v: PositionNed(0, 0, 0, yaw_rad=v), "yaw_rad"),
        (lambda v: VelocityNed(0, 0, 0, yaw_rate_rad_s=v), "yaw_rate_rad_s"),
        (lambda v: VelocityNed(v, 0, 0), "north_m_s"),
        (lambda v: VelocityBody(0, v, 0), "right_m_s"),
        (lambda v: VelocityBody(0, 0, 0, v), "yaw_rate_rad_s"),
        (lambda v: AccelerationNed(0, 0, v), "down_m_s2"),
        (lambda v: PositionVelocityNed(0, 0, 0, 0, v, 0), "east_m_s"),
        (
            lambda v: PositionVelocityNed(0, 0, 0, 0, 0, 0, north_m_s2=v, east_m_s2=0, down_m_s2=0),
            "north_m_s2",
        ),
        (lambda v: GlobalPosition(47.0, 8.0, v), "alt_m"),
        (lambda v: Attitude(v, 0, 0, 0, 0.5), "w"),
        (lambda v: Attitude(1, 0, 0, 0, v), "thrust"),
        (lambda v: BodyRates(0, v, 0, 0.5), "pitch_rate_rad_s"),
        (lambda v: BodyRates(0, 0, 0, v), "thrust"),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_field(factory, field, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SetpointError, match=field) as info:
        factory(bad)
    assert info.value.code is ErrorCode.SETPOINT_INVALID


def test_non_numbers_are_refused() -> None:
    with pytest.raises(SetpointError, match="north_m"):
        PositionNed("1", 0, 0)  # type: ignore[arg-type]
    with pytest.raises(SetpointError, match="thrust"):
        BodyRates(0, 0, 0, True)


def test_yaw_and_yaw_rate_together_are_ambiguous() -> None:
    for cls in (PositionNed, VelocityNed, AccelerationNed):
        with pytest.raises(SetpointError, match="not both"):
            cls(0, 0, 0, yaw_rad=0.1, yaw_rate_rad_s=0.1)
    with pytest.raises(SetpointError, match="not both"):
        GlobalPosition(47, 8, 500, yaw_rad=0.1, yaw_rate_rad_s=0.1)


def test_acceleration_feed_forward_is_all_axes_or_none() -> None:
    # ax without ay makes PX4's position controller reject the setpoint (§1).
    with pytest.raises(SetpointError, match="all of"):
        PositionVelocityNed(0, 0, 0, 0, 0, 0, north_m_s2=1.0)
    with pytest.raises(SetpointError, match="all of"):
        PositionVelocityNed(0, 0, 0, 0, 0, 0, north_m_s2=1.0, east_m_s2=0.0)
    full = PositionVelocityNed(0, 0, 0, 0, 0, 0, north_m_s2=1.0, east_m_s2=0.0, down_m_s2=0.0)
    assert full.has_acceleration
    assert not PositionVelocityNed(0, 0, 0, 0, 0, 0).has_acceleration


@pytest.mark.parametrize("thrust", [-0.01, 1.01, 2.0])
def test_thrust_outside_0_1_is_refused(thrust: float) -> None:
    with pytest.raises(SetpointError, match=r"thrust must be in \[0, 1\]"):
        Attitude(1, 0, 0, 0, thrust)
    with pytest.raises(SetpointError, match="thrust"):
        BodyRates(0, 0, 0, thrust)


def test_thrust_bounds_are_inclusive() -> None:
    assert Attitude(1, 0, 0, 0, 0.0).thrust == 0.0
    assert BodyRates(0, 0, 0, 1.0).thrust == 1.0


def test_quaternion_must_be_unit_and_is_stored_normalised() -> None:
    with pytest.raises(SetpointError, match="norm 1"):
        Attitude(0, 0, 0, 0, 0.5)
    with pytest.raises(SetpointError, match="norm 1"):
        Attitude(1, 1, 0, 0, 0.5)
    nearly = Attitude(1.0005, 0, 0, 0, 0.5)
    assert nearly.quaternion == (1.0, 0.0, 0.0, 0.0)
    half = math.sqrt(0.5)
    q = Attitude(half, 0, 0, half, 0.5)
    assert math.isclose(sum(c * c for c in q.quaternion), 1.0)


def test_global_position_ranges_and_frames() -> None:
    with pytest.raises(SetpointError, match="lat_deg"):
        GlobalPosition(91.0, 8.0, 500)
    with pytest.raises(SetpointError, match="lon_deg"):
        GlobalPosition(47.0, -180.5, 500)
    with pytest.raises(SetpointError, match="altitude_frame"):
        GlobalPosition(47.0, 8.0, 500, altitude_frame="ellipsoid")  # type: ignore[arg-type]
    assert (
        GlobalPosition(47, 8, 10, AltitudeFrame.RELATIVE).altitude_frame is AltitudeFrame.RELATIVE
    )


def test_values_are_frozen() -> None:
    sp = PositionNed(1, 2, -3)
    with pytest.raises(AttributeError):
        sp.north_m = 5  # type: ignore[misc]


def test_each_kind_names_the_estimate_px4_needs() -> None:
    assert PositionNed(0, 0, 0).estimate is EstimateNeed.LOCAL_POSITION
    assert PositionVelocityNed(0, 0, 0, 0, 0, 0).estimate is EstimateNeed.LOCAL_POSITION
    assert VelocityNed(0, 0, 0).estimate is EstimateNeed.LOCAL_VELOCITY
    assert VelocityBody(0, 0, 0).estimate is EstimateNeed.LOCAL_VELOCITY
    assert AccelerationNed(0, 0, 0).estimate is EstimateNeed.LOCAL_VELOCITY
    assert GlobalPosition(0, 0, 0).estimate is EstimateNeed.GLOBAL_POSITION
    assert GlobalPosition(0, 0, 0, AltitudeFrame.RELATIVE).estimate is EstimateNeed.GLOBAL_POSITION
    assert GlobalPosition(0, 0, 0, AltitudeFrame.TERRAIN).estimate is EstimateNeed.TERRAIN
    assert Attitude(1, 0, 0, 0, 0.5).estimate is EstimateNeed.NONE
    assert BodyRates(0, 0, 0, 0.5).estimate is EstimateNeed.NONE
