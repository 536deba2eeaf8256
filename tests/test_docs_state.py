"""docs/mqtt-api.md's `state` example names every key the daemon publishes, and no other
(a review found stream_plan, recorder and asyncio_tasks missing from it)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from offboardd.core.snapshot import EngineSnapshot
from offboardd.mavlink.codec import MavlinkCodec
from offboardd.recorder.recorder import Recorder
from offboardd.recorder.settings import RecorderSettings

DOC = Path(__file__).resolve().parents[1] / "docs" / "mqtt-api.md"
# what runtime._publish_state adds to the engine's snapshot, and the schema version
RUNTIME_KEYS = {"run_id", "asyncio_tasks", "recorder", "v"}
RECORDER_KEYS = {"mode", "dir", "recording", "flight", "flight_bytes", "sync_max_ms",
                 "dropped_batches", "flights_pruned", "error"}


def _state_example() -> dict[str, object]:
    text = DOC.read_text()
    after = text[text.index("**`state`**"):]
    block = re.search(r"```json\n(.*?)\n```", after, re.S)
    assert block is not None
    example: dict[str, object] = json.loads(block.group(1))
    return example


def test_the_state_example_names_every_key_the_daemon_publishes() -> None:
    engine_keys = {f.name for f in dataclasses.fields(EngineSnapshot)}
    assert set(_state_example()) == engine_keys | RUNTIME_KEYS


def test_the_recorder_example_is_what_the_recorder_reports(tmp_path: Path) -> None:
    recorder = Recorder(RecorderSettings(dir=str(tmp_path)), MavlinkCodec(1, 191), "run")
    assert set(recorder.status()) == RECORDER_KEYS
    example = _state_example()["recorder"]
    assert isinstance(example, dict) and set(example) == RECORDER_KEYS
