"""Decoded pymavlink messages from the FC -> typed core events.

`WANTED_MESSAGE_IDS` is what the daemon needs (pass it as `MavlinkCodec(wanted_ids=...)`
so the other ~30 PX4 stream types are skipped at frame level, §5). PARAM_VALUE is
decoded byte-wise (params.py) and STATUSTEXT chunks are joined (statustext.py), which is
why translation is a small object rather than a bare function: the joiner keeps state.

Pure: `now` is passed in; no I/O, no logging.
"""

from __future__ import annotations

from collections.abc import Callable

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
from offboardd.mavlink.codec import Message
from offboardd.mavlink.codec import slim_dialect as dialect
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
# GLOBAL_POSITION_INT 50/s, LOCAL_POSITION_NED 30/s; px4-offboard.md §5): the heading for
# body velocity, the fence, the hold point and telemetry at a few Hz need 15-20/s (the
# estimate times out after 0.5 s). The codec skips the rest at frame level.
WANTED_MIN_INTERVAL_S: dict[int, float] = {
    dialect.MAVLINK_MSG_ID_ATTITUDE: 0.045,
    dialect.MAVLINK_MSG_ID_GLOBAL_POSITION_INT: 0.045,
    dialect.MAVLINK_MSG_ID_LOCAL_POSITION_NED: 0.045,
}


class InboundTranslator:
    def __init__(self) -> None:
        self._statustext = StatusTextAssembler()

    def events(self, msg: Message, now: float) -> list[FcMessageEvent]:
        """The core events in one decoded message (usually one; none for unknown types or
        an unfinished STATUSTEXT; several when it completes stale texts too)."""
        mid = msg.get_msgId()
        build = _BUILDERS.get(mid)
        if build is not None:
            return [build(msg, msg.get_srcSystem(), msg.get_srcComponent())]
        if mid == dialect.MAVLINK_MSG_ID_STATUSTEXT:
            done = self._statustext.add(
                severity=msg.severity,
                text=msg.text,
                text_id=getattr(msg, "id", 0),
                chunk_seq=getattr(msg, "chunk_seq", 0),
                source_system=msg.get_srcSystem(),
                source_component=msg.get_srcComponent(),
                now_s=now,
            )
            return [_statustext(t) for t in done]
        return []

    def flush(self, now: float) -> list[FcMessageEvent]:
        """Chunked texts whose end never came (call now and then)."""
        return [_statustext(t) for t in self._statustext.flush_stale(now)]


def _statustext(t: StatusText) -> FcStatusText:
    return FcStatusText(
        t.severity, t.text, source_system=t.source_system, source_component=t.source_component
    )


_Builder = Callable[[Message, int, int], FcMessageEvent]
_d = dialect
# message id -> event; a table, not an if-chain: ~70 messages a second come through here
_BUILDERS: dict[int, _Builder] = {
    _d.MAVLINK_MSG_ID_HEARTBEAT: lambda m, s, c: FcHeartbeat(
        m.autopilot, m.type, m.base_mode, m.custom_mode, m.system_status,
        source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_CURRENT_MODE: lambda m, s, c: FcCurrentMode(
        m.custom_mode, m.intended_custom_mode, source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_COMMAND_ACK: lambda m, s, c: FcCommandAck(
        m.command, m.result, m.target_system, m.target_component,
        source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_PARAM_VALUE: lambda m, s, c: FcParamValue(
        param_id_str(m.param_id), decode_param_value(m.param_value, m.param_type),
        source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_AUTOPILOT_VERSION: lambda m, s, c: FcAutopilotVersion(
        m.flight_sw_version, m.capabilities, source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_LOCAL_POSITION_NED: lambda m, s, c: FcLocalPosition(
        m.time_boot_ms, m.x, m.y, m.z, m.vx, m.vy, m.vz, source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_GLOBAL_POSITION_INT: lambda m, s, c: FcGlobalPosition(
        m.time_boot_ms, m.lat / 1e7, m.lon / 1e7, m.alt / 1000.0, m.relative_alt / 1000.0,
        source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_HOME_POSITION: lambda m, s, c: FcHomePosition(
        m.latitude / 1e7, m.longitude / 1e7, m.altitude / 1000.0, m.x, m.y, m.z,
        source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_ATTITUDE: lambda m, s, c: FcAttitude(
        m.time_boot_ms, m.roll, m.pitch, m.yaw, source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_EXTENDED_SYS_STATE: lambda m, s, c: FcExtendedSysState(
        m.landed_state, source_system=s, source_component=c),
    _d.MAVLINK_MSG_ID_ESTIMATOR_STATUS: lambda m, s, c: FcEstimatorStatus(
        m.flags, source_system=s, source_component=c),
}
