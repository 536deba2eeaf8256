"""Bytes a stream link has held too long: a peer that stopped taking them.

A TCP peer that stops reading (a bridge whose serial side is stuck) or a UART held by its
flow control keeps the setpoints written meanwhile in kernel buffers, and delivers them
in a burst when it takes bytes again: with PX4 that brings OFFBOARD back by itself with
nobody streaming (px4-offboard.md §3), and queued mode commands act seconds late (found
by review: an engage that failed during a 5 s stall switched the FC to OFFBOARD when the
line came back). The 64 KiB backlog bound never helped: at ~1.3 kB/s of setpoints it is
50 s of them.

`UnsentWatch` is asked once per control cycle with the cycle's clock: when the link holds
more unsent bytes than it was handed in the last `max_age_s`, some of them have waited
that long, and the link is told to abandon them (`Link.abandon_stalled`). The runtime
passes PX4's COM_OF_LOSS_T: bytes older than that find PX4 no longer trusting the stream
(so they are the dangerous ones), and anything younger is only late: a TCP retransmission
on a lossy radio takes a few hundred ms and must not cost the link. Pure: the runtime
passes the time in; no I/O beyond asking the link.
"""

from __future__ import annotations

from collections import deque

from offboardd.mavlink.links.base import Link

__all__ = ["MAX_UNSENT_AGE_S", "UnsentWatch"]

MAX_UNSENT_AGE_S = 1.0  # PX4's default COM_OF_LOSS_T, for when the FC's is not known


class UnsentWatch:
    def __init__(self) -> None:
        self._handed: deque[tuple[float, int]] = deque()  # (time, link's bytes_out then)
        self.abandoned = 0  # times the link was told to abandon what it held

    def check(self, link: Link, now: float, max_age_s: float = MAX_UNSENT_AGE_S) -> int:
        """Call once per cycle; the bytes abandoned now (0: none were stale)."""
        handed = self._handed
        handed.append((now, link.stats.bytes_out))
        while len(handed) > 1 and handed[1][0] <= now - max_age_s:
            handed.popleft()  # the first mark stays the last one at least max_age_s old
        since_s, bytes_then = handed[0]
        if now - since_s < max_age_s:
            return 0  # not watched that long yet
        unsent = link.unsent_bytes()
        if unsent <= link.stats.bytes_out - bytes_then:
            return 0  # all of it was handed over within max_age_s
        link.abandon_stalled(f"{unsent} bytes unsent for over {max_age_s:g} s: "
                             "the peer stopped taking them")
        self.abandoned += 1
        handed.clear()
        return unsent
