"""The sim's emulated UART (offboardd/sim/transports.py): baud/10 bytes a second each way,
a 0.1 s FIFO, whole messages dropped when the line is full (as PX4's TX buffer drops
them), and a stall of the sim itself not taken for a full line."""

from __future__ import annotations

import asyncio
import os

from offboardd.sim.transports import PtyEndpoint, _Allowance

BYTES_PER_S = 5760.0  # 57,600 baud, 8N1


def test_the_line_carries_its_rate_with_a_fifo_of_a_tenth_of_a_second() -> None:
    line = _Allowance(BYTES_PER_S)
    assert line.take(0.0, 10_000) == 576  # idle: the FIFO's worth at once
    assert line.take(0.01, 10_000) == 57
    assert line.take(0.05, 10_000) == 231  # 40 ms more (and the 0.6 byte left before)


def test_a_stalled_sim_is_not_a_full_line() -> None:
    # 0.6 s late (a loaded host): the line carried 0.6 s worth meanwhile; before, only
    # the FIFO's 0.1 s went and the rest was counted dropped (CI, 2026-11-27: 3 B/s)
    line = _Allowance(BYTES_PER_S)
    line.take(0.0, 576)
    assert line.take(0.6, 10_000) == 3456


async def test_a_full_line_drops_whole_messages_not_halves() -> None:
    got = bytearray()
    end = PtyEndpoint(lambda b: None, None, baud=57_600)
    try:
        frames = [b"A" * 300, b"B" * 400, b"C" * 200]  # 900 bytes, 576 of room
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
        assert bytes(got) == b"A" * 300 + b"C" * 200  # B did not fit: dropped whole
        assert end.dropped_bytes == 400
    finally:
        end.close()
