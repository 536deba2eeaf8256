"""[envelope] refuses fences that cannot protect (found by review: they were accepted):
no area, crossing edges, GPS corners read as local metres (polygon_frame left at
"local"), a stop margin or breach tolerance as wide as the fence. A vehicle never inside
such a fence is never in breach, so the fence silently did nothing."""

from __future__ import annotations

import pytest

from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.errors import ConfigError

ODD = {
    "zero_area_collinear": ((0.0, 0.0), (0.0, 50.0), (0.0, 100.0)),
    "all_one_point": ((10.0, 10.0), (10.0, 10.0), (10.0, 10.0)),
    "bow_tie": ((0.0, 0.0), (0.0, 50.0), (50.0, 0.0), (50.0, 50.0)),
    # docs/safety-envelope.md's global example, with polygon_frame left at its default:
    # a 0.5 mm x 1 mm polygon 47 m north and 8.5 m east of the EKF origin
    "gps_corners_as_local_metres": ((47.39765, 8.54546), (47.39765, 8.54652),
                                    (47.39819, 8.54652), (47.39819, 8.54546)),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_polygon_is_refused(name: str) -> None:
    with pytest.raises(ConfigError):
        EnvelopeSettings(polygon=ODD[name])


def test_breach_tolerance_larger_than_the_whole_fence_is_refused() -> None:
    with pytest.raises(ConfigError):
        EnvelopeSettings(max_distance_m=1.0, breach_tolerance_m=100.0, stop_margin_m=100.0)



def test_the_docs_global_polygon_and_a_plain_square_still_load() -> None:
    gps = ODD["gps_corners_as_local_metres"]
    assert EnvelopeSettings(polygon=gps, polygon_frame="global").polygon  # type: ignore[arg-type]
    assert EnvelopeSettings(polygon=((0, 0), (0, 2), (2, 2), (2, 0))).polygon
    assert EnvelopeSettings(max_distance_m=2.0, stop_margin_m=1.0, breach_tolerance_m=1.0)
    with pytest.raises(ConfigError, match='polygon_frame = "global"'):
        EnvelopeSettings(polygon=gps)
