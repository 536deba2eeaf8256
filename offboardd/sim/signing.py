"""The sim's MAVLink 2 signing, as PX4 v1.17 does it with a provisioned key.

With `SimConfig.signing_key` every frame the sim sends is signed (link id = the link's
index, like PX4's MAVLink instance number) with a timestamp seeded from the wall clock and
kept increasing across sim reboots. With `require_signing` it also refuses what PX4 with
MAV_SIGN_CFG set refuses: unsigned frames (except the three PX4 lets through unsigned:
RADIO_STATUS, ADSB_VEHICLE, COLLISION; PX4 mavlink_sign_control.cpp), frames signed with
another key and replays; the link codec counts them (`sim.link("udp").codec.stats`).
Stricter than PX4 in one respect: a wrongly signed frame is refused even when signing is
not required (PX4 then accepts it as if it were unsigned).

This module must not model anything else: PX4's rules stay in the vehicle model.
"""

from __future__ import annotations

import time

from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.signing import timestamp_from_unix
from offboardd.sim.config import SimConfig

PX4_UNSIGNED_IDS = frozenset({
    dialect.MAVLINK_MSG_ID_RADIO_STATUS,
    dialect.MAVLINK_MSG_ID_ADSB_VEHICLE,
    dialect.MAVLINK_MSG_ID_COLLISION,
})  # fmt: skip


def link_codec(
    config: SimConfig, link_id: int, previous: MavlinkCodec | None = None
) -> MavlinkCodec:
    """A fresh codec for one sim link; signing continues above `previous`'s timestamp."""
    codec = MavlinkCodec(config.system_id, config.component_id)
    if config.signing_key is not None:
        floor = previous.signing_timestamp + 1 if previous is not None else 0
        codec.enable_signing(
            config.signing_key,
            timestamp=max(floor, timestamp_from_unix(time.time())),
            link_id=link_id,
            accept_unsigned=not config.require_signing,
            unsigned_ids=PX4_UNSIGNED_IDS,
        )
    return codec
