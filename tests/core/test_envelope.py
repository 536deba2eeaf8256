"""The envelope alone (pure): each limit clamping and rejecting, the fence's geometry
(circle, altitudes, polygon local and global), stopping distance, and breach detection."""

from __future__ import annotations

import math

import pytest

from offboardd.core.envelope import Envelope
from offboardd.core.envelope_geometry import Home, stopping_speed_m_s
from offboardd.core.envelope_limits import apply_limits, tilt_rad
from offboardd.core.envelope_settings import EnvelopeSettings, LimitAction, PolygonFrame
from offboardd.core.events import FcHomePosition
from offboardd.core.polygon import point_in_polygon
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    Attitude,
    BodyRates,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)

HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0)
SQUARE = ((0.0, 0.0), (0.0, 40.0), (40.0, 40.0), (40.0, 0.0))  # north/east, 40 m a side
L_SHAPE = ((0.0, 0.0), (0.0, 40.0), (20.0, 40.0), (20.0, 20.0), (40.0, 20.0), (40.0, 0.0))


def envelope(**kw: object) -> Envelope:
    env = Envelope(EnvelopeSettings(**kw))  # type: ignore[arg-type]
    env.set_home(HOME)
    return env


def tilted(angle_deg: float, yaw_deg: float = 30.0) -> Attitude:
    """Roll `angle_deg` after heading `yaw_deg`: q = yaw * roll."""
    r, y = math.radians(angle_deg) / 2, math.radians(yaw_deg) / 2
    q_yaw = (math.cos(y), 0.0, 0.0, math.sin(y))
    w, z = q_yaw[0], q_yaw[3]
    cr, sr = math.cos(r), math.sin(r)
    return Attitude(w * cr, w * sr, z * sr, z * cr, 0.5)


# -- limits: every one clamps by default and rejects when asked -------------------------------

CASES: list[tuple[str, Setpoint, Reason]] = [
    ("horizontal_speed_action", VelocityNed(12.0, 9.0, 0.0), Reason.LIMIT_HORIZONTAL_SPEED),
    ("horizontal_speed_action", VelocityBody(20.0, 0.0, 0.0), Reason.LIMIT_HORIZONTAL_SPEED),
    ("vertical_speed_action", VelocityNed(0.0, 0.0, -5.0), Reason.LIMIT_VERTICAL_SPEED),
    ("vertical_speed_action", PositionVelocityNed(0, 0, -5, 0, 0, 4), Reason.LIMIT_VERTICAL_SPEED),
    ("acceleration_action", AccelerationNed(3.0, 4.0, 0.0), Reason.LIMIT_ACCELERATION),
    ("tilt_action", tilted(60.0), Reason.LIMIT_TILT),
    ("thrust_action", BodyRates(0.0, 0.0, 0.0, 0.95), Reason.LIMIT_THRUST),
    ("yaw_rate_action", PositionNed(0, 0, -5, yaw_rate_rad_s=-6.0), Reason.LIMIT_YAW_RATE),
]  # fmt: skip
LIMITS = {
    "max_horizontal_speed_m_s": 10.0, "max_acceleration_m_s2": 2.5, "max_tilt_deg": 30.0,
    "max_thrust": 0.8, "max_yaw_rate_deg_s": 90.0,
}  # fmt: skip


@pytest.mark.parametrize(("action", "sp", "reason"), CASES)
def test_each_limit_clamps_by_default(action: str, sp: Setpoint, reason: Reason) -> None:
    s = EnvelopeSettings(**LIMITS)  # type: ignore[arg-type]
    out = apply_limits(sp, s)
    assert out.rejection is None and [c.reason for c in out.clamps] == [reason]
    assert out.clamps[0].limit in out.clamps[0].describe()
    again = apply_limits(out.setpoint, s)  # the clamped value sits at the limit, not above
    assert not again.clamps and again.setpoint is out.setpoint
    assert type(out.setpoint) is type(sp)


@pytest.mark.parametrize(("action", "sp", "reason"), CASES)
def test_each_limit_rejects_when_configured(action: str, sp: Setpoint, reason: Reason) -> None:
    s = EnvelopeSettings(**LIMITS, **{action: LimitAction.REJECT})  # type: ignore[arg-type]
    out = apply_limits(sp, s)
    assert out.rejection is not None and out.rejection.reason is reason


def test_clamps_keep_direction_heading_and_yaw_sign() -> None:
    s = EnvelopeSettings(**LIMITS)  # type: ignore[arg-type]
    v = apply_limits(VelocityNed(12.0, 9.0, 2.5), s).setpoint
    assert isinstance(v, VelocityNed)
    assert (v.north_m_s, v.east_m_s, v.down_m_s) == pytest.approx((8.0, 6.0, 1.5))
    att = apply_limits(tilted(60.0, yaw_deg=30.0), s).setpoint
    assert isinstance(att, Attitude)
    assert math.degrees(tilt_rad(att.quaternion)) == pytest.approx(30.0)
    w, x, y, z = att.quaternion  # heading kept: yaw of the clamped attitude is still 30 deg
    assert math.degrees(math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))) == (
        pytest.approx(30.0, abs=1e-6)
    )
    low = apply_limits(BodyRates(0, 0, -3.0, 0.05), EnvelopeSettings(min_thrust=0.2)).setpoint
    assert isinstance(low, BodyRates) and low.thrust == 0.2
    p = apply_limits(PositionNed(0, 0, -5, yaw_rate_rad_s=-6.0), s).setpoint
    assert isinstance(p, PositionNed) and p.yaw_rate_rad_s == pytest.approx(-math.pi / 2)


