"""Bytes but no MAVLink: what a wrong baud rate looks like from the daemon's side.

A UART at another speed than PX4's port (a radio's 57,600 swapped for a direct 921,600
wire, or the other way round), or a port that carries a console or a GPS, delivers a
steady stream of bytes in which no frame ever checks out. The link is open, so it reads
"up", and the FC is never heard: the daemon was silent about it until the doctor was run
(review, 2026-11-29). `NoiseWatch` judges the codec's counters every WINDOW_S while no FC
is known and says so once, until a valid frame comes. Pure: counters and `now` in.
"""

from __future__ import annotations

from offboardd.mavlink.codec import CodecStats

WINDOW_S = 3.0
_MIN_JUNK_BYTES = 64  # a few stray bytes at a cable's plugging are no stream


def _valid(stats: CodecStats) -> int:
    """Frames whose CRC checked out: MAVLink is there. (Frames skipped by id, `filtered`
    and `unknown_id`, are not checked: noise makes them too, ~1 in 16 kB here.)"""
    return stats.frames_ok + stats.bad_signature + stats.unsigned_refused + stats.replayed


def _junk(stats: CodecStats) -> int:
    return stats.garbage_bytes + stats.bad_crc


class NoiseWatch:
    def __init__(self, where: str) -> None:
        self.where = where  # the link's URL, for the words
        self.hint: str | None = None  # while the link is judged garbled
        self._next_s: float | None = None
        self._valid = self._junk = 0

    def check(self, stats: CodecStats, fc_known: bool, now: float) -> str | None:
        """A warning the first time a window of bytes held no frame; None otherwise."""
        if self._next_s is not None and now < self._next_s:
            return None
        valid, junk = _valid(stats), _junk(stats)
        new_junk, any_valid = junk - self._junk, valid != self._valid
        first = self._next_s is None
        self._next_s, self._valid, self._junk = now + WINDOW_S, valid, junk
        if first or fc_known or any_valid or new_junk < _MIN_JUNK_BYTES:
            self.hint = None  # (said again should the noise come back)
            return None
        if self.hint is not None:
            return None
        self.hint = (f"{new_junk} bytes in {WINDOW_S:g} s on {self.where} but no MAVLink "
                     "frame: a baud rate that does not match PX4's port (mavlink.url against "
                     "SER_TEL2_BAUD, or the radio's), or a port that carries something else "
                     "(a console, a GPS); `offboardd doctor` checks it")
        return self.hint
