"""The daemon's end of the MAVLink link: which messages it decodes, how often, and signing.

Built once from the daemon's config (design.md: config -> parts). The engine's messages are
decoded at the engine's rates (the fast position and attitude streams thinned, yet four
times per estimate timeout at least); telemetry-only messages at their publishing rates, or
not at all without MQTT; relayed messages untouched. All of them are only read by field,
so they are decoded leanly (mavlink/lean.py). MAVLink 2 signing is attached when a key is
configured (mavlink/signing.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

from offboardd.config import DaemonConfig
from offboardd.mavlink import translate
from offboardd.mavlink.codec import MavlinkCodec, full_dialect, message_id, slim_dialect
from offboardd.mavlink.signing import SigningSession, load_key
from offboardd.mavlink.telemetry import decode_plan

log = structlog.get_logger("offboardd")


@dataclass
class FcCodec:
    codec: MavlinkCodec
    signing: SigningSession | None
    relay_ids: frozenset[int]  # message ids relayed to MQTT as they are


def fc_codec(config: DaemonConfig, *, mqtt: bool) -> FcCodec:
    relay_ids = _ids(config.mqtt.mavlink_relay) if mqtt else frozenset()
    engine_gaps_s = {msg_id: min(gap_s, config.engine.estimate_timeout_s / 4)
                     for msg_id, gap_s in translate.WANTED_MIN_INTERVAL_S.items()}
    wanted_ids, min_interval_s = decode_plan(
        config.mqtt.telemetry_rates_hz if mqtt else {},
        engine_ids=translate.WANTED_MESSAGE_IDS,
        engine_min_interval_s=engine_gaps_s, relay_ids=relay_ids)
    # The slim dialect holds every message the daemon itself uses; a relayed one it lacks
    # needs the full dialect (5.7 MB more RSS: codec.py), so only then is it loaded.
    beyond_slim = sorted(relay_ids - slim_dialect.mavlink_map.keys())
    if beyond_slim:
        log.info("mavlink_full_dialect", reason="relayed messages", ids=beyond_slim)
    codec = MavlinkCodec(
        1,  # replaced by the vehicle's sysid once its heartbeat is heard (§5)
        config.engine.companion_component_id,
        wanted_ids=wanted_ids, min_interval_s=min_interval_s, lean_ids=wanted_ids,
        dialect=full_dialect() if beyond_slim else slim_dialect,
    )
    signing: SigningSession | None = None
    if (m := config.mavlink).signing_key_file:
        signing = SigningSession(load_key(m.signing_key_file), m.signing_timestamp_file)
        problem = signing.attach(
            codec, time.time(), accept_unsigned=m.accept_unsigned,
            unsigned_ids=_ids(m.accept_unsigned_messages),
        )
        if problem is not None:
            log.warning("signing_timestamp_unreadable", problem=problem)
    return FcCodec(codec, signing, relay_ids)


def _ids(names: Iterable[str]) -> frozenset[int]:
    return frozenset(msg_id for name in names if (msg_id := message_id(name)) is not None)