def test_within_limits_is_the_same_object() -> None:
    sp = VelocityNed(3.0, 0.0, -1.0)
    out = envelope().admit(sp)
    assert out.setpoint is sp and not out.clamps


# -- fence geometry and admission --------------------------------------------------------------


def test_stopping_speed_is_the_inverse_of_the_stopping_distance() -> None:
    for v, a in ((5.0, 3.0), (12.0, 2.0)):
        assert stopping_speed_m_s(v * v / (2 * a), a) == pytest.approx(v)  # d = v^2 / 2a
    assert stopping_speed_m_s(0.0, 3.0) == 0.0 and stopping_speed_m_s(-2.0, 3.0) == 0.0


def test_position_outside_each_fence_part_is_rejected_naming_it() -> None:
    env = envelope(max_distance_m=50.0, min_altitude_m=2.0, max_altitude_m=30.0)
    assert env.admit(PositionNed(30.0, 30.0, -10.0)).setpoint is not None
    for sp, reason, key in (
        (PositionNed(40.0, 40.0, -10.0), Reason.FENCE_DISTANCE, "max_distance_m = 50"),
        (PositionNed(0.0, 0.0, -31.0), Reason.FENCE_MAX_ALTITUDE, "max_altitude_m = 30"),
        (PositionNed(0.0, 0.0, -1.0), Reason.FENCE_MIN_ALTITUDE, "min_altitude_m = 2"),
        (PositionVelocityNed(60, 0, -5, 1, 0, 0), Reason.FENCE_DISTANCE, "max_distance_m"),
    ):
        verdict = env.admit(sp)
        assert verdict.setpoint is None and verdict.reason is reason
        assert key in verdict.message


def test_home_unknown_blocks_only_a_fenced_envelope() -> None:
    assert Envelope(EnvelopeSettings()).blocker() is None
    fenced = Envelope(EnvelopeSettings(max_altitude_m=20.0))
    blocker = fenced.blocker()
    assert blocker is not None and blocker[0] is Reason.HOME_UNKNOWN
    fenced.set_home(HOME)
    assert fenced.blocker() is None


def test_polygon_inside_outside_local_and_concave() -> None:
    assert point_in_polygon(10.0, 10.0, SQUARE) and not point_in_polygon(50.0, 10.0, SQUARE)
    assert point_in_polygon(30.0, 10.0, L_SHAPE) and not point_in_polygon(30.0, 30.0, L_SHAPE)
    env = envelope(polygon=L_SHAPE)
    assert env.admit(PositionNed(10.0, 30.0, -5.0)).setpoint is not None
    verdict = env.admit(PositionNed(30.0, 30.0, -5.0))  # the L's missing corner
    assert verdict.reason is Reason.FENCE_POLYGON and "outside the polygon" in verdict.message


def test_global_polygon_and_global_setpoints_are_checked_about_home() -> None:
    home = Home(HOME.lat_deg, HOME.lon_deg, HOME.alt_amsl_m, 0.0, 0.0, 0.0)
    # the SQUARE, given as lat/lon about home
    lat0, lon0 = HOME.lat_deg, HOME.lon_deg
    dlat = math.degrees(40.0 / 6_371_000.0)
    dlon = math.degrees(40.0 / (6_371_000.0 * math.cos(math.radians(lat0))))
    corners = ((lat0, lon0), (lat0, lon0 + dlon), (lat0 + dlat, lon0 + dlon), (lat0 + dlat, lon0))
    north, east = home.to_local(lat0 + dlat, lon0 + dlon)
    assert (north, east) == pytest.approx((40.0, 40.0))
    env = envelope(polygon=corners, polygon_frame=PolygonFrame.GLOBAL, max_altitude_m=20.0)
    inside = GlobalPosition(lat0 + dlat / 2, lon0 + dlon / 2, 498.0)  # 10 m above home, AMSL
    assert env.admit(inside).setpoint is inside
    outside = GlobalPosition(lat0 + 1.2 * dlat, lon0 + dlon / 2, 498.0)
    assert env.admit(outside).reason is Reason.FENCE_POLYGON
    too_high = GlobalPosition(lat0 + dlat / 2, lon0 + dlon / 2, 25.0, AltitudeFrame.RELATIVE)
    assert env.admit(too_high).reason is Reason.FENCE_MAX_ALTITUDE
    terrain = GlobalPosition(lat0 + dlat / 2, lon0 + dlon / 2, 5.0, AltitudeFrame.TERRAIN)
    assert env.admit(terrain).reason is Reason.FENCE_TERRAIN_ALTITUDE


