"""Core types <-> MAVLink: one import point for the runtime.

Outbound (setpoints and actions -> messages, the kind -> frame/type_mask table) lives in
translate_out.py; inbound (messages -> core events, the wanted message ids) in
translate_in.py. This module only re-exports them.
"""

from __future__ import annotations

from offboardd.mavlink.translate_in import (
    WANTED_MESSAGE_IDS,
    WANTED_MIN_INTERVAL_S,
    InboundTranslator,
)
from offboardd.mavlink.translate_out import (
    GLOBAL_FRAMES,
    SETPOINT_WIRE,
    SetpointMessages,
    companion_heartbeat,
    frame_of,
    messages_for,
    setpoint_message,
    type_mask,
)

__all__ = [
    "GLOBAL_FRAMES",
    "SETPOINT_WIRE",
    "WANTED_MESSAGE_IDS",
    "WANTED_MIN_INTERVAL_S",
    "InboundTranslator",
    "SetpointMessages",
    "companion_heartbeat",
    "frame_of",
    "messages_for",
    "setpoint_message",
    "type_mask",
]
