"""The scenario's pure parts: mission data, geometry, the report, the terminal display,
the position parser and the CLI's broker argument. No sockets, no clock."""

from __future__ import annotations

import argparse
import io
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offboardd.scenario import geometry as geo
from offboardd.scenario.cli import broker_address
from offboardd.scenario.display import ProgressDisplay, bar, format_progress
from offboardd.scenario.feed import parse_position
from offboardd.scenario.mission import (
    MISSIONS,
    GotoLeg,
    LandLeg,
    Mission,
    OrbitLeg,
    PathLeg,
    ReleaseLeg,
    TakeoffLeg,
    VelocityLeg,
    square_mission,
)
from offboardd.scenario.report import LegResult, PathSample, Progress, Summary

coord = st.floats(-100, 100, allow_nan=False)
vec = st.tuples(coord, coord, coord)


def test_square_mission_flies_takeoff_a_rounded_path_an_orbit_velocity_release_land() -> None:
    m = square_mission(altitude_m=5.0, side_m=8.0, speed_m_s=3.0, velocity_s=3.0)
    kinds = [type(leg) for leg in m.legs]
    assert kinds == [TakeoffLeg, PathLeg, OrbitLeg, VelocityLeg, ReleaseLeg, LandLeg]
    path = m.legs[1]
    assert isinstance(path, PathLeg) and path.corner_radius_m == 2.0
    assert path.waypoints_ned_m == ((8, 0, -5), (8, 8, -5), (0, 8, -5), (0, 0, -5))
    orbit = m.legs[2]
    assert isinstance(orbit, OrbitLeg)
    assert orbit.center_ned_m == (4.0, 0.0, -5) and orbit.radius_m == 4.0  # through the start
    velocity = m.legs[3]
    assert isinstance(velocity, VelocityLeg)
    assert velocity.velocity_ned_m_s == (0.0, 2.0, 0.0) and velocity.duration_s == 3.0
    assert set(MISSIONS) >= {"square", "short"}


def test_a_mission_must_start_with_a_takeoff_and_stay_in_sane_bounds() -> None:
    with pytest.raises(ValueError, match="takeoff"):
        Mission("x", (GotoLeg("g", (1, 0, -2)),))
    with pytest.raises(ValueError, match="altitude_m"):
        Mission("x", (TakeoffLeg("t", 500.0),))
    with pytest.raises(ValueError, match="handed back"):
        Mission("x", (TakeoffLeg("t", 2.0), ReleaseLeg(), GotoLeg("g", (1, 0, -2))))
    with pytest.raises(ValueError, match="handed back"):
        Mission("x", (TakeoffLeg("t", 2.0), LandLeg(), TakeoffLeg("again", 2.0)))
    with pytest.raises(ValueError, match="duration_s"):
        Mission("x", (TakeoffLeg("t", 2.0), VelocityLeg("v", (1, 0, 0), 0.0)))


def test_distance_to_segment_is_the_cross_track_error() -> None:
    a, b = (0.0, 0.0, -5.0), (8.0, 0.0, -5.0)
    assert geo.distance_to_segment_m((4.0, 0.3, -5.0), a, b) == pytest.approx(0.3)
    assert geo.distance_to_segment_m((-1.0, 0.0, -5.0), a, b) == pytest.approx(1.0)  # before a
    assert geo.distance_to_segment_m((9.0, 0.0, -5.0), a, b) == pytest.approx(1.0)  # past b
    assert geo.distance_to_segment_m((1.0, 1.0, 1.0), a, a) == pytest.approx(
        math.dist((1, 1, 1), a))


@given(vec, vec, vec)
def test_segment_distance_is_never_more_than_to_either_end(p: geo.Vector, a: geo.Vector,
                                                           b: geo.Vector) -> None:
    d = geo.distance_to_segment_m(p, a, b)
    assert 0.0 <= d <= min(geo.distance_m(p, a), geo.distance_m(p, b)) + 1e-6


def test_fractions_are_clamped_to_0_1() -> None:
    start, target = (0.0, 0.0, 0.0), (0.0, 0.0, -4.0)
    assert geo.approach_fraction(start, target, (0.0, 0.0, -1.0)) == pytest.approx(0.25)
    assert geo.approach_fraction(start, target, (0.0, 0.0, 3.0)) == 0.0  # moved away
    assert geo.approach_fraction(start, start, (5.0, 5.0, 5.0)) == 1.0  # nothing to fly
    assert geo.time_fraction(1.5, 3.0) == 0.5
    assert geo.time_fraction(9.0, 3.0) == 1.0


