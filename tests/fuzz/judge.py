"""Judges for what the daemon sends: would PX4 fly it, and is it inside the envelope?

`px4_verdict` sends a core setpoint through the daemon's own outbound path
(`translate.setpoint_message`, then real MAVLink 2 bytes through `MavlinkCodec`, so the
float32 rounding of the wire applies) and asks the sim's independent validator
(`offboardd/sim/setpoints.py`, which reads raw MAVLink fields only) what PX4 would do.

`EnvelopeJudge` checks a decoded SET_* message against `EnvelopeSettings` with its own
arithmetic, written from the issue's wording rather than from envelope.py, so a mistake
in the envelope is not repeated here: speeds, acceleration norm, tilt, thrust, yaw rate,
and position setpoints inside the fence (home from HOME_POSITION, as the daemon uses).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from offboardd.core.actions import Target
from offboardd.core.envelope_settings import EnvelopeSettings, PolygonFrame
from offboardd.core.setpoints import Setpoint
from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, Message
from offboardd.sim.home import Origin
from offboardd.sim.setpoints import (
    JudgeContext,
    Verdict,
    judge_attitude,
    judge_global_int,
    judge_local_ned,
)

FC = Target(1, 1)
HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M = 47.397742, 8.545594, 488.0
CONTEXT = JudgeContext(
    system_id=1, component_id=1, forward_external_setpoints=True, yaw_rad=0.7,
    roll_rad=0.05, pitch_rad=-0.1, global_valid=True,
    origin=Origin(HOME_LAT_DEG, HOME_LON_DEG, HOME_ALT_M), home_alt_m=HOME_ALT_M,
)  # fmt: skip
_JUDGES = {
    "SET_POSITION_TARGET_LOCAL_NED": judge_local_ned,
    "SET_POSITION_TARGET_GLOBAL_INT": judge_global_int,
    "SET_ATTITUDE_TARGET": judge_attitude,
}
_EARTH_RADIUS_M = 6_371_000.0
# POSITION_TARGET_TYPEMASK / ATTITUDE_TARGET_TYPEMASK ignore bits (common.xml)
_IGNORE_POS, _IGNORE_VEL, _IGNORE_ACC = 7, 56, 448
_IGNORE_YAW_RATE = 2048
_IGNORE_ROLL_PITCH_RATE, _IGNORE_ATT_YAW_RATE, _IGNORE_ATTITUDE = 3, 4, 128


@functools.cache
def _codecs() -> tuple[MavlinkCodec, MavlinkCodec]:
    """One sender and one receiver for all judging (building a codec costs ~1 ms)."""
    return MavlinkCodec(255, 191), MavlinkCodec(1, 1)


def wire(sp: Setpoint) -> Message:
    """`sp` as the FC receives it: built by translate, packed and decoded as bytes."""
    sender, receiver = _codecs()
    (msg,) = receiver.decode(sender.encode(translate.setpoint_message(sp, FC)))
    return msg


def px4_verdict_of_message(msg: Message, ctx: JudgeContext = CONTEXT) -> Verdict:
    return _JUDGES[msg.get_type()](msg, ctx)


def px4_verdict(sp: Setpoint, ctx: JudgeContext = CONTEXT) -> Verdict:
    return px4_verdict_of_message(wire(sp), ctx)


def assert_px4_flies(sp: Setpoint, ctx: JudgeContext = CONTEXT) -> None:
    verdict = px4_verdict(sp, ctx)
    assert verdict.kind == "valid", f"PX4 would not fly {sp}: {verdict}"


@dataclass(frozen=True)
class HomeFix:
    """HOME_POSITION as the daemon saw it: WGS84 and its place in the local frame."""

    lat_deg: float
    lon_deg: float
    alt_amsl_m: float
    north_m: float
    east_m: float
    down_m: float


def _tolerance(limit: float) -> float:
    return 1e-5 * max(1.0, abs(limit))  # float32 on the wire, clamps rounding to the limit


class EnvelopeJudge:
    """Problems (empty: inside the envelope) of one decoded SET_* message."""

    def __init__(self, settings: EnvelopeSettings, home: HomeFix | None = None, *,
                 check_fence: bool = True) -> None:
        self.s = settings
        self.home = home
        self.check_fence = check_fence and settings.fence_enabled

    def problems(self, msg: Message, *, hold_slack_m: float = 0.0) -> list[str]:
        """`hold_slack_m`: how far outside the fence a zero-velocity position (a hold
        where the vehicle is, which may have drifted out) may be."""
        kind = msg.get_type()
        if kind == "SET_ATTITUDE_TARGET":
            return self._attitude(msg)
        mask = int(msg.type_mask)
        out: list[str] = []
        s = self.s
        if not mask & _IGNORE_VEL:
            out += self._velocity(msg)
        if not mask & _IGNORE_ACC:
            norm = math.sqrt(msg.afx**2 + msg.afy**2 + msg.afz**2)
            if norm > s.max_acceleration_m_s2 + _tolerance(s.max_acceleration_m_s2):
                out.append(f"acceleration {norm:.4g} m/s² > {s.max_acceleration_m_s2}")
            # PX4 flies an acceleration at a tilt of atan(|horizontal| / g) (MPC_ACC_DECOUPLE)
            tilt_deg = math.degrees(math.atan2(math.hypot(msg.afx, msg.afy), 9.80665))
            if tilt_deg > s.max_tilt_deg + 1e-3:
                out.append(f"acceleration tilt {tilt_deg:.4g} deg > {s.max_tilt_deg}")
        if not mask & _IGNORE_YAW_RATE:
            out += self._yaw_rate(float(msg.yaw_rate))
        if not mask & _IGNORE_POS and self.check_fence:
            still = mask & _IGNORE_VEL or max(abs(msg.vx), abs(msg.vy), abs(msg.vz)) == 0.0
            out += self._position(msg, hold_slack_m if still else 0.0)
        return out

    def _velocity(self, msg: Message) -> list[str]:
        s, out = self.s, []
        horizontal = math.hypot(msg.vx, msg.vy)
        if horizontal > s.max_horizontal_speed_m_s + _tolerance(s.max_horizontal_speed_m_s):
            out.append(f"horizontal speed {horizontal:.4g} > {s.max_horizontal_speed_m_s}")
        if -msg.vz > s.max_up_speed_m_s + _tolerance(s.max_up_speed_m_s):
            out.append(f"up speed {-msg.vz:.4g} > {s.max_up_speed_m_s}")
        if msg.vz > s.max_down_speed_m_s + _tolerance(s.max_down_speed_m_s):
            out.append(f"down speed {msg.vz:.4g} > {s.max_down_speed_m_s}")
        return out

    def _yaw_rate(self, rate_rad_s: float) -> list[str]:
        limit = math.radians(self.s.max_yaw_rate_deg_s)
        if abs(rate_rad_s) > limit + _tolerance(limit):
            return [f"yaw rate {rate_rad_s:.4g} rad/s > {limit:.4g}"]
        return []

    def _attitude(self, msg: Message) -> list[str]:
        s, out, mask = self.s, [], int(msg.type_mask)
        thrust = float(msg.thrust)
        if not s.min_thrust - 1e-6 <= thrust <= s.max_thrust + 1e-6:
            out.append(f"thrust {thrust} outside [{s.min_thrust}, {s.max_thrust}]")
        if not mask & _IGNORE_ATTITUDE:
            w, x, y, z = (float(c) for c in msg.q)
            norm2 = w * w + x * x + y * y + z * z
            cos_tilt = 1.0 - 2.0 * (x * x + y * y) / norm2  # body down vs NED down
            tilt_deg = math.degrees(math.acos(max(-1.0, min(1.0, cos_tilt))))
            if tilt_deg > s.max_tilt_deg + 1e-3:
                out.append(f"tilt {tilt_deg:.4g} deg > {s.max_tilt_deg}")
        if not mask & (_IGNORE_ROLL_PITCH_RATE | _IGNORE_ATT_YAW_RATE):
            out += self._yaw_rate(float(msg.body_yaw_rate))
        return out

    def _position(self, msg: Message, slack_m: float) -> list[str]:
        home = self.home
        if home is None:
            return ["a position setpoint was sent with the fence on and no home known"]
        if msg.get_type() == "SET_POSITION_TARGET_GLOBAL_INT":
            north, east = _project(home, msg.lat_int * 1e-7, msg.lon_int * 1e-7)
            frame = int(msg.coordinate_frame)
            if frame == 11:  # above terrain: only the horizontal part can be judged
                altitude = None
            else:
                altitude = float(msg.alt) if frame == 6 else float(msg.alt) - home.alt_amsl_m
            slack_m += 0.05  # 1e-7 degree steps (1.1 cm) and float32 altitude
        else:
            north, east = float(msg.x), float(msg.y)
            altitude = home.down_m - float(msg.z)
            slack_m += 1e-4 * max(1.0, abs(north), abs(east), abs(float(msg.z)))
        return self.fence_problems(north, east, altitude, slack_m)

    def fence_problems(self, north: float, east: float, altitude: float | None,
                       slack_m: float = 0.0) -> list[str]:
        s, home, out = self.s, self.home, []
        assert home is not None
        where = f"({north:.2f}, {east:.2f}, alt {altitude})"
        if s.max_distance_m is not None:
            r = math.hypot(north - home.north_m, east - home.east_m)
            if r > s.max_distance_m + slack_m:
                out.append(f"{where}: {r:.2f} m from home > max_distance_m {s.max_distance_m}")
        if altitude is not None and s.max_altitude_m is not None \
                and altitude > s.max_altitude_m + slack_m:
            out.append(f"{where}: altitude above max_altitude_m {s.max_altitude_m}")
        if altitude is not None and s.min_altitude_m is not None \
                and altitude < s.min_altitude_m - slack_m:
            out.append(f"{where}: altitude below min_altitude_m {s.min_altitude_m}")
        if s.polygon:
            polygon = s.polygon
            if s.polygon_frame is PolygonFrame.GLOBAL:
                polygon = tuple(_project(home, lat, lon) for lat, lon in polygon)
            if not _inside(north, east, polygon) and _edge_distance(north, east, polygon) > slack_m:
                out.append(f"{where}: outside the polygon")
        return out


def _project(home: HomeFix, lat_deg: float, lon_deg: float) -> tuple[float, float]:
    """Local (north, east) of a WGS84 point: flat Earth about home (fine over a few km)."""
    north = math.radians(lat_deg - home.lat_deg) * _EARTH_RADIUS_M
    dlon = (lon_deg - home.lon_deg + 540.0) % 360.0 - 180.0
    east = math.radians(dlon) * _EARTH_RADIUS_M * math.cos(math.radians(home.lat_deg))
    return home.north_m + north, home.east_m + east


def _inside(n: float, e: float, polygon: tuple[tuple[float, float], ...]) -> bool:
    crossings = 0
    for (n1, e1), (n2, e2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if ((n1 <= n < n2) or (n2 <= n < n1)) and e < e1 + (n - n1) / (n2 - n1) * (e2 - e1):
            crossings += 1
    return crossings % 2 == 1


def _edge_distance(n: float, e: float, polygon: tuple[tuple[float, float], ...]) -> float:
    best = math.inf
    for (n1, e1), (n2, e2) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        dn, de = n2 - n1, e2 - e1
        length2 = dn * dn + de * de
        t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((n - n1) * dn + (e - e1) * de) / length2))
        best = min(best, math.hypot(n - (n1 + t * dn), e - (e1 + t * de)))
    return best


def message_fields(msg: Message) -> dict[str, Any]:
    return {name: getattr(msg, name) for name in msg.get_fieldnames()}
