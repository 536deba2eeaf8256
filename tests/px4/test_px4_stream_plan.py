"""Real PX4: the stream plan (issue 18). After the daemon identified PX4 it asks, on its own
link, for only what it needs; measured at the tee between PX4 and the daemon: PX4's
messages per second on that link before and after, and what PX4 refused."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import Stack, flying_stack


async def _rate(s: Stack, seconds: float) -> tuple[float, Counter[str]]:
    """PX4's messages/s (pymavlink's and those beyond it: ESC_INFO, ESC_STATUS...) and the
    named ones by name."""
    before, beyond = Counter(s.record.received), s.record.undecodable
    await asyncio.sleep(seconds)
    diff = Counter(s.record.received)
    diff.subtract(before)
    return (sum(diff.values()) + s.record.undecodable - beyond) / seconds, diff


async def test_px4_streams_only_what_the_daemon_asked_for(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    leave_alone = {"mavlink.streams": {"plan": "px4"}}  # PX4's defaults: the "before"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with flying_stack(px4, mosquitto, tmp_path / "a", leave_alone) as s:
        await s.fc_ready()
        before_msg_s, before = await _rate(s, 3.0)  # PX4's defaults on the daemon's link
    await asyncio.sleep(1.0)  # the first tee's and GCS peer's sockets are released
    async with flying_stack(px4, mosquitto, tmp_path / "b") as s:
        state = await s.client.wait_for_state(
            lambda st: (st.get("stream_plan") or {}).get("pending") == 0, 30)
        plan = state["stream_plan"]
        await asyncio.sleep(1.0)
        after_msg_s, names = await _rate(s, 5.0)
        measured.update(before_msg_s=round(before_msg_s), after_msg_s=round(after_msg_s),
                        before_by_name={k: round(v / 3.0, 1) for k, v in before.items() if v},
                        applied=plan["applied"], rows=plan["rows"], refused=plan["refused"],
                        after_by_name={k: round(v / 5.0, 1) for k, v in names.items() if v})
        assert after_msg_s < before_msg_s / 3, measured
        assert plan["applied"] >= plan["rows"] - len(plan["refused"])
        # what the daemon reads keeps coming
        for name in ("LOCAL_POSITION_NED", "ATTITUDE", "GLOBAL_POSITION_INT", "HEARTBEAT"):
            assert names[name] > 0, name
        state = await s.fc_ready()
        assert state["estimates"]["local_position"]
