"""Fuzz the engine's stream against the envelope: random commanded setpoints, random
vehicle positions, velocities and headings (the FC's telemetry), with a geofence on.

Property: whatever the commander asks and wherever the FC says the vehicle is, every
setpoint the engine streams is one PX4 accepts and can fly (the sim's validator), is
within the speed / acceleration / tilt / thrust / yaw-rate limits, and, when it is a
position the commander asked for, lies inside the fence. (A hold setpoint is "where the
vehicle is", which may be outside after a drift: that is the breach action's business.)
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from offboardd.core.actions import SendSetpoint
from offboardd.core.commands import SetSetpoint
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAttitude, FcLocalPosition
from offboardd.core.reasons import Phase
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
from tests.core.bench import FC

from .benches import engaged_bench
from .budget import Cases, fuzz_settings
from .judge import (
    HOME_ALT_M,
    HOME_LAT_DEG,
    HOME_LON_DEG,
    EnvelopeJudge,
    HomeFix,
    px4_verdict_of_message,
    wire,
)

HOME = HomeFix(HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M, 1.0, -2.0, 0.5)
FENCES: dict[str, EnvelopeSettings] = {
    "cylinder": EnvelopeSettings(max_distance_m=30.0, min_altitude_m=1.0, max_altitude_m=25.0),
    "concave_polygon": EnvelopeSettings(
        polygon=((-20.0, -20.0), (-20.0, 25.0), (5.0, 5.0), (25.0, 25.0), (25.0, -20.0)),
        max_altitude_m=40.0, breach_tolerance_m=2.0, breach_action="land",  # type: ignore[arg-type]
        max_horizontal_speed_m_s=5.0, max_acceleration_m_s2=2.0, max_tilt_deg=20.0,
        max_yaw_rate_deg_s=60.0, min_thrust=0.1, max_thrust=0.8, stop_margin_m=2.0),
    "global_polygon": EnvelopeSettings(
        polygon=((47.3975, 8.5453), (47.3975, 8.5459), (47.3980, 8.5459), (47.3980, 8.5453)),
        polygon_frame="global", max_distance_m=40.0,  # type: ignore[arg-type]
        min_altitude_m=-2.0, max_altitude_m=60.0, max_up_speed_m_s=1.0),
}


def f(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False)


YAW: st.SearchStrategy[dict[str, float]] = st.one_of(
    st.just({}), f(-3.2, 3.2).map(lambda y: {"yaw_rad": y}),
    f(-8.0, 8.0).map(lambda r: {"yaw_rate_rad_s": r}))


def _quaternion(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return (cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy)


SETPOINTS: st.SearchStrategy[Setpoint] = st.one_of(
    st.builds(lambda p, y: PositionNed(*p, **y), st.tuples(f(-60, 60), f(-60, 60), f(-70, 5)),
              YAW),
    st.builds(lambda v, y: VelocityNed(*v, **y), st.tuples(f(-25, 25), f(-25, 25), f(-8, 8)),
              YAW),
    st.builds(VelocityBody, f(-25, 25), f(-25, 25), f(-8, 8), f(-8, 8)),
    st.builds(lambda a, y: AccelerationNed(*a, **y),
              st.tuples(f(-12, 12), f(-12, 12), f(-12, 12)), YAW),
    st.builds(lambda p, v, a, y: PositionVelocityNed(*p, *v, **a, **y),  # type: ignore[misc]
              st.tuples(f(-60, 60), f(-60, 60), f(-70, 5)),
              st.tuples(f(-20, 20), f(-20, 20), f(-6, 6)),
              st.one_of(st.just({}), st.tuples(f(-8, 8), f(-8, 8), f(-8, 8)).map(
                  lambda a: {"north_m_s2": a[0], "east_m_s2": a[1], "down_m_s2": a[2]})),
              YAW),
    st.builds(GlobalPosition,
              f(47.3970, 47.3985), f(8.5448, 8.5464), f(-10, 580),
              st.sampled_from(list(AltitudeFrame))),
    st.builds(lambda r, p, y, t: Attitude(*_quaternion(r, p, y), t),
              f(-1.6, 1.6), f(-1.6, 1.6), f(-3.2, 3.2), f(0, 1)),
    st.builds(BodyRates, f(-6, 6), f(-6, 6), f(-6, 6), f(0, 1)),
)
ODD_HEADINGS = [math.nan, -0.0, 1e30, math.inf, -math.inf]
ODD = st.sampled_from([math.nan, math.inf, -math.inf, 3.4e38, -3.4e38, 1e-45])
POSITIONS = st.tuples(f(-80, 80), f(-80, 80), f(-80, 10), f(-20, 20), f(-20, 20), f(-8, 8)) | (
    st.tuples(*[f(-80, 80) | ODD] * 6))  # PX4's NaN "unknown", overflowed floats
STEPS = st.lists(st.one_of(
    st.tuples(st.just("setpoint"), SETPOINTS),
    st.tuples(st.just("position"), POSITIONS),
    st.tuples(st.just("heading"), f(-4, 4) | st.sampled_from(ODD_HEADINGS)),
    st.tuples(st.just("wait"), st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.35])),
), min_size=2, max_size=14)


def _commanded_position(sp: Setpoint) -> Any:
    if isinstance(sp, PositionNed | PositionVelocityNed):
        return (sp.north_m, sp.east_m, sp.down_m)
    if isinstance(sp, GlobalPosition):
        return (sp.lat_deg, sp.lon_deg, sp.alt_m)
    return None


@fuzz_settings("test_engine_streams_only_valid_in_envelope_setpoints_whatever_the_telemetry")
@given(fence=st.sampled_from(sorted(FENCES)), steps=STEPS)
@example(fence="concave_polygon", steps=[  # found in CI: a hold where a command had pointed
    ("setpoint", PositionNed(0.0, 0.0, 0.0)), ("setpoint", PositionNed(0.0, 12.0, 0.0)),
    ("position", (0.0, 12.0, 0.0, 0.0, 0.0, 0.0))])
@example(fence="concave_polygon", steps=[  # found in CI: a fence-line hold outside a corner
    ("setpoint", PositionNed(0.0, 0.0, 0.0)), ("setpoint", VelocityNed(0.0, 1.0, 0.0)),
    ("position", (0.0, 0.0, -math.inf, 0.0, 0.0, 0.0)),
    ("position", (0.0, 48.0, 0.0, 0.0, 0.0, 0.0))])
def test_engine_streams_only_valid_in_envelope_setpoints_whatever_the_telemetry(
    fence: str, steps: list[tuple[str, Any]], cases: Cases
) -> None:
    """One case: an engine ACTIVE inside one of three fences gets 2 to 14 random steps:
    a commanded setpoint, a vehicle position and velocity, a heading, or time passing."""
    cases.add()
    bench = engaged_bench(PositionNed(0.0, 0.0, -5.0), FENCES[fence], HOME)
    start = bench.now
    commanded: set[Any] = set()
    commanded_values: set[Any] = set()
    reported = {(bench.fc.north_m, bench.fc.east_m, bench.fc.down_m)}  # where a hold may be
    for i, (what, value) in enumerate(steps):
        if what == "setpoint":
            bench.feed(SetSetpoint(f"fz{i}", value))
            commanded.add(_commanded_position(value))
            commanded_values.add(value)
        elif what == "position":
            n, e, d, vn, ve, vd = value
            bench.fc.north_m, bench.fc.east_m, bench.fc.down_m = n, e, d
            reported.add((n, e, d))
            bench.fc.boot_ms += 1  # the FC's clock: never backwards (that means a reboot)
            bench.feed(FcLocalPosition(bench.fc.boot_ms, n, e, d, vn, ve, vd, **FC))
        elif what == "heading":
            bench.fc.boot_ms += 1
            bench.feed(FcAttitude(bench.fc.boot_ms, 0.0, 0.0, value, **FC))
        else:
            bench.step(value)
    bench.step(0.2)
    judge = EnvelopeJudge(FENCES[fence], HOME)
    sent = {a.setpoint for t, a in bench.log if isinstance(a, SendSetpoint) and t >= start}
    for sp in sent:  # the stream repeats each setpoint: judge each value once
        msg = wire(sp)
        verdict = px4_verdict_of_message(msg)
        assert verdict.kind == "valid", (sp, verdict)
        # A hold is a PositionVelocityNed the commander did not send, at a position it never
        # commanded or where the vehicle was reported (holding there is right even outside
        # the fence: a commanded position can coincide with one, found by hypothesis).
        position = _commanded_position(sp)
        hold = (isinstance(sp, PositionVelocityNed) and sp not in commanded_values
                and (position not in commanded or position in reported))
        problems = judge.problems(msg, hold_slack_m=math.inf if hold else 0.0)
        assert not problems, (sp, problems)
    if bench.engine.phase is Phase.ACTIVE:
        cases.note("active_at_end")
