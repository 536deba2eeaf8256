"""The sim's emulated UART (offboardd/sim/transports.py): baud/10 bytes a second each way,
a flight controller's TX buffer (1,500 bytes), whole messages dropped when it is full (as
PX4 drops them), and a stall of the sim itself not taken for a full line."""

from __future__ import annotations

import asyncio
import os

from offboardd.sim.transports import PtyEndpoint, _Allowance

BYTES_PER_S = 5760.0  # 57,600 baud, 8N1
TX_BUFFER_BYTES = 1500


def test_the_line_carries_its_rate_behind_a_buffer() -> None:
    line = _Allowance(BYTES_PER_S, TX_BUFFER_BYTES)
    assert line.take(0.0, 10_000) == 1500  # idle: the buffer's worth at once
    assert line.take(0.01, 10_000) == 57
    assert line.take(0.05, 10_000) == 231  # 40 ms more (and the 0.6 byte left before)


def test_a_stalled_sim_is_not_a_full_line() -> None:
    # 0.6 s late (a loaded host): the line carried 0.6 s worth meanwhile; before, only
    # the buffer's worth went and the rest was counted dropped (CI, 2026-11-27: 3 B/s)
    line = _Allowance(BYTES_PER_S, TX_BUFFER_BYTES)
    line.take(0.0, 1500)
    assert line.take(0.6, 10_000) == 3456


def test_streams_falling_due_together_wait_in_the_buffer() -> None:
    # PX4's slow streams fall due in the same few ticks: ~700 bytes within 30 ms on a
    # line carrying 1,700 bytes/s of its fitted streams (the sim's px4 load at 57,600
    # baud). A buffer of a tenth of a second (576 bytes) dropped one of them in a
    # 2 s window of the slow-link smoke test (CI, 2026-11-28: 15 B/s)
    line = _Allowance(BYTES_PER_S, TX_BUFFER_BYTES)
    for tick in range(100):  # 1 s at 1,700 bytes/s in 10 ms ticks
        assert line.take(tick * 0.01, 17) == 17
    assert [line.take(1.0 + i * 0.01, n) for i, n in enumerate((166, 349, 183))] == [166, 349,
                                                                                     183]


async def test_a_full_line_drops_whole_messages_not_halves() -> None:
    got = bytearray()
    end = PtyEndpoint(lambda b: None, None, baud=57_600)
    try:
        frames = [b"A" * 600, b"B" * 1000, b"C" * 400]  # 2,000 bytes, 1,500 of room
        end.send_frames(frames)
        await asyncio.sleep(0.05)
        while True:
            try:
                chunk = os.read(end._slave_fd, 4096)
            except BlockingIOError:
                break
            got += chunk
            if len(chunk) < 4096:
                break
        assert bytes(got) == b"A" * 600 + b"C" * 400  # B did not fit: dropped whole
        assert end.dropped_bytes == 1000
    finally:
        end.close()
