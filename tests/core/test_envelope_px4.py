"""The fence against real PX4's velocity loop (measured on PX4 SIH, tests/px4/test_px4_fence.py):
PX4 follows a velocity setpoint ~0.5 s late and creeps on at ~0.27 m/s on "0 m/s", so
velocity shaping alone let a vehicle 1.1 m past an 8 m fence. Near the stop line the
stream becomes a position on the line, which PX4's position loop brakes to and holds."""

from __future__ import annotations

import dataclasses
import math

from offboardd.core.envelope import FENCE_HOLD_ZONE_M, PX4_VELOCITY_LAG_S, Envelope
from offboardd.core.envelope_geometry import stopping_speed_m_s
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAttitude, FcHeartbeat, FcHomePosition, FcLocalPosition
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    PositionNed,
    PositionVelocityNed,
    VelocityBody,
    VelocityNed,
)
from offboardd.core.vehicle import VehicleState

from .bench import FC

HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **FC)


def vehicle_at(north_m: float, north_m_s: float, yaw_rad: float = 0.0) -> VehicleState:
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
    vs.fold(FcLocalPosition(1000, north_m, 0.0, -5.0, north_m_s, 0.0, 0.0, **FC), 1.0)
    vs.fold(FcAttitude(1000, 0.0, 0.0, yaw_rad, **FC), 1.0)
    return vs


def fence(max_distance_m: float = 8.0) -> Envelope:
    env = Envelope(EnvelopeSettings(max_distance_m=max_distance_m, stop_margin_m=1.0))
    env.set_home(HOME)
    return env


def test_px4_velocity_lag_slows_the_approach_earlier() -> None:
    assert stopping_speed_m_s(1.0, 3.0, 0.0) == math.sqrt(6.0)
    lagged = stopping_speed_m_s(1.0, 3.0, PX4_VELOCITY_LAG_S)
    assert 1.3 < lagged < 1.4  # v lag + v^2 / 2a = 1 m
    assert abs(lagged * PX4_VELOCITY_LAG_S + lagged**2 / 6.0 - 1.0) < 1e-9


def test_px4_creeps_on_zero_velocity_so_the_fence_line_is_held_by_position() -> None:
    env = fence()
    sp, why = env.shape(VelocityNed(3.0, 0.0, 0.0), vehicle_at(7.0 - FENCE_HOLD_ZONE_M / 2, 1.5),
                        1.0)
    assert sp == PositionNed(7.0, 0.0, -5.0)  # on the stop line, 1 m inside the 8 m fence
    assert why is not None and why[0] is Reason.FENCE_STOP and "holding at the line" in why[1]
    past, _ = env.shape(VelocityNed(3.0, 0.0, 0.0), vehicle_at(7.6, 0.3), 1.0)
    assert past == PositionNed(7.0, 0.0, -5.0)  # crept past: pulled back onto the line


def test_a_velocity_away_from_the_line_is_flown_as_asked() -> None:
    env = fence()
    sp, why = env.shape(VelocityNed(-2.0, 0.0, 0.0), vehicle_at(6.9, 0.0), 1.0)
    assert sp == VelocityNed(-2.0, 0.0, 0.0) and why is None


def test_body_velocity_towards_the_line_is_held_too() -> None:
    env = fence()
    sp, _ = env.shape(VelocityBody(2.0, 0.0, 0.0), vehicle_at(6.8, 1.0, yaw_rad=0.0), 1.0)
    assert isinstance(sp, PositionNed) and abs(sp.north_m - 7.0) < 1e-9


def test_far_outside_the_fence_an_outward_velocity_holds_where_the_vehicle_is() -> None:
    """Found by review: engaged 50 m outside a 50 m fence (allowed, and no breach: it was
    never inside), 1 m/s outward became a position on the stop line, a 51 m step PX4 flies
    at its own top speed. Beyond the breach tolerance the outward part is zeroed where the
    vehicle is (no position step at all)."""
    env = Envelope(EnvelopeSettings(max_distance_m=50.0, max_horizontal_speed_m_s=3.0))
    env.set_home(HOME)
    sp, why = env.shape(VelocityNed(1.0, 0.0, 0.0), vehicle_at(100.0, 0.0), 1.0)
    assert sp == VelocityNed(0.0, 0.0, 0.0) and why is not None
    back, why = env.shape(VelocityNed(-1.0, 0.0, 0.0), vehicle_at(100.0, 0.0), 1.0)
    assert back == VelocityNed(-1.0, 0.0, 0.0) and why is None  # flying back in: as asked