def _progress(**kw: object) -> Progress:
    base: dict[str, object] = dict(
        leg_index=1, leg_count=8, leg_name="square north", fraction=0.5, phase="active",
        fc_mode="OFFBOARD", armed=True, position_ned_m=(4.0, 0.1, -5.0), elapsed_s=6.0)
    base.update(kw)
    return Progress(**base)  # type: ignore[arg-type]


def test_progress_line_shows_leg_bar_phase_mode_and_position() -> None:
    line = format_progress(_progress())
    assert line.startswith("2/8 square north")
    assert bar(0.5) in line and " 50%" in line
    assert "active/OFFBOARD" in line and "alt  5.0 m" in line and "N   4.0" in line
    assert "disarmed" in format_progress(_progress(armed=False))
    assert "position unknown" in format_progress(_progress(position_ned_m=None))
    assert bar(0.0) == "[" + "-" * 20 + "]" and bar(2.0) == "[" + "#" * 20 + "]"


def test_plain_display_writes_whole_lines_a_few_per_leg() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, tty=False)
    for i in range(30):  # 3 s of 10 Hz updates on one leg
        display(_progress(fraction=i / 30, elapsed_s=6.0 + i / 10))
    display(_progress(fraction=1.0, elapsed_s=9.0, leg_done=True))
    display(_progress(leg_index=2, leg_name="square east", fraction=0.0, elapsed_s=9.0,
                      leg_done=True))
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert 3 <= len(lines) <= 7, lines
    assert lines[-2].endswith("done") and lines[-1].endswith("FAILED")


def test_tty_display_redraws_in_place_and_ends_each_leg_with_a_newline() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, tty=True)
    display(_progress(fraction=0.2))
    display(_progress(fraction=0.6))
    assert out.getvalue().count("\r") == 2 and "\n" not in out.getvalue()
    display(_progress(fraction=1.0, leg_done=True))
    assert out.getvalue().endswith("\n")
    display(_progress(leg_index=2, fraction=0.1))
    display.close()  # Ctrl-C mid-leg: the line is ended, not left open
    assert out.getvalue().endswith("\n")


def test_summary_lines_and_json() -> None:
    legs = (
        LegResult("takeoff", "takeoff", True, 0.0, 3.5, 0.05),
        LegResult("square north", "goto", True, 3.5, 3.0, 0.21),
        LegResult("release", "release", True, 6.5, 0.2, None),
        LegResult("land", "land", False, 6.7, 60.0, None, "did not happen within 60 s"),
    )
    samples = (PathSample(0.0, 0.0, 0.0, 0.0), PathSample(1.0, 0.0, 0.0, -2.0))
    summary = Summary("square", False, "land did not happen", legs, 66.7, samples, samples)
    assert summary.max_tracking_error_m == pytest.approx(0.21)
    text = "\n".join(summary.lines())
    assert "FAILED: land did not happen" in text and "max tracking error 0.21 m" in text
    assert "FAIL land" in text and "ok   takeoff" in text
    doc = json.loads(json.dumps(summary.as_dict()))
    assert doc["flown"][1] == [1.0, 0.0, 0.0, -2.0] and doc["legs"][1]["kind"] == "goto"
    assert "flown" not in summary.as_dict(samples=False)
    assert samples[1].altitude_m == 2.0


@pytest.mark.parametrize(("payload", "expected"), [
    (b'{"north_m": 1, "east_m": 2.5, "down_m": -3, "lat_deg": 47.3}', (1.0, 2.5, -3.0)),
    (b'{"north_m": null, "east_m": 0, "down_m": 0}', None),  # no local position
    (b'{"lat_deg": 47.3}', None),
    (b'{"north_m": true, "east_m": 0, "down_m": 0}', None),
    (b"[1, 2, 3]", None),
    (b"not json", None),
])
def test_position_documents(payload: bytes, expected: geo.Vector | None) -> None:
    assert parse_position(payload) == expected


def test_broker_argument() -> None:
    assert broker_address("10.0.0.2:1884") == ("10.0.0.2", 1884)
    assert broker_address("broker.local") == ("broker.local", 1883)
    for bad in ("host:x", ":1883", "host:70000"):
        with pytest.raises(argparse.ArgumentTypeError):
            broker_address(bad)
