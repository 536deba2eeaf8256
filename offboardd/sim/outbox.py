"""What the vehicle model hands the server to send: a message and where it goes.

Kept apart so `vehicle` and `commands` can both build them without importing each
other. Plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass

from offboardd.mavlink.codec import Message

Dest = int | str  # a link id, or one of the names below
TO_ALL = "all"
TO_GCS = "gcs"  # links where a GCS heartbeat was seen (PX4 sends refusal texts there)
TO_CURRENT_MODE = "current_mode"  # links that enabled CURRENT_MODE


@dataclass(frozen=True)
class Outgoing:
    msg: Message
    dest: Dest


@dataclass(frozen=True)
class LinkRequest:
    """For the server: MAV_CMD_SET_MESSAGE_INTERVAL for one stream on one link."""

    link_id: int
    msg_name: str
    interval_us: float