def test_a_limited_feed_forward_loses_its_outward_acceleration_too() -> None:
    """Found by review (session 24, left out then): a motion streams position + velocity +
    acceleration feed-forward; near the fence the velocity was capped but the acceleration
    still pushed outward at the profile's 2 m/s², which PX4 adds to its own loop's output.
    Along a face whose stop speed binds, the acceleration keeps only its braking part;
    along the fence it is kept."""
    env = fence()
    asked = PositionVelocityNed(5.0, 0.0, -5.0, 3.0, 1.0, 0.0,
                                north_m_s2=2.0, east_m_s2=0.5, down_m_s2=0.0)
    sp, why = env.shape(asked, vehicle_at(5.0, 1.5), 1.0)
    assert isinstance(sp, PositionVelocityNed) and why is not None
    assert sp.north_m_s < 3.0  # the velocity was capped (5 m: 2 m short of the stop line)
    assert sp.north_m_s2 == 0.0 and sp.east_m_s2 == 0.5 and sp.down_m_s2 == 0.0
    braking = dataclasses.replace(asked, north_m_s2=-1.0)
    kept, _ = env.shape(braking, vehicle_at(5.0, 1.5), 1.0)
    assert isinstance(kept, PositionVelocityNed) and kept.north_m_s2 == -1.0


def test_a_feed_forward_within_the_stop_speed_is_untouched() -> None:
    env = fence()
    asked = PositionVelocityNed(2.0, 0.0, -5.0, 0.5, 0.0, 0.0,
                                north_m_s2=2.0, east_m_s2=0.0, down_m_s2=0.0)
    sp, why = env.shape(asked, vehicle_at(2.0, 0.5), 1.0)
    assert sp is asked and why is None


def test_blind_at_the_fence_a_feed_forward_stops_with_its_acceleration() -> None:
    """With the fence on and no valid position, velocity-kind setpoints stream as zero;
    a position+velocity setpoint's acceleration feed-forward was left in (review)."""
    env = fence()
    vs = VehicleState(estimate_timeout_s=0.5)  # no position heard at all
    asked = PositionVelocityNed(2.0, 0.0, -5.0, 1.0, 0.0, 0.0,
                                north_m_s2=2.0, east_m_s2=1.0, down_m_s2=-0.5)
    sp, why = env.shape(asked, vs, 1.0)
    assert why is not None and why[0] is Reason.FENCE_STOP
    assert isinstance(sp, PositionVelocityNed)
    assert (sp.north_m_s, sp.east_m_s, sp.down_m_s) == (0.0, 0.0, 0.0)
    assert (sp.north_m_s2, sp.east_m_s2, sp.down_m_s2) == (0.0, 0.0, 0.0)


def test_blind_at_the_fence_an_acceleration_stops_instead_of_coasting() -> None:
    """A zero acceleration keeps the speed the vehicle has: blind, with a fence to keep,
    an acceleration setpoint streams as a zero velocity (yaw kept), which PX4 brakes to
    (it needs the local velocity for both; review)."""
    env = fence()
    vs = VehicleState(estimate_timeout_s=0.5)  # no position heard at all
    sp, why = env.shape(AccelerationNed(1.0, 0.5, 0.0, yaw_rad=0.3), vs, 1.0)
    assert sp == VelocityNed(0.0, 0.0, 0.0, yaw_rad=0.3)
    assert why is not None and why[0] is Reason.FENCE_STOP
    sp, _ = env.shape(AccelerationNed(1.0, 0.0, 0.0, yaw_rate_rad_s=0.2), vs, 1.0)
    assert sp == VelocityNed(0.0, 0.0, 0.0, yaw_rate_rad_s=0.2)


def test_with_no_stop_margin_the_hold_is_on_the_fence_line_itself() -> None:
    """Found by review: with stop_margin_m 0 the hold's target lies exactly on an edge,
    which point_in_polygon may call outside; judged by `contains` the hold was dropped
    there (and PX4 crept on past the line), judged by the nearest face's sign it holds."""
    square = ((-10.0, -10.0), (-10.0, 10.0), (10.0, 10.0), (10.0, -10.0))
    env = Envelope(EnvelopeSettings(polygon=square, stop_margin_m=0.0))
    env.set_home(HOME)
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
    vs.fold(FcLocalPosition(1000, 9.75, 3.0, -5.0, 1.0, 0.0, 0.0, **FC), 1.0)
    vs.fold(FcAttitude(1000, 0.0, 0.0, 0.0, **FC), 1.0)
    sp, why = env.shape(VelocityNed(5.0, 0.0, 0.0), vs, 1.0)
    assert sp == PositionNed(10.0, 3.0, -5.0)
    assert why is not None and "holding at the line" in why[1]
