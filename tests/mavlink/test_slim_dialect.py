"""The slim dialect (slim_dialect_gen.py) frames exactly what the full one does, holds
every message and constant the daemon uses, and is what the generator makes today; the
daemon loads the full dialect only for a relayed message beyond it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from offboardd.core.stream_plan import (
    _KNOWN_IDS,
    DAEMON_NEEDS_HZ,
    ENGINE_STREAMS,
    PX4_ONBOARD_STREAMS,
)
from offboardd.mavlink import slim_dialect, slim_dialect_gen
from offboardd.mavlink.codec import MavlinkCodec, full_dialect

FULL = full_dialect()
SLIM_CLASSES = sorted(slim_dialect.mavlink_map.values(), key=lambda c: c.id)


def _layout(msg_class: Any) -> tuple[Any, ...]:
    return (msg_class.id, msg_class.msgname, msg_class.crc_extra, msg_class.fieldnames,
            msg_class.ordered_fieldnames, msg_class.fieldtypes, msg_class.array_lengths,
            msg_class.unpacker.format, msg_class.orders, msg_class.instance_field)  # fmt: skip


@pytest.mark.parametrize("msg_class", SLIM_CLASSES, ids=lambda c: c.msgname)
def test_each_message_has_the_full_dialects_layout_and_crc_extra(msg_class: Any) -> None:
    assert _layout(msg_class) == _layout(FULL.mavlink_map[msg_class.id])


def test_it_holds_the_messages_the_generator_lists_and_only_those() -> None:
    names = {c.msgname for c in SLIM_CLASSES}
    assert names == set(slim_dialect_gen.MESSAGES)


def test_it_holds_every_message_the_stream_plan_may_name() -> None:
    """A plan row beyond it would load the full dialect (5.7 MB) to find its id: the plan's
    own names are in its id table, the rest must be here."""
    names = {c.msgname for c in SLIM_CLASSES}
    plan = set(PX4_ONBOARD_STREAMS) | set(DAEMON_NEEDS_HZ) | set(ENGINE_STREAMS)
    assert plan - set(_KNOWN_IDS) <= names, sorted(plan - set(_KNOWN_IDS) - names)


def test_every_constant_it_defines_has_the_full_dialects_value() -> None:
    constants = {n: v for n, v in vars(slim_dialect).items()
                 if n.isupper() and isinstance(v, int) and not isinstance(v, bool)
                 and not n.endswith("_ENUM_END")}  # (one past an enum's largest entry here)
    assert len(constants) > 300
    assert {n: getattr(FULL, n) for n in constants} == constants


def _sample(msg_class: Any) -> Any:
    """A message of `msg_class` with a distinct, non-zero value in every field."""
    values: list[Any] = []
    for k, (name, ftype) in enumerate(zip(msg_class.fieldnames, msg_class.fieldtypes,
                                          strict=True)):
        length = msg_class.array_lengths[msg_class.ordered_fieldnames.index(name)]
        if ftype == "char":
            values.append(f"x{k}".encode()[: max(length, 1)])
        elif ftype in ("float", "double"):
            values.append([k + 0.5] * length if length else k + 0.5)
        else:
            values.append([k % 100 + 1] * length if length else k % 100 + 1)
    return msg_class(*values)


@pytest.mark.parametrize("msg_class", SLIM_CLASSES, ids=lambda c: c.msgname)
def test_frames_cross_between_the_dialects_both_ways(msg_class: Any) -> None:
    full_codec, slim_codec = MavlinkCodec(1, 1), MavlinkCodec(2, 2, dialect=slim_dialect)
    sent = _sample(FULL.mavlink_map[msg_class.id])
    [got] = slim_codec.decode(full_codec.encode(sent))
    assert got.to_dict() == sent.to_dict()
    back = _sample(msg_class)
    [got] = full_codec.decode(slim_codec.encode(back))
    assert got.to_dict() == back.to_dict()


def test_the_committed_file_is_what_the_generator_makes(tmp_path: Path) -> None:
    """After a pymavlink upgrade or a change of MESSAGES: `make dialect`, and commit."""
    fresh = tmp_path / "slim_dialect.py"
    slim_dialect_gen.generate(fresh)
    assert fresh.read_bytes() == slim_dialect_gen.OUTPUT.read_bytes()


def _daemon_codec(tmp_path: Path, relay: str) -> str:
    """The daemon's config loaded (its stream plan resolved) and its FC codec built, in a
    fresh interpreter; `relay`: a TOML list of message names."""
    config = tmp_path / f"relay{len(relay)}.toml"
    config.write_text(f'[mqtt]\nvehicle_id = "v"\nmavlink_relay = {relay}\n', encoding="utf-8")
    probe = textwrap.dedent(f"""
        import sys
        import offboardd.runtime
        from offboardd.config import load_config
        from offboardd.fc_codec import fc_codec
        codec = fc_codec(load_config({str(config)!r}), mqtt=True).codec
        print(codec.dialect.__name__, "pymavlink.dialects.v20.development" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout.strip().splitlines()[-1]  # (after the log line saying why)


def test_the_daemon_loads_the_full_dialect_only_for_a_relayed_message_beyond_it(
    tmp_path: Path,
) -> None:
    slim, full = "offboardd.mavlink.slim_dialect False", "pymavlink.dialects.v20.development True"
    assert _daemon_codec(tmp_path, "[]") == slim
    assert _daemon_codec(tmp_path, '["VFR_HUD"]') == slim
    assert _daemon_codec(tmp_path, '["EFI_STATUS"]') == full
