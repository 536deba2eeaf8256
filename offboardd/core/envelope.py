"""The safety envelope: geofence and limits, applied in the core before PX4 sees anything.

Three entry points, all pure (time and vehicle state come in):
- `admit(setpoint)`, once per commanded setpoint (engage, setpoint): the limits of
  envelope_limits (clamp or reject) and the fence check of positions (PositionNed,
  PositionVelocityNed, GlobalPosition): a position outside the fence is rejected, never
  moved. Returns a `Verdict` naming every limit that applied.
- `shape(setpoint, vehicle, now)`, at every stream tick: velocity and acceleration
  setpoints (and PositionVelocityNed's velocity feed-forward, its acceleration
  feed-forward with it) are limited against the vehicle's current position and velocity
  so it stops `stop_margin_m` inside the fence
  (approach speed towards each face capped at sqrt(2 a (d - margin)), the speed from
  which braking at `max_acceleration_m_s2` stops in time); body-frame velocity is
  rotated by the current heading first. Acceleration setpoints are also held to the
  speed limits (an acceleration alone has no top speed).
- `breach(n, e, d)`: the face the vehicle is beyond by more than `breach_tolerance_m`,
  once it has been inside since the engage (a take-off from below `min_altitude_m` is
  not a breach). The engine decides what to do (engine_failsafe).

Home is PX4's HOME_POSITION (the engine asks for it when the fence is enabled); with the
fence enabled and home unknown, engage and setpoints are refused (`home_unknown`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from offboardd.core.envelope_geometry import (
    Boundary,
    FenceShape,
    Home,
    Vec3,
    cap_along,
    cap_along_peak,
    describe_face,
    dot,
    stopping_distance_m,
    stopping_speed_m_s,
)
from offboardd.core.envelope_limits import (
    Limited,
    apply_limits,
    horizontal_acceleration_limit,
    within_tilt,
)
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcHomePosition
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    AltitudeFrame,
    EstimateNeed,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.core.vehicle import VehicleState

# An acceleration setpoint is steered like a velocity loop towards the allowed speed:
# a = K (v_allowed - v), braking no harder than max_acceleration_m_s2. K a little above
# PX4's MPC_XY_VEL_P_ACC (1.8); the stop is planned at ACCEL_PLAN of the braking limit so
# the loop's lag is made up by braking harder rather than by overshooting (tuned in
# tests/core/test_envelope_engine.py against a 10 Hz-telemetry point mass).
ACCEL_STEER_GAIN_PER_S = 3.0
ACCEL_PLAN = 0.5
# Real PX4 follows a velocity setpoint late and never quite stops on one. Measured on PX4
# SIH (main, Aug 2026; tests/px4/test_px4_fence.py): commanded 3 m/s it reached 2.3 m/s,
# a step to 0 took ~0.5 s to show and ~1 s to brake, and "0 m/s" then crept on at
# ~0.27 m/s (the velocity loop's integrator), 1.1 m past an 8 m fence within 2 s. So the
# approach speed allows for PX4_VELOCITY_LAG_S before braking starts, and within
# FENCE_HOLD_ZONE_M of the stop line the stream becomes a position setpoint on the line,
# which PX4's position loop brakes to and holds.
PX4_VELOCITY_LAG_S = 0.5
FENCE_HOLD_ZONE_M = 0.5
_SAME = 1e-6  # below this the shaped vector is the commanded one
# A tick shapes against the polygon's edges the vehicle could reach (polygon.NearEdges):
# beyond that reach a face's allowed speed is above any the setpoint asks. The pad
# covers rounding; an acceleration's bound is checked after (_shape_acceleration).
_REACH_PAD_M = 0.5
_ACCEL_BOUND_FACTOR = 2.0  # of the larger of the asked and the braking acceleration


@dataclass(frozen=True)
class Verdict:
    """`setpoint` is what to fly (None: rejected with `reason` and `message`)."""

    setpoint: Setpoint | None
    clamps: tuple[Limited, ...] = ()
    reason: Reason | None = None
    message: str = ""

    def clamp_text(self) -> str:
        return "clamped: " + "; ".join(c.describe() for c in self.clamps)


class Envelope:
    def __init__(self, settings: EnvelopeSettings) -> None:
        self.settings = settings
        self.home: Home | None = None
        self.fence: FenceShape | None = None
        self.inside_seen = False  # since the engage: arms breach detection
        self.limiting = False  # the last shaped setpoint differed from the commanded one

    @property
    def fence_enabled(self) -> bool:
        return self.settings.fence_enabled

    def set_home(self, event: FcHomePosition) -> None:
        values = (event.lat_deg, event.lon_deg, event.alt_amsl_m,
                  event.north_m, event.east_m, event.down_m)  # fmt: skip
        if not all(math.isfinite(v) for v in values):
            return  # PX4 without a home sends NaN local coordinates: keep waiting
        home = Home(*values)
        if home != self.home:
            self.home = home
            self.fence = FenceShape(self.settings, home) if self.fence_enabled else None

    def forget_home(self) -> None:
        """After an FC reboot or link loss: PX4 sets home afresh."""
        self.home, self.fence = None, None

    def blocker(self) -> tuple[Reason, str] | None:
        if self.fence_enabled and self.fence is None:
            return Reason.HOME_UNKNOWN, (
                "the geofence is enabled but PX4's home position (HOME_POSITION) is not known yet"
            )
        return None

    # -- admission ---------------------------------------------------------------------

    def admit(self, sp: Setpoint) -> Verdict:
        limited = apply_limits(sp, self.settings)
        if limited.rejection is not None:
            r = limited.rejection
            return Verdict(None, limited.clamps, r.reason, f"refused: {r.describe()}")
        out = limited.setpoint
        if _relative(out) and self.home is None:  # streamed in AMSL from home (in_amsl)
            return Verdict(None, limited.clamps, Reason.HOME_UNKNOWN,
                           "refused: a relative altitude needs PX4's home position "
                           "(HOME_POSITION), not known yet")  # fmt: skip
        if self.fence is not None:
            refusal = self._fence_refusal(out)
            if refusal is not None:
                return Verdict(None, limited.clamps, *refusal)
        return Verdict(out, limited.clamps)

    def _fence_refusal(self, sp: Setpoint) -> tuple[Reason, str] | None:
        fence = self.fence
        assert fence is not None
        if isinstance(sp, PositionNed | PositionVelocityNed):
            n, e, d = sp.north_m, sp.east_m, sp.down_m
        elif isinstance(sp, GlobalPosition):
            n, e = fence.home.to_local(sp.lat_deg, sp.lon_deg)
            if sp.altitude_frame is AltitudeFrame.TERRAIN:
                if self.settings.altitude_fenced:
                    return Reason.FENCE_TERRAIN_ALTITUDE, (
                        "refused: an altitude above terrain cannot be checked against "
                        "min_altitude_m / max_altitude_m (use amsl or relative)"
                    )
                d = fence.home.down_m  # horizontal check only
            elif sp.altitude_frame is AltitudeFrame.RELATIVE:
                d = fence.home.down_m - sp.alt_m
            else:
                d = fence.home.down_m - (sp.alt_m - fence.home.alt_amsl_m)
        else:
            return None
        face = fence.nearest(n, e, d)
        if face is None or face.distance_m >= 0.0:
            return None
        return face.reason, (
            f"refused: position ({n:.1f}, {e:.1f}, {d:.1f}) m NED is outside the fence: "
            + describe_face(face, self.settings)
        )

    def in_amsl(self, sp: Setpoint) -> Setpoint:
        """A relative-altitude global setpoint as PX4 should fly it: AMSL, from its home.

        PX4 (v1.16.2, v1.17.0, main of March 2026: mavlink_receiver.cpp) turns
        MAV_FRAME_GLOBAL_RELATIVE_ALT_INT into local z as home.alt - alt - ref_alt instead
        of ref_alt - (home.alt + alt): off by twice the height of home above the local
        origin. On PX4 v1.17.0 SIH it flew a 5 m relative setpoint at 3.44 m
        (tests/px4/test_px4_setpoints.py); on a real vehicle home and origin can be metres
        apart. MAV_FRAME_GLOBAL_INT it converts right, so the daemon sends that, from the
        home it was told (HOME_POSITION), every send."""
        if not _relative(sp) or self.home is None:
            return sp
        assert isinstance(sp, GlobalPosition)
        return dataclasses.replace(sp, alt_m=self.home.alt_amsl_m + sp.alt_m,
                                   altitude_frame=AltitudeFrame.AMSL)  # fmt: skip

    # -- every stream tick -------------------------------------------------------------

    def shape(
        self, sp: Setpoint, vehicle: VehicleState, now: float, path_checked: bool = False
    ) -> tuple[Setpoint, tuple[Reason, str] | None]:
        """What to stream for `sp` now, and (reason, message) when it differs from `sp`.
        `path_checked`: `sp` is a point of a commanded motion whose whole path was checked
        inside the fence (motion_fence) and which stops at its end. It is not stopped at
        the stop margin, which is for open-ended velocity: an end inside the margin was
        held short (0.6 m at motion_done, then crept to). Blind, it still stops."""
        fenced = self.fence is not None
        kinds = (VelocityNed, VelocityBody, PositionVelocityNed)
        if not isinstance(sp, AccelerationNed) and not (fenced and isinstance(sp, kinds)):
            self.limiting = False
            return sp, None
        pos = vehicle.local_position
        need = EstimateNeed.LOCAL_POSITION if fenced else EstimateNeed.LOCAL_VELOCITY
        yaw = vehicle.heading_rad(now)  # None: stale, or a broken FC's inf/NaN (fuzzing)
        if (
            pos is None
            or not vehicle.estimate_valid(need, now)
            or not all(
                math.isfinite(x)
                for x in (
                    pos.north_m,
                    pos.east_m,
                    pos.down_m,
                    pos.north_m_s,
                    pos.east_m_s,
                    pos.down_m_s,
                )
            )
            or (isinstance(sp, VelocityBody) and (yaw is None or not math.isfinite(yaw)))
        ):
            if not fenced:
                self.limiting = False
                return sp, None  # speed-limiting an acceleration needs a velocity: PX4's
            self.limiting = True  # own limits apply; a fence needs a position: stop
            blind = "no valid position estimate: cannot keep the vehicle inside the fence; stopping"
            return _motionless(sp), (Reason.FENCE_STOP, blind)
        if path_checked and isinstance(sp, PositionVelocityNed):
            self.limiting = False
            return sp, None
        vel: Vec3 = (pos.north_m_s, pos.east_m_s, pos.down_m_s)
        accel = self.settings.max_acceleration_m_s2
        at = (pos.north_m, pos.east_m, pos.down_m)
        if isinstance(sp, AccelerationNed):
            # Plan the stop at a fraction of the braking allowed, so steering lag can be
            # made up by braking harder (up to the limit) instead of overshooting. The
            # braking is an acceleration setpoint too, held to max_tilt_deg: plan with it.
            accel = min(accel, horizontal_acceleration_limit(self.settings)) * ACCEL_PLAN
            shaped, why = self._shape_acceleration(sp, vel, at, accel)
        else:
            asked = _velocity_ned(sp, yaw or 0.0)
            asked_m_s = math.sqrt(dot(asked, asked))
            stop_m = max(FENCE_HOLD_ZONE_M, stopping_distance_m(
                asked_m_s + _SAME, accel, PX4_VELOCITY_LAG_S))  # fmt: skip
            ceilings = self._ceilings(at, accel, PX4_VELOCITY_LAG_S, stop_m)
            shaped, why = self._shape_velocity(sp, yaw or 0.0, ceilings)
            if why is not None:
                held = self._hold_at_line(sp, asked, at, ceilings)
                if held is not None:
                    shaped, why = held, (Reason.FENCE_STOP, why[1] + "; holding at the line")
        self.limiting = why is not None
        return shaped, why

    def _hold_at_line(
        self, sp: Setpoint, asked: Vec3, pos: Vec3, ceilings: list[tuple[Vec3, float, Boundary]],
    ) -> PositionNed | None:
        """A position on the stop line when the vehicle is within FENCE_HOLD_ZONE_M of it
        (or past it) and the commanded velocity `asked` (NED) still points out; else None."""
        margin = self.settings.stop_margin_m
        pull_back_m = margin + self.settings.breach_tolerance_m + FENCE_HOLD_ZONE_M
        target = list(pos)
        holding = False
        for normal, _, face in ceilings:
            beyond_m = face.distance_m - margin
            pushing = dot(asked, normal) > 0.0
            if beyond_m < FENCE_HOLD_ZONE_M and pushing and dot(normal, normal) > 0.0:
                holding = True
                # onto the line: forward when short of it, back if past it, up to the
                # breach tolerance beyond the fence; further out (a vehicle engaged outside
                # the fence), where it is: a step back to the line would be flown at PX4's
                # own top speed, not the envelope's (a 51 m step for 1 m/s asked: review).
                # Flying back in stays allowed.
                step_m = beyond_m if beyond_m >= -pull_back_m else 0.0
                for i in range(3):
                    target[i] += normal[i] * step_m
        if not holding or self.fence is None:
            return None
        # Stepping onto several faces at once (a concave corner, a vehicle already outside)
        # can land outside another: then no hold, the shaped velocity stands (found by fuzzing).
        if self.fence.outside(target[0], target[1], target[2]):
            return None
        yaw_rate = getattr(sp, "yaw_rate_rad_s", None)
        yaw = getattr(sp, "yaw_rad", None)
        return PositionNed(target[0], target[1], target[2], yaw_rad=yaw,
                           yaw_rate_rad_s=None if yaw is not None else yaw_rate)

    def _ceilings(
        self, at: Vec3, accel: float, lag_s: float, stop_m: float | None
    ) -> list[tuple[Vec3, float, Boundary]]:
        """Each face's outward direction and the speed allowed towards it from `at`; with
        `stop_m` (how far the vehicle may need to stop, beyond the stop margin), polygon
        edges further away than that may be left out."""
        if self.fence is None:
            return []
        margin = self.settings.stop_margin_m
        reach = None if stop_m is None else margin + stop_m + _REACH_PAD_M
        return [
            (f.outward, stopping_speed_m_s(f.distance_m - margin, accel, lag_s), f)
            for f in self.fence.boundaries(at[0], at[1], at[2], reach)
        ]

    def _shape_velocity(
        self, sp: VelocityNed | VelocityBody | PositionVelocityNed, yaw: float,
        ceilings: list[tuple[Vec3, float, Boundary]],
    ) -> tuple[Setpoint, tuple[Reason, str] | None]:  # fmt: skip
        c, s = math.cos(yaw), math.sin(yaw)
        if isinstance(sp, VelocityBody):  # PX4 rotates BODY_NED velocity by heading (§1)
            v = (c * sp.forward_m_s - s * sp.right_m_s, s * sp.forward_m_s + c * sp.right_m_s,
                 sp.down_m_s)  # fmt: skip
        else:
            v = (sp.north_m_s, sp.east_m_s, sp.down_m_s)
        capped, ok = cap_along(v, [(n, cap) for n, cap, _ in ceilings])
        if not ok:
            capped = (0.0, 0.0, 0.0)
        if max(abs(a - b) for a, b in zip(capped, v, strict=True)) < _SAME:
            return sp, None
        face = max(ceilings, key=lambda t: dot(v, t[0]) - t[1])[2]
        why = (Reason.FENCE_STOP, f"velocity limited to stop {self.settings.stop_margin_m:g} m "
               f"inside the fence ({describe_face(face, self.settings)})")  # fmt: skip
        if isinstance(sp, VelocityBody):
            forward, right = c * capped[0] + s * capped[1], -s * capped[0] + c * capped[1]
            return dataclasses.replace(sp, forward_m_s=forward, right_m_s=right,
                                       down_m_s=capped[2]), why  # fmt: skip
        shaped = dataclasses.replace(sp, north_m_s=capped[0], east_m_s=capped[1],
                                     down_m_s=capped[2])  # fmt: skip
        if isinstance(shaped, PositionVelocityNed):
            binding = [n for n, cap, _ in ceilings if dot(v, n) > cap - _SAME]
            shaped = _braking_feed_forward(shaped, binding, ok)
        return shaped, why

    def _shape_acceleration(
        self, sp: AccelerationNed, vel: Vec3, at: Vec3, accel: float
    ) -> tuple[Setpoint, tuple[Reason, str] | None]:
        """Against the faces near enough to matter: the ones whose allowed acceleration
        is above `bound_m_s2` are left out, which is exact as long as the capping never
        makes the vector longer than that (checked; else against every face)."""
        a = (sp.north_m_s2, sp.east_m_s2, sp.down_m_s2)
        bound_m_s2 = _ACCEL_BOUND_FACTOR * max(math.sqrt(dot(a, a)),
                                               self.settings.max_acceleration_m_s2)
        speed_m_s = math.sqrt(dot(vel, vel)) + bound_m_s2 / ACCEL_STEER_GAIN_PER_S
        near = self._ceilings(at, accel, 0.0, stopping_distance_m(speed_m_s, accel))
        shaped = self._shape_acceleration_against(sp, vel, near, bound_m_s2)
        if shaped is None:
            shaped = self._shape_acceleration_against(sp, vel, self._ceilings(
                at, accel, 0.0, None), None)  # fmt: skip
            assert shaped is not None
        return shaped

    def _shape_acceleration_against(
        self, sp: AccelerationNed, vel: Vec3, ceilings: list[tuple[Vec3, float, Boundary]],
        bound_m_s2: float | None,
    ) -> tuple[Setpoint, tuple[Reason, str] | None] | None:
        """None: the capping went past `bound_m_s2`, so a face left out may have counted."""
        s = self.settings
        speed_h = math.hypot(vel[0], vel[1])
        speed: list[tuple[Vec3, float, Reason]] = [
            ((0.0, 0.0, -1.0), s.max_up_speed_m_s, Reason.LIMIT_VERTICAL_SPEED),
            ((0.0, 0.0, 1.0), s.max_down_speed_m_s, Reason.LIMIT_VERTICAL_SPEED),
        ]
        if speed_h > 1e-3:
            heading = (vel[0] / speed_h, vel[1] / speed_h, 0.0)
            speed.append((heading, s.max_horizontal_speed_m_s, Reason.LIMIT_HORIZONTAL_SPEED))
        every = [(n, cap, f.reason) for n, cap, f in ceilings] + speed
        brake = s.max_acceleration_m_s2
        limits = [
            (n, max(-brake, ACCEL_STEER_GAIN_PER_S * (cap - dot(vel, n)))) for n, cap, _ in every
        ]
        a = (sp.north_m_s2, sp.east_m_s2, sp.down_m_s2)
        capped, _, peak_m_s2 = cap_along_peak(a, limits)
        if bound_m_s2 is not None and peak_m_s2 > bound_m_s2:
            return None
        if max(abs(x - y) for x, y in zip(capped, a, strict=True)) < _SAME:
            return sp, None
        worst = max(range(len(every)), key=lambda i: dot(a, limits[i][0]) - limits[i][1])
        capped = _within_norm(capped, limits[worst][0], brake)
        # PX4 tilts atan(|horizontal| / g) for it: never past max_tilt_deg (envelope_limits)
        capped = within_tilt(capped, horizontal_acceleration_limit(s))
        reason = every[worst][2]
        why: tuple[Reason, str] = (reason, "acceleration limited to hold the speed limits")
        if worst < len(ceilings):
            why = (Reason.FENCE_STOP, f"acceleration limited to stop {s.stop_margin_m:g} m "
                   f"inside the fence ({describe_face(ceilings[worst][2], s)})")  # fmt: skip
        return dataclasses.replace(sp, north_m_s2=capped[0], east_m_s2=capped[1],
                                   down_m_s2=capped[2]), why  # fmt: skip

    # -- breach ------------------------------------------------------------------------

    def nearest_face(self, n: float, e: float, d: float) -> Boundary | None:
        return None if self.fence is None else self.fence.nearest(n, e, d)

    def breach(self, n: float, e: float, d: float) -> Boundary | None:
        if self.fence is not None and self.fence.contains_vehicle(n, e, d):
            self.inside_seen = True  # (the nearest face's distance is >= 0)
            return None
        face = self.nearest_face(n, e, d)
        if face is None:
            return None
        if face.distance_m >= 0.0:
            self.inside_seen = True
            return None
        if self.inside_seen and face.distance_m < -self.settings.breach_tolerance_m:
            return face
        return None


def _relative(sp: Setpoint) -> bool:
    return isinstance(sp, GlobalPosition) and sp.altitude_frame is AltitudeFrame.RELATIVE


def _velocity_ned(sp: Setpoint, yaw_rad: float) -> Vec3:
    """The NED velocity a velocity-kind setpoint asks for (body velocity rotated by the
    heading, as PX4 does for BODY_NED, §1); zero for any other kind."""
    if isinstance(sp, VelocityBody):
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        return (c * sp.forward_m_s - s * sp.right_m_s, s * sp.forward_m_s + c * sp.right_m_s,
                sp.down_m_s)  # fmt: skip
    if isinstance(sp, VelocityNed | PositionVelocityNed):
        return (sp.north_m_s, sp.east_m_s, sp.down_m_s)
    return (0.0, 0.0, 0.0)


def _motionless(sp: Setpoint) -> Setpoint:
    """The same kind of setpoint with every motion component zero (yaw kept); for an
    acceleration, a zero velocity: a zero acceleration coasts on at the speed it has, out
    of a fence no position can be judged against (review). PX4 needs the same estimate
    for both (local velocity)."""
    if isinstance(sp, VelocityBody):
        return dataclasses.replace(sp, forward_m_s=0.0, right_m_s=0.0, down_m_s=0.0)
    if isinstance(sp, PositionVelocityNed):
        still = dataclasses.replace(sp, north_m_s=0.0, east_m_s=0.0, down_m_s=0.0)
        return _braking_feed_forward(still, [], converged=False)
    if isinstance(sp, VelocityNed):
        return dataclasses.replace(sp, north_m_s=0.0, east_m_s=0.0, down_m_s=0.0)
    if isinstance(sp, AccelerationNed):
        return VelocityNed(0.0, 0.0, 0.0, sp.yaw_rad, sp.yaw_rate_rad_s)
    return sp


def _braking_feed_forward(sp: PositionVelocityNed, binding: list[Vec3], converged: bool
                          ) -> PositionVelocityNed:
    """`sp` with its acceleration feed-forward kept only where it does not push on a face
    whose stop speed binds (`binding`: the faces' outward normals): PX4 adds the
    feed-forward to its own loop's output, so a planned motion's 2 m/s² outward would
    outrun the capped velocity (review). Braking (inward) and along-the-fence parts stay.
    Not `converged` (no velocity could satisfy every face, or no position to judge by):
    no acceleration at all."""
    if sp.north_m_s2 is None or sp.east_m_s2 is None or sp.down_m_s2 is None:
        return sp
    a: Vec3 = (sp.north_m_s2, sp.east_m_s2, sp.down_m_s2)
    kept, ok = cap_along(a, [(n, 0.0) for n in binding])
    if not (converged and ok):
        kept = (0.0, 0.0, 0.0)
    if kept == a:
        return sp
    return dataclasses.replace(sp, north_m_s2=kept[0], east_m_s2=kept[1], down_m_s2=kept[2])


def _within_norm(a: Vec3, braking: Vec3, limit: float) -> Vec3:
    """`a` with its norm held to `limit`, keeping its component along `braking` (the
    constraint that shaped it) whole and shrinking the rest: scaling all of `a` down
    would weaken the braking at a fence face or speed limit (found by fuzzing: braking
    at the full limit plus the commanded sideways part exceeded max_acceleration_m_s2)."""
    norm = math.sqrt(dot(a, a))
    if norm <= limit:
        return a
    along = dot(a, braking)
    if abs(along) >= limit:
        return (
            math.copysign(limit, along) * braking[0],
            math.copysign(limit, along) * braking[1],
            math.copysign(limit, along) * braking[2],
        )
    rest = (a[0] - along * braking[0], a[1] - along * braking[1], a[2] - along * braking[2])
    rest_norm = math.sqrt(dot(rest, rest))
    k = math.sqrt(limit * limit - along * along) / rest_norm if rest_norm > 0.0 else 0.0
    return (
        along * braking[0] + k * rest[0],
        along * braking[1] + k * rest[1],
        along * braking[2] + k * rest[2],
    )
