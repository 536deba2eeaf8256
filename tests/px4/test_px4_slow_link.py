"""Real PX4 on a 57,600-baud serial line (issue 18): what the stream plan does there.

PX4's MAVLink module fits its streams on a serial port to a data rate of baud/20 bytes a
second (half the line), slowing every stream but HEARTBEAT by one multiplier
(mavlink_main.cpp, `update_rate_mult`); the sim copies that (sim/streams.py) and the
benchmark measured it there (bench/slow_link.py). This is the oracle's run: PX4 SIH with
an onboard MAVLink instance on a pty, the daemon on the other end of a line that carries
what a 57,600-baud UART carries (serial_line.py), flown through MQTT into a hover, once
with PX4's streams left alone and once with the plan (the default).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.serial_line import SerialLine
from tests.px4.stack import flying_stack
from tests.px4.tee import OFFBOARD

BAUD = int(os.environ.get("OFFBOARDD_SLOW_LINK_BAUD", "57600"))  # (another line, by hand)
WINDOW_S = 10.0


@pytest.mark.parametrize("plan", ["px4", "minimal"])
async def test_px4_hovers_on_a_57600_baud_line(
    plan: str, px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    line = SerialLine(BAUD)
    out = px4.shell("mavlink", "start", "-d", line.px4_path, "-b", str(BAUD), "-m", "onboard")
    assert "ERROR" not in out, out
    sections = {"mavlink": {"url": f"serial://{line.daemon_path}:{BAUD}"},
                "mavlink.streams": {"plan": plan}}
    async with flying_stack(px4, mosquitto, tmp_path, sections, tee=line) as s:
        started = time.monotonic()
        await s.fc_ready(timeout_s=60.0)  # PX4's parameters read over the slow line
        ready_s = time.monotonic() - started
        await s.take_off(3.0)
        await s.in_offboard()
        received, undecodable = Counter(s.record.received), s.record.undecodable
        counts = (line.bytes_to_px4(), line.bytes_from_px4(), line.dropped_bytes())
        t0 = time.monotonic()
        await asyncio.sleep(WINDOW_S)
        t1 = time.monotonic()
        window_s = t1 - t0
        to_px4, from_px4, dropped = (
            (now - before) / window_s for now, before in zip(
                (line.bytes_to_px4(), line.bytes_from_px4(), line.dropped_bytes()), counts,
                strict=True))
        received = Counter(s.record.received) - received
        sent = [sp.t for sp in s.record.setpoints if t0 <= sp.t <= t1]
        gaps_s = [b - a for a, b in itertools.pairwise(sent)]
        local_hz = received["LOCAL_POSITION_NED"] / window_s
        measured.update(
            plan=plan, start_to_fc_ready_s=round(ready_s, 1), to_px4_bytes_s=round(to_px4),
            from_px4_bytes_s=round(from_px4), dropped_bytes_s=round(dropped),
            setpoints_per_s=round(len(sent) / window_s, 2),
            max_setpoint_gap_ms=round(1000 * max(gaps_s), 1),
            from_px4_msg_s=round(received.total() / window_s, 1),
            beyond_pymavlink_msg_s=round((s.record.undecodable - undecodable) / window_s, 1),
            local_position_hz=round(local_hz, 1),
            by_name={k: round(v / window_s, 1) for k, v in received.most_common()})
        assert s.record.mode == OFFBOARD, measured
        # the setpoints hold their rate on the line either way: far from PX4's loss timeout
        assert len(sent) / window_s >= 19.0, measured
        assert max(gaps_s) < 0.3, measured
        assert from_px4 <= line.line_bytes_s * 1.05, measured
        if plan == "px4":
            # PX4 slows its whole onboard set into baud/20 bytes/s: the position the envelope
            # brakes on comes a few times a second
            assert from_px4 <= BAUD / 20 * 1.1, measured
            assert local_hz < 10.0, measured
        else:
            # the plan's set runs at ~0.8 of its rates (LOCAL_POSITION_NED ~24/s of 30): PX4
            # budgets STATUSTEXT's 20/s x 66 B, 1,320 of the line's 2,880 B/s, whether texts
            # come or not; every other stream it does not need is off (docs/px4.md)
            assert local_hz >= 20.0, measured
