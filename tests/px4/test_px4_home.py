"""Real PX4: where home is. The flight of tests/sim/home_flight.py flown on PX4 SIH over
its onboard link, judged by the checks the sim's test uses (a differential test: the sim
is held to what this measures).

PX4 main (HomePosition.cpp, Commander.cpp) sets home at arming, at take-off and while
disarmed on the ground more than a metre from it; the local frame keeps its origin;
relative_alt is above home; RTL returns to home.
"""

from __future__ import annotations

from tests.px4.px4_process import Px4Sitl
from tests.sim.client import Peer
from tests.sim.home_flight import (
    HomeSeen,
    check_home_flight,
    check_set_home_on_the_ground,
    fly_home_flight,
    set_home_on_the_ground,
)

AWAY_M = 6.0


def _row(h: HomeSeen | None) -> list[float]:
    assert h is not None
    return [round(v, 3) for v in (*h.ned_m, h.alt_m, *h.vehicle_ned_m)] + [h.time_usec]


async def test_home_moves_where_px4_lands_and_arms_and_rtl_returns_there(
    px4: Px4Sitl, measured: dict[str, object]
) -> None:
    # Return at the altitude it flies (3 m; 6 m out PX4 would climb to 12 m first:
    # tests/sim/rtl_flight.py), to keep the flight short; the sim's test sets the same
    px4.param_set("RTL_RETURN_ALT", 3.0)
    px4.param_set("RTL_DESCEND_ALT", 3.0)
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    try:
        flight = await fly_home_flight(peer, away_m=AWAY_M)
    finally:
        peer.close()
    measured.update(
        home_boot=_row(flight.boot), home_landed_away=_row(flight.landed_away),
        home_rearmed=_row(flight.rearmed), home_flying=_row(flight.flying),
        north_of_boot_m=round(flight.rearmed.north_of(flight.boot), 2) if flight.rearmed
        and flight.boot else None,
        relative_base_m=[round(b, 3) for b, _ in flight.relative_base_m],
        rtl_landed_ned_m=[round(v, 2) for v in flight.rtl_landed_ned_m or ()],
    )  # fmt: skip
    check_home_flight(flight, away_m=AWAY_M)


async def test_do_set_home_on_the_ground_on_px4(px4: Px4Sitl, measured: dict[str, object]
                                                ) -> None:  # fmt: skip
    peer = await Peer.connect(px4.px4_port, local_port=px4.companion_port)
    peer.target_system = px4.system_id
    try:
        steps = await set_home_on_the_ground(peer)
    finally:
        peer.close()
    measured.update(
        results=[steps.manual_result, steps.nan_result, steps.here_result],
        home_boot=_row(steps.boot), home_manual=_row(steps.manual),
        manual_relative_alt_m=round(steps.manual_relative_alt_m, 3),
        home_after_arming=_row(steps.after_arming), home_here=_row(steps.here),
    )  # fmt: skip
    check_set_home_on_the_ground(steps)
