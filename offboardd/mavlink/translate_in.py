"""Decoded pymavlink messages from the FC -> typed core events.

`WANTED_MESSAGE_IDS` is what the daemon needs (pass it as `MavlinkCodec(wanted_ids=...)`
so the other ~30 PX4 stream types are skipped at frame level, §5). PARAM_VALUE is
decoded byte-wise (params.py) and STATUSTEXT chunks are joined (statustext.py), which is
why translation is a small object rather than a bare function: the joiner keeps state.

Pure: `now` is passed in; no I/O, no logging.
"""

from __future__ import annotations

from offboardd.core.events import (
    FcAttitude,
    FcAutopilotVersion,
    FcCommandAck,
    FcCurrentMode,
    FcEstimatorStatus,
    FcExtendedSysState,
    FcGlobalPosition,
    FcHeartbeat,
    FcHomePosition,
    FcLocalPosition,
    FcMessageEvent,
    FcParamValue,
    FcStatusText,
)
from offboardd.mavlink.codec import Message, dialect
from offboardd.mavlink.params import decode_param_value, param_id_str
from offboardd.mavlink.statustext import StatusText, StatusTextAssembler

WANTED_MESSAGE_IDS: frozenset[int] = frozenset(
    {
        dialect.MAVLINK_MSG_ID_HEARTBEAT,
        dialect.MAVLINK_MSG_ID_CURRENT_MODE,
        dialect.MAVLINK_MSG_ID_COMMAND_ACK,
        dialect.MAVLINK_MSG_ID_PARAM_VALUE,
        dialect.MAVLINK_MSG_ID_AUTOPILOT_VERSION,
        dialect.MAVLINK_MSG_ID_LOCAL_POSITION_NED,
        dialect.MAVLINK_MSG_ID_GLOBAL_POSITION_INT,
        dialect.MAVLINK_MSG_ID_HOME_POSITION,
        dialect.MAVLINK_MSG_ID_ATTITUDE,
        dialect.MAVLINK_MSG_ID_EXTENDED_SYS_STATE,
        dialect.MAVLINK_MSG_ID_ESTIMATOR_STATUS,
        dialect.MAVLINK_MSG_ID_STATUSTEXT,
    }
)


# PX4 streams these faster than the daemon uses them on its onboard link (ATTITUDE 100/s,
# GLOBAL_POSITION_INT 50/s; px4-offboard.md §5): the heading for body velocity and the
# fence, and telemetry at a few Hz, need ~20/s. The codec skips the rest at frame level.
WANTED_MIN_INTERVAL_S: dict[int, float] = {
    dialect.MAVLINK_MSG_ID_ATTITUDE: 0.045,
    dialect.MAVLINK_MSG_ID_GLOBAL_POSITION_INT: 0.045,
}


class InboundTranslator:
    def __init__(self) -> None:
        self._statustext = StatusTextAssembler()

    def events(self, msg: Message, now: float) -> list[FcMessageEvent]:
        """The core events in one decoded message (usually one; none for unknown types or
        an unfinished STATUSTEXT; several when it completes stale texts too)."""
        src = {"source_system": msg.get_srcSystem(), "source_component": msg.get_srcComponent()}
        mid = msg.get_msgId()
        if mid == dialect.MAVLINK_MSG_ID_STATUSTEXT:
            done = self._statustext.add(
                severity=msg.severity,
                text=msg.text,
                text_id=getattr(msg, "id", 0),
                chunk_seq=getattr(msg, "chunk_seq", 0),
                source_system=src["source_system"],
                source_component=src["source_component"],
                now_s=now,
            )
            return [_statustext(t) for t in done]
        event = _simple(mid, msg, src)
        return [] if event is None else [event]

    def flush(self, now: float) -> list[FcMessageEvent]:
        """Chunked texts whose end never came (call now and then)."""
        return [_statustext(t) for t in self._statustext.flush_stale(now)]


def _statustext(t: StatusText) -> FcStatusText:
    return FcStatusText(
        t.severity, t.text, source_system=t.source_system, source_component=t.source_component
    )


def _simple(mid: int, m: Message, src: dict[str, int]) -> FcMessageEvent | None:
    d = dialect
    if mid == d.MAVLINK_MSG_ID_HEARTBEAT:
        return FcHeartbeat(m.autopilot, m.type, m.base_mode, m.custom_mode, m.system_status, **src)
    if mid == d.MAVLINK_MSG_ID_CURRENT_MODE:
        return FcCurrentMode(m.custom_mode, m.intended_custom_mode, **src)
    if mid == d.MAVLINK_MSG_ID_COMMAND_ACK:
        return FcCommandAck(m.command, m.result, **src)
    if mid == d.MAVLINK_MSG_ID_PARAM_VALUE:
        value = decode_param_value(m.param_value, m.param_type)
        return FcParamValue(param_id_str(m.param_id), value, **src)
    if mid == d.MAVLINK_MSG_ID_AUTOPILOT_VERSION:
        return FcAutopilotVersion(m.flight_sw_version, m.capabilities, **src)
    if mid == d.MAVLINK_MSG_ID_LOCAL_POSITION_NED:
        return FcLocalPosition(m.time_boot_ms, m.x, m.y, m.z, m.vx, m.vy, m.vz, **src)
    if mid == d.MAVLINK_MSG_ID_GLOBAL_POSITION_INT:
        return FcGlobalPosition(
            m.time_boot_ms, m.lat / 1e7, m.lon / 1e7, m.alt / 1000.0, m.relative_alt / 1000.0,
            **src,
        )  # fmt: skip
    if mid == d.MAVLINK_MSG_ID_HOME_POSITION:
        return FcHomePosition(
            m.latitude / 1e7, m.longitude / 1e7, m.altitude / 1000.0, m.x, m.y, m.z, **src
        )
    if mid == d.MAVLINK_MSG_ID_ATTITUDE:
        return FcAttitude(m.time_boot_ms, m.roll, m.pitch, m.yaw, **src)
    if mid == d.MAVLINK_MSG_ID_EXTENDED_SYS_STATE:
        return FcExtendedSysState(m.landed_state, **src)
    if mid == d.MAVLINK_MSG_ID_ESTIMATOR_STATUS:
        return FcEstimatorStatus(m.flags, **src)
    return None
