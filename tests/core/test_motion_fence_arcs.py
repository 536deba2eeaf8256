"""The fence check of a motion's arcs (motion_fence): exact for level arcs, whatever their
length or turns, and cheap enough to run between two ticks of the stream.

It runs on the control loop's thread, so its time is a gap in the setpoint stream. It
sampled every arc every 0.2 m: a 100-turn orbit of 30 m held the loop for 1.9 s against a
256-vertex polygon (0.12 s with a distance fence alone), longer than PX4's COM_OF_LOSS_T,
and the vehicle went to PX4's offboard-loss failsafe (review, 2026-11-29)."""

from __future__ import annotations

import math
import random

import pytest

import offboardd.core.envelope_geometry as geometry
from offboardd.core.envelope import Envelope
from offboardd.core.envelope_settings import EnvelopeSettings, PolygonFrame
from offboardd.core.events import FcHomePosition
from offboardd.core.motion import Motion, Start, plan
from offboardd.core.motion_commands import FollowPath, MotionCommand, Orbit
from offboardd.core.motion_fence import first_point_outside
from offboardd.core.motion_settings import MotionSettings
from offboardd.core.polygon import edges_near, point_in_polygon
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import PositionNed

from .bench import FC

AT_5M = Start((0.0, 0.0, -5.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0)


def _envelope(settings: EnvelopeSettings) -> Envelope:
    envelope = Envelope(settings)
    envelope.set_home(FcHomePosition(47.4, 8.5, 488.0, 0.0, 0.0, 0.0, **FC))
    return envelope


def _planned(cmd: MotionCommand, start: Start = AT_5M) -> Motion:
    return plan(cmd, start, MotionSettings().limits(EnvelopeSettings(), 3.0), None)


def _circle(radius_m: float, vertices: int) -> tuple[tuple[float, float], ...]:
    return tuple((radius_m * math.cos(2 * math.pi * k / vertices),
                  radius_m * math.sin(2 * math.pi * k / vertices)) for k in range(vertices))


def _star(rng: random.Random, corners: int, min_radius_m: float
          ) -> tuple[tuple[float, float], ...]:
    """A star-shaped (often concave) polygon around home."""
    radii = [rng.uniform(min_radius_m, 25.0) for _ in range(corners)]
    return tuple((r * math.cos(2 * math.pi * k / corners), r * math.sin(2 * math.pi * k / corners))
                 for k, r in enumerate(radii))


def worst_signed_m(motion: Motion, envelope: Envelope, turn_m: float = math.inf) -> float:
    """How far outside the fence (< 0) any point of the motion comes, every 2 cm (an arc
    over its first `turn_m` only: after a turn it repeats its points)."""
    fence = envelope.fence
    assert fence is not None
    worst = math.inf
    for leg in motion.profile.legs:
        seg = leg.segment
        length = min(seg.length_m, turn_m)
        steps = max(1, math.ceil(length / 0.02))
        for k in range(steps + 1):
            face = fence.nearest(*seg.point(length * k / steps))
            assert face is not None
            worst = min(worst, face.distance_m)
    return worst


@pytest.mark.parametrize("seed", range(40))
def test_an_orbit_is_judged_exactly_against_concave_and_distance_fences(seed: int) -> None:
    rng = random.Random(seed)
    corners = rng.randint(5, 9)
    polygon = _star(rng, corners, 8.0)
    envelope = _envelope(EnvelopeSettings(
        polygon=polygon, max_distance_m=rng.choice([None, rng.uniform(10.0, 25.0)])))
    radius = rng.uniform(0.5, 12.0)
    orbit = Orbit("o", PositionNed(rng.uniform(-6, 6), rng.uniform(-6, 6), -5.0), radius_m=radius,
                  speed_m_s=3.0, turns=rng.choice([0.3, 1.0, 2.5]), clockwise=rng.random() < 0.5)
    motion = _planned(orbit)
    refusal = first_point_outside(motion, envelope)
    worst_m = worst_signed_m(motion, envelope, turn_m=2 * math.pi * radius)
    if refusal is not None:
        assert worst_m < 0, refusal  # never a false refusal
        assert refusal[0] in (Reason.FENCE_POLYGON, Reason.FENCE_DISTANCE)
    else:  # exact: not even an arc's sagitta out
        assert worst_m > -1e-6, worst_m


@pytest.mark.parametrize("seed", range(30))
def test_a_climbing_path_is_never_refused_falsely_nor_let_out(seed: int) -> None:
    rng = random.Random(1000 + seed)
    envelope = _envelope(EnvelopeSettings(polygon=_star(rng, 7, 10.0), min_altitude_m=2.0,
                                          max_altitude_m=12.0))
    waypoints = tuple(PositionNed(rng.uniform(-12, 12), rng.uniform(-12, 12),
                                  rng.uniform(-13.0, -1.0)) for _ in range(rng.randint(2, 5)))
    motion = _planned(FollowPath("p", waypoints, speed_m_s=3.0, corner_radius_m=3.0))
    refusal = first_point_outside(motion, envelope)
    worst_m = worst_signed_m(motion, envelope)
    if refusal is not None:
        assert worst_m < 0, refusal
    else:  # a tilted arc near the fence is sampled every 0.2 m: its sagitta at most
        assert worst_m > -0.01, worst_m


def _counting_polygon_tests(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    inner = point_in_polygon

    def counted(n: float, e: float, polygon: tuple[tuple[float, float], ...]) -> bool:
        calls[0] += 1
        return inner(n, e, polygon)

    monkeypatch.setattr(geometry, "point_in_polygon", counted)
    return calls


@pytest.mark.parametrize("turns", [1.0, 100.0])
def test_an_orbit_costs_the_same_checks_whatever_its_turns(
        turns: float, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_polygon_tests(monkeypatch)
    envelope = _envelope(EnvelopeSettings(polygon=_circle(500.0, 256), max_distance_m=2000.0))
    motion = _planned(Orbit("o", PositionNed(0, 0, -5), radius_m=30.0, speed_m_s=5.0, turns=turns))
    assert first_point_outside(motion, envelope) is None
    assert calls[0] <= 5  # the entry line's ends and the arc's: it sampled 94,000 points


def test_a_long_orbit_crossing_the_fence_is_refused_where_it_first_leaves() -> None:
    envelope = _envelope(EnvelopeSettings(polygon=((-20.0, -20.0), (-20.0, 20.0), (10.0, 20.0),
                                                   (10.0, -20.0))))
    # centre (0, 0), 15 m: north of 10 m is outside; clockwise from due east (the start)
    orbit = Orbit("o", PositionNed(0, 0, -5), radius_m=15.0, speed_m_s=3.0, turns=50.0)
    motion = _planned(orbit, Start((0.0, 15.0, -5.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0))
    refusal = first_point_outside(motion, envelope)
    assert refusal is not None and refusal[0] is Reason.FENCE_POLYGON
    # clockwise seen from above runs from east towards south, so it leaves through the
    # north edge last: at (10, -11.2) after three quarters of a turn
    assert "(10.0, -11.2, -5.0)" in refusal[1], refusal[1]


def test_a_level_path_of_400_corners_checks_each_edge_near_it_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting_polygon_tests(monkeypatch)
    envelope = _envelope(EnvelopeSettings(polygon=_circle(500.0, 256)))
    zigzag = tuple(PositionNed((i % 2) * 20.0, i * 1.0, -5.0) for i in range(400))
    motion = _planned(FollowPath("p", zigzag, speed_m_s=5.0, corner_radius_m=5.0))
    assert first_point_outside(motion, envelope) is None
    assert calls[0] <= 2 * len(motion.profile.legs)  # each point tested once, no sampling


def test_edges_near_keeps_every_edge_a_circle_there_can_touch() -> None:
    square = ((-100.0, -100.0), (-100.0, 100.0), (100.0, 100.0), (100.0, -100.0))
    # a circle of 5 m about (0, 95): only the edge at east = 100 comes within its box,
    # though neither of that edge's corners does
    assert edges_near(0.0, 95.0, 5.0, square) == [((-100.0, 100.0), (100.0, 100.0))]
    assert edges_near(0.0, 0.0, 5.0, square) == []
    assert len(edges_near(0.0, 0.0, 100.0, square)) == 4  # touching counts


# -- lines and arcs that meet an edge at an end or graze a corner (review, 2026-11-29) ----
# Points just past the first crossing were tested: a line starting or ending on an edge, or
# grazing a corner, and an orbit entered on an edge, flew metres outside unrefused.

_U = ((0.0, 0.0), (30.0, 0.0), (30.0, 10.0), (10.0, 10.0), (10.0, 20.0), (30.0, 20.0),
      (30.0, 30.0), (0.0, 30.0))  # a notch n in (10, 30], e in (10, 20) is outside


@pytest.mark.parametrize(("start", "waypoints"), [
    ((5.0, 5.0), [(20.0, 10.0), (25.0, 25.0)]),  # via a point on the notch's edge
    ((20.0, 10.0), [(25.0, 25.0)]),  # from the edge across the notch
    ((5.0, 5.0), [(20.0, 10.0), (20.0, 20.0)]),  # along the notch, edge to edge
    ((0.0, 0.0), [(29.0, 29.0)]),  # through the corner (10, 10), then the notch
])
def test_a_line_that_meets_an_edge_at_an_end_or_a_corner_is_judged_whole(
        start: tuple[float, float], waypoints: list[tuple[float, float]]) -> None:
    envelope = _envelope(EnvelopeSettings(polygon=_U, polygon_frame=PolygonFrame.LOCAL))
    cmd = FollowPath("p", tuple(PositionNed(n, e, -5.0) for n, e in waypoints),
                     corner_radius_m=0.0)
    motion = _planned(cmd, Start((*start, -5.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0))
    assert worst_signed_m(motion, envelope) < -4.0  # it does leave, by ~5 m
    refusal = first_point_outside(motion, envelope)
    assert refusal is not None and refusal[0] is Reason.FENCE_POLYGON


def test_a_line_ending_on_an_edge_is_inside() -> None:
    envelope = _envelope(EnvelopeSettings(polygon=_U, polygon_frame=PolygonFrame.LOCAL))
    motion = _planned(FollowPath("p", (PositionNed(20.0, 10.0, -5.0),)),
                      Start((5.0, 5.0, -5.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0))
    assert first_point_outside(motion, envelope) is None


@pytest.mark.parametrize("clockwise", [True, False])
def test_an_orbit_entered_on_an_edge_is_judged_whole(clockwise: bool) -> None:
    """Its meeting at the start came back as 2 pi, not 0, and the exit there went
    untested: 21.7 m outside, accepted."""
    envelope = _envelope(EnvelopeSettings(
        polygon=((0.0, 0.0), (30.0, 3.0), (27.0, 31.0), (-2.0, 25.0))))
    entry, centre = (18.172850877837345, 1.8172850877837345), (6.526787263980969,
                                                               23.634796246591645)
    radius_m = math.dist(entry, centre)
    between = ((entry[0] + centre[0]) / 2, (entry[1] + centre[1]) / 2, -5.0)
    motion = _planned(Orbit("o", PositionNed(*centre, -5.0), radius_m=radius_m,
                            clockwise=clockwise),
                      Start(between, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 0.0))
    assert worst_signed_m(motion, envelope, turn_m=2 * math.pi * radius_m) < -20.0
    refusal = first_point_outside(motion, envelope)
    assert refusal is not None and refusal[0] is Reason.FENCE_POLYGON
