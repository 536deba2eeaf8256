"""A motion that carries the running motion's speed on keeps the new path's limits
(found by review: the carried speed held the whole leg, above its vertical speed and its
arc's speed and acceleration limits). Faster than the new path allows, it stops first."""

from __future__ import annotations

import math

from offboardd.core.actions import SendSetpoint
from offboardd.core.events import FcLocalPosition
from offboardd.core.motion_commands import Goto, Orbit, Stop
from offboardd.core.setpoints import PositionNed, PositionVelocityNed
from tests.core.bench import FC, Bench

UP = PositionNed(0, 0, -5)


def _stream(b: Bench, since: float) -> list[PositionVelocityNed]:
    out = [a.setpoint for _, a in b.actions(SendSetpoint, since)]
    assert all(isinstance(sp, PositionVelocityNed) for sp in out)
    return out  # type: ignore[return-value]


def _cruising_north(b: Bench) -> tuple[float, float, float]:
    b.engage(UP)
    b.feed(Goto("fast", PositionNed(400, 0, -5), speed_m_s=12.0))
    b.step(8.0)  # at 12 m/s, heading north
    motion = b.engine.feed.motion
    assert motion is not None
    st = motion.state_at(b.now)
    assert abs(st.velocity[0] - 12.0) < 1e-6
    return st.position


def test_a_carried_speed_never_exceeds_the_paths_descent_limit() -> None:
    b = Bench(follow=True)
    n, e, d = _cruising_north(b)
    t = b.now
    slope = math.radians(13)  # within the 14 deg "aligned" cone: speed carried on
    b.feed(Goto("descend", PositionNed(n + 100 * math.cos(slope), e, d + 100 * math.sin(slope)),
                speed_m_s=2.0))
    assert b.reply("descend").ok
    b.step(6.0)
    worst_down = max(sp.down_m_s for sp in _stream(b, t))
    # [envelope] max_down_speed_m_s = 1.5 (docs/motion.md: "Speeds and accelerations are
    # planned within the envelope's limits, so the stream never needs clamping")
    assert worst_down <= 1.5 + 1e-6, f"streamed {worst_down:.2f} m/s down"


def test_a_carried_speed_never_exceeds_a_small_orbits_acceleration() -> None:
    b = Bench(follow=True)
    n, e, d = _cruising_north(b)
    t = b.now
    # the vehicle is exactly on the circle, moving along its tangent (clockwise)
    b.feed(Orbit("o", PositionNed(n, e + 0.5, d), radius_m=0.5, speed_m_s=2.0, turns=20))
    assert b.reply("o").ok
    b.step(6.0)
    stream = _stream(b, t)
    worst_a = max(math.sqrt(sp.north_m_s2**2 + sp.east_m_s2**2 + sp.down_m_s2**2)  # type: ignore[operator]
                  for sp in stream)
    worst_v = max(math.hypot(sp.north_m_s, sp.east_m_s) for sp in stream)
    # arc speed limit sqrt(0.7 a r) = 1.02 m/s; max_acceleration_m_s2 = 3
    assert worst_a <= 3.0 + 1e-6, f"streamed {worst_a:.2f} m/s^2, {worst_v:.2f} m/s on r=0.5 m"


def test_a_stop_starts_from_a_velocity_within_the_envelope() -> None:
    """Found by review: with no motion running a motion starts from the estimated velocity
    as it is; a bad estimate of 50 m/s planned (and streamed) a 400 m stop."""
    b = Bench(follow=True)
    b.engage(UP)
    t = b.now
    b.feed(FcLocalPosition(b.fc.boot_ms, 0.0, 0.0, -5.0, 50.0, 0.0, 4.0, **FC))
    b.feed(Stop("s"))
    assert b.reply("s").ok
    b.step(8.0)
    stream = _stream(b, t)
    assert max(math.hypot(sp.north_m_s, sp.east_m_s) for sp in stream) <= 12.0 + 1e-6
    assert max(sp.down_m_s for sp in stream) <= 1.5 + 1e-6
    assert max(sp.north_m for sp in stream) < 30.0  # 12 m/s braked at 3 m/s^2: ~24 m
