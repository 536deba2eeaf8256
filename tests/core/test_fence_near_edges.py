"""The fence's near edges (offboardd/core/polygon.py NearEdges): a tick shapes against the
polygon's edges the vehicle could reach, and a position report asks only whether it is
inside, from edges kept between calls. Held here to the full walk of every edge: along
random flights through random concave polygons, every shaped setpoint and every breach
verdict is the one the full walk gives, to the last bit."""

from __future__ import annotations

import math
import random

import pytest

import offboardd.core.envelope as envelope_module
from offboardd.core.envelope import Envelope
from offboardd.core.envelope_geometry import FenceShape
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAttitude, FcHeartbeat, FcHomePosition, FcLocalPosition
from offboardd.core.modes import Px4Mode
from offboardd.core.polygon import Edge, NearEdges, point_in_polygon
from offboardd.core.setpoints import (
    AccelerationNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.core.vehicle import VehicleState

from .bench import FC

HOME = FcHomePosition(47.397742, 8.545594, 488.0, 0.0, 0.0, 0.0, **FC)


class EveryEdge(NearEdges):
    """The full walk, as before NearEdges: every edge, point_in_polygon each time."""

    def around(self, n: float, e: float, reach_m: float) -> tuple[bool, tuple[Edge, ...]]:
        return point_in_polygon(n, e, self.polygon), self.edges

    def inside(self, n: float, e: float, *, walk: bool = True) -> bool:
        return point_in_polygon(n, e, self.polygon)


class FullWalkFence(FenceShape):
    """The fence's checks as they were before NearEdges, over every edge."""

    def outside(self, north_m: float, east_m: float, down_m: float) -> bool:
        face = self.nearest(north_m, east_m, down_m)
        return face is not None and face.distance_m < 0.0

    def contains_vehicle(self, north_m: float, east_m: float, down_m: float) -> bool:
        face = self.nearest(north_m, east_m, down_m)
        return face is None or face.distance_m >= 0.0


def star(rng: random.Random, corners: int) -> tuple[tuple[float, float], ...]:
    """A concave polygon: corners at random radii (20-100 m) around the origin."""
    return tuple(
        (r * math.cos(a), r * math.sin(a))
        for a, r in ((2 * math.pi * k / corners, rng.uniform(20.0, 100.0))
                     for k in range(corners)))


def vehicle(n: float, e: float, vn: float, ve: float, yaw: float) -> VehicleState:
    vs = VehicleState(estimate_timeout_s=0.5)
    vs.accepts(FcHeartbeat(12, 2, 129, Px4Mode.OFFBOARD.custom_mode, 4, **FC))
    vs.fold(FcLocalPosition(1000, n, e, -5.0, vn, ve, 0.0, **FC), 1.0)
    vs.fold(FcAttitude(1000, 0.0, 0.0, yaw, **FC), 1.0)
    return vs


def setpoint(rng: random.Random, n: float, e: float) -> Setpoint:
    v = (rng.uniform(-12.0, 12.0), rng.uniform(-12.0, 12.0), rng.uniform(-1.5, 1.5))
    kind = rng.randrange(4)
    if kind == 0:
        return VelocityNed(*v)
    if kind == 1:
        return VelocityBody(*v)
    if kind == 2:
        return PositionVelocityNed(n, e, -5.0, *v, north_m_s2=rng.uniform(-3, 3),
                                   east_m_s2=rng.uniform(-3, 3), down_m_s2=0.0)
    return AccelerationNed(rng.uniform(-3.0, 3.0), rng.uniform(-3.0, 3.0), rng.uniform(-1, 1))


def envelopes(polygon: tuple[tuple[float, float], ...], stop_margin_m: float = 1.0
              ) -> tuple[Envelope, Envelope]:
    settings = EnvelopeSettings(polygon=polygon, stop_margin_m=stop_margin_m,
                                max_altitude_m=50.0)
    near, full = Envelope(settings), Envelope(settings)
    near.set_home(HOME)
    full.set_home(HOME)
    full.fence = full_walk(full)
    return near, full


def full_walk(env: Envelope) -> FullWalkFence:
    assert env.fence is not None
    fence = FullWalkFence(env.settings, env.fence.home)
    fence.near = EveryEdge(fence.polygon)
    return fence


@pytest.mark.parametrize("seed", range(12))
def test_shaping_and_breach_from_the_near_edges_are_the_full_walks(seed: int) -> None:
    fly_and_compare(random.Random(seed))


def test_an_acceleration_capped_past_its_bound_is_shaped_against_every_face(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The near faces' answer is only used while the capping kept the vector within
    the bound that made the faces left out irrelevant; past it, every face counts. With
    no room at all, every capped acceleration takes that way, and still agrees."""
    monkeypatch.setattr(envelope_module, "_ACCEL_BOUND_FACTOR", 0.0)
    fly_and_compare(random.Random(99))


def fly_and_compare(rng: random.Random) -> None:
    polygon = star(rng, rng.choice([3, 5, 8, 17, 64, 256]))
    near, full = envelopes(polygon, rng.choice([0.0, 0.3, 1.0]))
    held = 0
    n, e = rng.uniform(-15.0, 15.0), rng.uniform(-15.0, 15.0)
    heading = rng.uniform(0.0, 2 * math.pi)
    for _ in range(1500):  # a wandering flight, in and out of the polygon
        step = rng.choice([0.0, 0.05, 0.3, 1.5, 6.0])
        heading += rng.gauss(0.0, 0.4)
        n, e = n + step * math.cos(heading), e + step * math.sin(heading)
        if not point_in_polygon(n, e, polygon) and rng.random() < 0.7:
            heading = math.atan2(-e, -n) + rng.gauss(0.0, 0.3)  # mostly back in
        vs = vehicle(n, e, rng.uniform(-12, 12), rng.uniform(-12, 12), rng.uniform(-3, 3))
        sp = setpoint(rng, n, e)
        shaped = near.shape(sp, vs, 1.0)
        assert shaped == full.shape(sp, vs, 1.0), (n, e, sp)
        held += shaped[1] is not None and "holding at the line" in shaped[1][1]
        assert near.breach(n, e, -5.0) == full.breach(n, e, -5.0), (n, e)
        assert near.inside_seen == full.inside_seen
    assert near.fence is not None and near.fence.near is not None
    # the walks are a fraction of the calls (two a step): the point of it
    assert near.fence.near.walks < 1500
    assert held > 0  # the hold at the stop line was judged too


def test_a_hovering_vehicle_walks_the_edges_once() -> None:
    near, _ = envelopes(star(random.Random(1), 256))
    vs = vehicle(3.0, 4.0, 0.5, 0.0, 0.0)
    for _ in range(100):
        near.shape(VelocityNed(0.5, 0.0, 0.0), vs, 1.0)
        near.breach(3.0, 4.0, -5.0)
    assert near.fence is not None and near.fence.near is not None
    assert near.fence.near.walks == 1


def test_the_edges_are_walked_again_once_the_vehicle_may_have_crossed_one() -> None:
    square = ((-10.0, -10.0), (-10.0, 10.0), (10.0, 10.0), (10.0, -10.0))
    edges = NearEdges(square)
    assert edges.inside(9.0, 0.0) and edges.walks == 1  # 1 m from the edge at north 10
    assert edges.inside(9.5, 0.0) and edges.walks == 1  # moved 0.5 m: still clear
    assert not edges.inside(10.5, 0.0) and edges.walks == 2  # 1.5 m: walked, outside
    inside, near = edges.around(-5.0, 0.0, 3.0)  # 5 m from the nearest edge
    assert inside and edges.walks == 3
    # kept: the edges within 1.5 x 3 + 5 m of it, the one at north -10 only
    assert near == (((-10.0, -10.0), (-10.0, 10.0)),)
    assert edges.around(-4.0, 0.0, 3.0) == (True, near) and edges.walks == 3  # 1 m on
    edges.around(-4.0, 0.0, 9.0)  # faster: 1 + 9 m is beyond the 9.5 m kept
    assert edges.walks == 4


def test_a_point_within_rounding_of_an_edge_is_judged_by_the_full_walk() -> None:
    """Found by review: the kept answer was taken for a point within float rounding of an
    edge (or within the 3e-5 m closest_point leaves a very short edge unresolved), where
    the full walk said otherwise: a breach one report late, a face left out one tick."""
    tiny = ((0.0, 0.0), (0.0, 20.0), (20.0, 20.0), (20.0, 10.00002), (20.0, 10.0), (20.0, 0.0))
    settings = EnvelopeSettings(polygon=tiny, stop_margin_m=0.0, breach_tolerance_m=0.0)
    near, full = Envelope(settings), Envelope(settings)
    for env in (near, full):
        env.set_home(HOME)
    full.fence = full_walk(full)
    inside, outside = (20.0 - 1e-6, 10.00001), (20.0 + 5e-6, 10.00001)
    for env in (near, full):
        assert env.breach(*inside, -5.0) is None
    breached = full.breach(*outside, -5.0)
    assert breached is not None and near.breach(*outside, -5.0) == breached

    triangle = ((24.89078843106305, 7.6382271246125235),
                (-8.047206586637277, 13.394292663491939),
                (-5.278807083101465, -9.874825232593688))
    near, full = envelopes(triangle)
    a = (-5.100091120752213, -9.7710833061153)
    on_edge = (-5.1000912653278325, -9.771083057056032)
    sp = VelocityNed(-1.891101470755121, 0.4788017388433053, 0.0)
    for env in (near, full):
        env.shape(sp, vehicle(*a, 0.0, 0.0, 0.0), 1.0)
    at_edge = vehicle(*on_edge, 0.0, 0.0, 0.0)
    assert near.shape(sp, at_edge, 1.0) == full.shape(sp, at_edge, 1.0)
