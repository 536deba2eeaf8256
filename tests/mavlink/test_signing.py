"""MAVLink 2 signing: the known-answer signature, the codec's refusals, the key file.

The known answer is computed here straight from the spec (mavlink.io guide/message_signing:
signature = first 6 bytes of SHA-256(secret_key + header + payload + CRC + link_id +
timestamp), timestamp 48-bit little-endian), with hashlib and nothing of ours or pymavlink's.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from offboardd.mavlink import signing
from offboardd.mavlink.codec import MavlinkCodec, dialect
from offboardd.mavlink.signing import SigningKeyError, load_key
from offboardd.sim.cli import add_arguments, config_from_args

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


def heartbeat(custom_mode: int = 0) -> Any:
    return dialect.MAVLink_heartbeat_message(2, 12, 0, custom_mode, 0, 3)


def spec_signature(key: bytes, frame: bytes) -> bytes:
    """The spec, spelt out: the signed part is everything but the 6 signature bytes."""
    return hashlib.sha256(key + frame[:-6]).digest()[:6]


def signed_codec(key: bytes = KEY, *, sysid: int = 1, timestamp: int = 1000, link_id: int = 0,
                 **kw: object) -> MavlinkCodec:  # fmt: skip
    codec = MavlinkCodec(sysid, 1 if sysid == 1 else 191)
    codec.enable_signing(key, timestamp=timestamp, link_id=link_id, **kw)  # type: ignore[arg-type]
    return codec


# -- known answer ----------------------------------------------------------------------


def test_fixed_vector_from_the_spec() -> None:
    """A HEARTBEAT from sysid 1/compid 1, seq 0, link id 3, timestamp 1000, key 00..1f."""
    header = bytes.fromhex("fd" "09" "01" "00" "00" "01" "01" "000000")  # len 9, signed
    payload = bytes.fromhex("00000000" "02" "0c" "00" "00" "03")  # mode 0, quad, PX4, v3
    crc = bytes.fromhex("3026")
    link_and_time = bytes([3]) + (1000).to_bytes(6, "little")
    signature = hashlib.sha256(KEY + header + payload + crc + link_and_time).digest()[:6]
    assert signature == bytes.fromhex("16e3a1da4d89")  # derived once, kept as the answer
    frame = header + payload + crc + link_and_time + signature
    assert signed_codec(timestamp=1000, link_id=3).encode(heartbeat()) == frame
    assert signing.frame_signature(KEY, header + payload + crc, 3, 1000) == signature


@pytest.mark.parametrize("timestamp", [0, 1, 123_456_789, (1 << 48) - 10])
@pytest.mark.parametrize("link_id", [0, 7, 255])
def test_pymavlink_frames_match_the_spec(timestamp: int, link_id: int) -> None:
    codec = signed_codec(timestamp=timestamp, link_id=link_id)
    for msg in (
        heartbeat(7),
        dialect.MAVLink_command_long_message(1, 1, 400, 0, 1, 0, 0, 0, 0, 0, 0),  # zeros trimmed
        dialect.MAVLink_statustext_message(6, b"signed text", 0, 0),
    ):
        before = codec.signing_timestamp
        frame = codec.encode(msg)
        assert frame[2] & 0x01 and frame[-13] == link_id
        assert int.from_bytes(frame[-12:-6], "little") == before  # then +1 per frame
        assert frame[-6:] == spec_signature(KEY, frame)
        assert signing.signature_ok(KEY, frame) and not signing.signature_ok(OTHER_KEY, frame)
    assert codec.signing_timestamp == timestamp + 3


# -- the codec's refusals ----------------------------------------------------------------


def test_same_key_accepted_other_key_unsigned_and_replays_refused() -> None:
    fc = signed_codec(sysid=1)
    rx = signed_codec(sysid=1, timestamp=900)
    good = fc.encode(heartbeat(1))
    assert [m.custom_mode for m in rx.decode(good)] == [1]
    assert rx.signing_timestamp >= 1000  # follows the newest accepted timestamp (spec)
    assert rx.decode(good) == []  # the same frame again: a replay
    assert rx.decode(signed_codec(OTHER_KEY, timestamp=5000).encode(heartbeat(2))) == []
    assert rx.decode(MavlinkCodec(1, 1).encode(heartbeat(3))) == []
    tampered = bytearray(fc.encode(heartbeat(4)))
    tampered[-1] ^= 0x01
    assert rx.decode(bytes(tampered)) == []
    s = rx.stats
    assert (s.frames_ok, s.replayed, s.bad_signature, s.unsigned_refused, s.bad_crc) == (
        1, 1, 2, 1, 0)  # fmt: skip


def test_a_corrupted_signed_frame_is_a_crc_error_not_a_signature_one() -> None:
    rx = signed_codec(timestamp=900)
    frame = bytearray(signed_codec().encode(heartbeat(1)))
    frame[12] ^= 0x40  # a payload bit flipped on the wire
    assert rx.decode(bytes(frame)) == []
    assert rx.stats.bad_crc == 1 and rx.stats.bad_signature == 0


def test_a_forged_future_timestamp_does_not_silence_the_genuine_stream() -> None:
    """pymavlink 2.4.50 records a stream's timestamp before checking the signature; we must not."""
    rx = signed_codec(timestamp=900)
    genuine = signed_codec(timestamp=1000)
    forged = bytearray(genuine.encode(heartbeat(9)))
    forged[-12:-6] = ((1 << 48) - 1).to_bytes(6, "little")  # far future, signature now wrong
    assert rx.decode(bytes(forged)) == []
    assert [m.custom_mode for m in rx.decode(genuine.encode(heartbeat(1)))] == [1]
    assert rx.stats.bad_signature == 1


