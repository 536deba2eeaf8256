"""Real PX4: the GNSS cut while the daemon flies (MAV_CMD_INJECT_FAILURE, GPS off, then
back). PX4 flies on dead reckoning for EKF2_NOAID_TOUT, then leaves OFFBOARD for Descend;
the daemon stops at that report and stays out, although LOCAL_POSITION_NED goes on coming:
only ESTIMATOR_STATUS says the estimate is gone, and the daemon says so and refuses an
engage for it. The sim is held to the same checks (tests/sim/gps_loss_flight.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from offboardd.core.modes import mode_from_custom
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.release import release_of
from tests.px4.stack import VEHICLE, flying_stack
from tests.sim.gps_loss_flight import (
    ALT_M,
    GpsLossSeen,
    check_gps_loss,
    fly_the_cut,
    position_rates,
    published_positions,
    published_validity,
)

MAV_CMD_INJECT_FAILURE = 420
FAILURE_UNIT_SENSOR_GPS, FAILURE_TYPE_OK, FAILURE_TYPE_OFF = 4, 0, 1
MAV_RESULT_ACCEPTED = 0


def _label(custom_mode: int) -> str:
    mode = mode_from_custom(custom_mode)
    return mode.label if mode is not None else hex(custom_mode)


async def test_a_gnss_cut_in_flight_hands_the_vehicle_to_px4s_descend(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s, \
            published_positions(mosquitto.port, VEHICLE) as published:
        r = s.record
        await s.take_off(ALT_M)
        release = release_of(str((s.client.state or {})["fc_version"]))
        await asyncio.sleep(1.0)

        def gps(failure_type: int) -> None:
            s.gcs.command(MAV_CMD_INJECT_FAILURE, FAILURE_UNIT_SENSOR_GPS, failure_type, 0)

        cut_t, daemon = await fly_the_cut(s.client, lambda: gps(FAILURE_TYPE_OFF),
                                          lambda: gps(FAILURE_TYPE_OK))
        modes = [(t - cut_t, _label(m)) for t, m in r.modes if t > cut_t]
        left_s = modes[0][0] if modes else None
        seen = GpsLossSeen.of(
            daemon, left_offboard_s=left_s, modes_after=[m for _, m in modes],
            last_setpoint_s=r.setpoints[-1].t - cut_t,
            offboard_requests_after=len([q for q in r.offboard_requests() if q.t > cut_t]),
            **position_rates([t - cut_t for t, _ in r.track], left_s),
            **published_validity(published, cut_t, left_s))
        acks = [int(a.fields["result"]) for a in r.acks
                if a.fields["command"] == MAV_CMD_INJECT_FAILURE]
    measured.update(seen.figures())
    assert acks == [MAV_RESULT_ACCEPTED] * 2, acks  # (the GCS link: the tee sees its ACKs)
    check_gps_loss(seen, descend="AUTO.DESCEND" if release >= (1, 19) else "AUTO.LAND",
                   loss_action="AUTO.RTL" if release >= (1, 17) else None)
