"""PX4's home position, kept apart from the local frame's origin, and when it moves.

The local NED frame's origin (LOCAL_POSITION_NED's zero, EKF2's reference) never moves in
flight; home does. PX4 main (bb59c637cd, the prebuilt SIH's source) sets home where the
vehicle is
- at arming (Commander::arm, COM_HOME_EN),
- at take-off, the land detector's landed -> flying edge (Commander::landDetectorUpdate),
- while disarmed and landed, whenever the vehicle is more than max(2 eph, 1 m) from it
  horizontally or max(2 epv, 1.5 m) vertically (HomePosition::update /
  hasMovedFromCurrentHomeLocation): a vehicle carried, or landed elsewhere and disarmed,
- on MAV_CMD_DO_SET_HOME: param1 = 1 here, param1 = 0 at the given lat/lon/alt, which
  makes it a manual home that arming and take-off no longer move (setManually).
Each records the attitude too while landed (the HOME_POSITION quaternion) and its time
(HOME_POSITION.time_usec). GLOBAL_POSITION_INT.relative_alt is above home, RTL returns to
it. Pure: positions and times come in; no MAVLink here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EARTH_RADIUS_M = 6_371_000.0
# HomePosition.hpp: kMinHomePositionChangeEPH / EPV
MIN_CHANGE_XY_M = 1.0
MIN_CHANGE_Z_M = 1.5
# The estimate's accuracy the sim reports (ESTIMATOR_STATUS pos_horiz/vert_accuracy):
# PX4 moves a disarmed home only past twice these.
EPH_M = 0.5
EPV_M = 0.8


@dataclass(frozen=True)
class Origin:
    """The local frame's geodetic reference (EKF2's ref_lat/ref_lon/ref_alt)."""

    lat_deg: float
    lon_deg: float
    alt_m: float  # AMSL

    def to_global(self, north_m: float, east_m: float, down_m: float
                  ) -> tuple[float, float, float]:  # fmt: skip
        """(lat deg, lon deg, alt m AMSL) of a local NED point (flat earth about here)."""
        lat = self.lat_deg + math.degrees(north_m / EARTH_RADIUS_M)
        lon = self.lon_deg + math.degrees(
            east_m / (EARTH_RADIUS_M * math.cos(math.radians(self.lat_deg)))
        )
        return lat, lon, self.alt_m - down_m

    def to_local(self, lat_deg: float, lon_deg: float, alt_m: float
                 ) -> tuple[float, float, float]:  # fmt: skip
        """(north, east, down) m of a geodetic point: the inverse of `to_global`."""
        north = math.radians(lat_deg - self.lat_deg) * EARTH_RADIUS_M
        east = (math.radians(lon_deg - self.lon_deg) * EARTH_RADIUS_M
                * math.cos(math.radians(self.lat_deg)))  # fmt: skip
        return north, east, self.alt_m - alt_m


@dataclass(frozen=True)
class HomePoint:
    lat_deg: float
    lon_deg: float
    alt_m: float  # AMSL
    ned_m: tuple[float, float, float]  # the same point in the local frame
    # (roll, pitch, yaw) as set landed or given; None: not known (PX4 sends a NaN quaternion)
    attitude_rad: tuple[float, float, float] | None
    set_us: int  # boot time it was set (HOME_POSITION.time_usec)
    manual: bool = False  # DO_SET_HOME with coordinates: arming no longer moves it


class Home:
    """The current home and PX4's rules for moving it; starts at the local origin."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self.point = HomePoint(origin.lat_deg, origin.lon_deg, origin.alt_m, (0.0, 0.0, 0.0),
                               (0.0, 0.0, 0.0), 0)  # fmt: skip
        self.sets = 0  # how often home moved (home_position.update_count less the first)

    def set_here(self, ned_m: tuple[float, float, float],
                 attitude_rad: tuple[float, float, float], *, landed: bool, now_us: int,
                 force: bool = False) -> bool:  # fmt: skip
        """Home where the vehicle is (HomePosition::setHomePosition): refused over a manual
        home unless forced (DO_SET_HOME 1); the attitude only taken while landed."""
        if self.point.manual and not force:
            return False
        lat, lon, alt = self.origin.to_global(*ned_m)
        attitude = attitude_rad if landed else self.point.attitude_rad
        self.point = HomePoint(lat, lon, alt, ned_m, attitude, now_us)
        self.sets += 1
        return True

    def set_manually(self, lat_deg: float, lon_deg: float, alt_m: float,
                     attitude_rad: tuple[float, float, float], now_us: int) -> None:
        """DO_SET_HOME with coordinates: there, in both frames, until set here again; the
        attitude given (roll, pitch, yaw) is kept only when all three are finite."""
        ned = self.origin.to_local(lat_deg, lon_deg, alt_m)
        attitude = attitude_rad if all(math.isfinite(a) for a in attitude_rad) else None
        self.point = HomePoint(lat_deg, lon_deg, alt_m, ned, attitude, now_us, manual=True)
        self.sets += 1

    def moved_away(self, ned_m: tuple[float, float, float]) -> bool:
        """Is the vehicle far enough from home for a disarmed, landed PX4 to move it?"""
        n, e, d = self.point.ned_m
        xy_m = math.hypot(ned_m[0] - n, ned_m[1] - e)
        z_m = abs(ned_m[2] - d)
        return (xy_m > max(2 * EPH_M, MIN_CHANGE_XY_M)
                or z_m > max(2 * EPV_M, MIN_CHANGE_Z_M))