def test_a_relative_altitude_needs_home_and_is_streamed_in_amsl_from_it() -> None:
    """PX4 converts MAV_FRAME_GLOBAL_RELATIVE_ALT_INT wrong (Envelope.in_amsl): the daemon
    admits a relative altitude only with PX4's home known and streams it as AMSL."""
    env = Envelope(EnvelopeSettings())  # no fence, no home yet
    relative = GlobalPosition(HOME.lat_deg, HOME.lon_deg, 5.0, AltitudeFrame.RELATIVE)
    verdict = env.admit(relative)
    assert verdict.setpoint is None and verdict.reason is Reason.HOME_UNKNOWN
    assert env.in_amsl(relative) is relative  # (never streamed without home: admitted first)
    env.set_home(FcHomePosition(HOME.lat_deg, HOME.lon_deg, 488.0, 0.0, 0.0, -0.8))
    assert env.admit(relative).setpoint is relative
    sent = env.in_amsl(relative)
    assert isinstance(sent, GlobalPosition) and sent.altitude_frame is AltitudeFrame.AMSL
    assert (sent.lat_deg, sent.lon_deg, sent.alt_m) == (HOME.lat_deg, HOME.lon_deg, 493.0)
    for other in (GlobalPosition(HOME.lat_deg, HOME.lon_deg, 493.0),
                  GlobalPosition(HOME.lat_deg, HOME.lon_deg, 5.0, AltitudeFrame.TERRAIN),
                  PositionNed(1.0, 2.0, -3.0)):  # fmt: skip
        assert env.in_amsl(other) is other


def test_home_elsewhere_in_the_local_frame_moves_the_fence() -> None:
    env = envelope(max_distance_m=10.0)
    env.set_home(FcHomePosition(HOME.lat_deg, HOME.lon_deg, 488.0, 100.0, 0.0, -2.0))
    assert env.admit(PositionNed(105.0, 0.0, -5.0)).setpoint is not None
    assert env.admit(PositionNed(5.0, 0.0, -5.0)).reason is Reason.FENCE_DISTANCE


# -- breach ------------------------------------------------------------------------------------


def test_breach_needs_inside_first_and_the_tolerance_exceeded() -> None:
    env = envelope(min_altitude_m=2.0, polygon=SQUARE, breach_tolerance_m=1.0)
    assert env.breach(20.0, 20.0, 0.0) is None  # on the ground below min altitude: take-off
    assert env.breach(20.0, 20.0, -3.0) is None and env.inside_seen
    assert env.breach(-0.5, 20.0, -3.0) is None  # outside, within the tolerance
    face = env.breach(-1.5, 20.0, -3.0)
    assert face is not None and face.reason is Reason.FENCE_POLYGON
    assert face.distance_m == pytest.approx(-1.5)


# -- an acceleration setpoint is a tilt: PX4 flies it at atan(|a_h| / g) -------------------


def _tilt_deg(a: tuple[float, float, float]) -> float:
    """The tilt PX4 flies an acceleration setpoint at (PositionControl::_accelerationControl,
    MPC_ACC_DECOUPLE = 1, its default): body z along (-a_n, -a_e, g)."""
    return math.degrees(math.atan2(math.hypot(a[0], a[1]), 9.80665))


def test_an_acceleration_setpoint_is_held_to_max_tilt() -> None:
    # Measured on PX4 SIH main: acceleration_ned 8 m/s² north flew at 38.8° (atan(8/g) =
    # 39.2°). With max_tilt_deg = 10, the default 3 m/s² alone would tilt it 17°.
    s = EnvelopeSettings(max_tilt_deg=10.0)
    out = apply_limits(AccelerationNed(2.5, 0.0, -1.0, yaw_rad=0.5), s)
    assert [c.reason for c in out.clamps] == [Reason.LIMIT_TILT]
    assert "max_tilt_deg" in out.clamps[0].describe()
    a = out.setpoint
    assert isinstance(a, AccelerationNed)
    assert _tilt_deg((a.north_m_s2, a.east_m_s2, a.down_m_s2)) == pytest.approx(10.0)
    assert (a.east_m_s2, a.down_m_s2, a.yaw_rad) == (0.0, -1.0, 0.5)  # direction, climb kept
    again = apply_limits(a, s)
    assert not again.clamps and again.setpoint is a
    refused = apply_limits(AccelerationNed(3.0, 0.0, 0.0),
                           EnvelopeSettings(max_tilt_deg=10.0, tilt_action=LimitAction.REJECT))
    assert refused.rejection is not None and refused.rejection.reason is Reason.LIMIT_TILT
    ff = apply_limits(PositionVelocityNed(0, 0, -5, 0, 0, 0, north_m_s2=0.0, east_m_s2=3.0,
                                          down_m_s2=0.0), s).setpoint
    assert isinstance(ff, PositionVelocityNed) and ff.east_m_s2 is not None
    assert _tilt_deg((0.0, ff.east_m_s2, 0.0)) == pytest.approx(10.0)
    # within the tilt: untouched (3 m/s² is 17°, under the default 45°)
    sp = AccelerationNed(3.0, 0.0, 0.0)
    assert apply_limits(sp, EnvelopeSettings()).setpoint is sp

