"""Bytes but no MAVLink (a wrong baud rate): said once per episode, pure, injected time."""

from __future__ import annotations

from offboardd.mavlink.codec import CodecStats
from offboardd.mavlink.link_noise import WINDOW_S, NoiseWatch


def _run(watch: NoiseWatch, stats: CodecStats, fc_known: bool, t: float) -> str | None:
    return watch.check(stats, fc_known, t)


def test_a_window_of_bytes_without_a_frame_is_said_once_until_frames_come() -> None:
    watch, stats = NoiseWatch("serial:///dev/ttyAMA0:921600"), CodecStats()
    assert _run(watch, stats, False, 0.0) is None  # the first look sets the marks
    stats.garbage_bytes += 5000
    said = _run(watch, stats, False, WINDOW_S)
    assert said is not None and "5000 bytes in 3 s on serial:///dev/ttyAMA0:921600" in said
    assert "baud rate" in said and watch.hint == said
    stats.garbage_bytes += 5000
    stats.bad_crc += 3
    assert _run(watch, stats, False, 2 * WINDOW_S) is None  # said already
    assert watch.hint is not None  # still garbled: a refused engage carries it
    stats.frames_ok += 1  # the baud fixed (or the FC began to speak)
    assert _run(watch, stats, False, 3 * WINDOW_S) is None and watch.hint is None


def test_silence_a_few_stray_bytes_or_a_known_fc_are_no_noise() -> None:
    watch, stats = NoiseWatch("udpin://0.0.0.0:14540"), CodecStats()
    _run(watch, stats, False, 0.0)
    assert _run(watch, stats, False, WINDOW_S) is None  # nothing came: silence
    stats.garbage_bytes += 20  # a cable plugged in
    assert _run(watch, stats, False, 2 * WINDOW_S) is None
    stats.garbage_bytes += 5000
    assert _run(watch, stats, True, 3 * WINDOW_S) is None  # the FC is heard: its link works
    stats.garbage_bytes += 5000
    stats.bad_signature += 40  # frames refused for their signature: MAVLink, another fault
    assert _run(watch, stats, False, 4 * WINDOW_S) is None
    assert _run(watch, stats, False, 4.5 * WINDOW_S) is None  # (within the window: not looked)


def test_frames_skipped_by_their_id_unchecked_do_not_vouch_for_the_link() -> None:
    watch, stats = NoiseWatch("serial:///dev/ttyUSB0:57600"), CodecStats()
    _run(watch, stats, False, 0.0)
    stats.garbage_bytes += 80_000
    stats.filtered += 5  # noise that looked like a frame start and an unwanted id
    stats.unknown_id += 1
    assert _run(watch, stats, False, WINDOW_S) is not None