def test_a_new_stream_far_behind_our_timestamp_is_refused() -> None:
    """A key holder starting from 0 (pymavlink's default) is refused, as PX4 refuses ours."""
    now = signing.timestamp_from_unix(1.8e9)
    rx = signed_codec(timestamp=now)
    assert rx.decode(signed_codec(timestamp=0).encode(heartbeat())) == []
    assert rx.stats.replayed == 1
    behind_30_s = now - 30 * signing.TICKS_PER_S
    assert len(rx.decode(signed_codec(timestamp=behind_30_s, link_id=1).encode(heartbeat()))) == 1


def test_unsigned_allow_list_and_accept_unsigned() -> None:
    radio = dialect.MAVLink_radio_status_message(200, 190, 90, 40, 30, 0, 0)
    plain = MavlinkCodec(51, 68)
    rx = signed_codec(timestamp=900, unsigned_ids={dialect.MAVLINK_MSG_ID_RADIO_STATUS})
    assert [m.get_type() for m in rx.decode(plain.encode(radio))] == ["RADIO_STATUS"]
    assert rx.decode(plain.encode(heartbeat())) == []
    v1 = dialect.MAVLink(None, 51, 68)
    assert rx.decode(heartbeat().pack(v1, force_mavlink1=True)) == []  # MAVLink 1 cannot sign
    assert rx.stats.unsigned_refused == 2
    lax = signed_codec(timestamp=900, accept_unsigned=True)
    assert len(lax.decode(plain.encode(heartbeat()))) == 1
    assert lax.decode(signed_codec(OTHER_KEY).encode(heartbeat())) == []  # never a wrong one
    assert lax.stats.bad_signature == 1


def test_filtered_frames_are_never_returned_and_wanted_ones_are_checked() -> None:
    rx = MavlinkCodec(1, 191, wanted_ids={dialect.MAVLINK_MSG_ID_HEARTBEAT})
    rx.enable_signing(KEY, timestamp=900)
    other = MavlinkCodec(1, 1)
    stream = (other.encode(dialect.MAVLink_system_time_message(1, 2))
              + other.encode(heartbeat(5)) + signed_codec().encode(heartbeat(6)))  # fmt: skip
    assert [m.custom_mode for m in rx.decode(stream)] == [6]
    assert (rx.stats.filtered, rx.stats.unsigned_refused, rx.stats.frames_ok) == (1, 1, 1)


def test_a_codec_without_a_key_ignores_signatures() -> None:
    """What PX4 v1.15/v1.16 do: their MAVLink library has no signing state, so it skips the
    signature block and accepts a signed frame whatever its key (mavlink_signature_check
    returns true when signing is NULL). Our signed frames therefore reach an older FC."""
    plain = MavlinkCodec(1, 191)
    assert len(plain.decode(signed_codec(OTHER_KEY).encode(heartbeat()))) == 1


# -- the key file ------------------------------------------------------------------------


def _key_file(tmp_path: Path, content: bytes | str, mode: int = 0o600) -> Path:
    path = tmp_path / "signing.key"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    path.chmod(mode)
    return path


def test_key_file_hex_or_base64(tmp_path: Path) -> None:
    assert load_key(_key_file(tmp_path, KEY.hex().upper() + "\n")) == KEY
    assert load_key(_key_file(tmp_path, base64.b64encode(KEY) + b"\n", 0o400)) == KEY


@pytest.mark.parametrize(
    ("content", "mode", "expected"),
    [
        ("ab" * 32, 0o644, "mode 0644 lets group or others access it; allowed only the owner"),
        ("ab" * 32, 0o602, "mode 0602 lets group or others access it"),
        ("ab" * 31, 0o600, "expected 32 bytes written as 64 hex digits or 44 base64 characters"),
        ("zz" * 32, 0o600, "expected 32 bytes"),
        ("00" * 32, 0o600, "an all-zero key means 'no signing'"),
    ],
)
def test_bad_key_files_are_named(tmp_path: Path, content: str, mode: int, expected: str) -> None:
    path = _key_file(tmp_path, content, mode)
    with pytest.raises(SigningKeyError) as info:
        load_key(path)
    assert info.value.message.startswith(f"signing key file {path}: ")
    assert expected in info.value.message


def test_key_file_owned_by_someone_else_or_not_a_file(tmp_path: Path) -> None:
    path = _key_file(tmp_path, "ab" * 32)
    if os.geteuid() == 0:  # as root we can hand it to nobody; else it is someone else's already
        os.chown(path, 65534, 65534)
        with pytest.raises(SigningKeyError, match="owned by uid 65534; allowed: the user"):
            load_key(path)
    link = tmp_path / "link.key"
    link.symlink_to(path)
    with pytest.raises(SigningKeyError, match="cannot open"):
        load_key(link)
    with pytest.raises(SigningKeyError, match="not a regular file"):
        load_key(tmp_path)
    with pytest.raises(SigningKeyError, match="cannot open: No such file"):
        load_key(tmp_path / "missing.key")


def test_sim_command_line_takes_a_key_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    key = _key_file(tmp_path, KEY.hex())
    config = config_from_args(parser.parse_args(["--signing-key", str(key)]))
    assert config.signing_key == KEY and config.require_signing
    optional = parser.parse_args(["--signing-key", str(key), "--signing-optional"])
    assert not config_from_args(optional).require_signing
    key.chmod(0o644)
    with pytest.raises(SystemExit):
        parser.parse_args(["--signing-key", str(key)])
    assert "mode 0644 lets group or others access it" in capsys.readouterr().err
