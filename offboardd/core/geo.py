"""WGS84 near a reference point, as a flat local frame: the fence's and home's geometry.
Pure arithmetic, no state."""

from __future__ import annotations

import math

EARTH_RADIUS_M = 6_371_000.0


def offset_m(lat0_deg: float, lon0_deg: float, lat_deg: float,
             lon_deg: float) -> tuple[float, float]:
    """(north_m, east_m) of a WGS84 point from a reference point, across the antimeridian
    too: an equirectangular projection, exact enough over a vehicle's few kilometres."""
    north = math.radians(lat_deg - lat0_deg) * EARTH_RADIUS_M
    dlon = (lon_deg - lon0_deg + 180.0) % 360.0 - 180.0
    return north, math.radians(dlon) * EARTH_RADIUS_M * math.cos(math.radians(lat0_deg))
