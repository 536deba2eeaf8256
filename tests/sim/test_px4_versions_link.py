"""What changes between PX4 releases, seen over real UDP and MAVLink bytes.

One test per PX4 behaviour (px4-offboard.md §7, offboardd/sim/px4_versions.py); the
v1.16 tests say the old behaviour stays.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools

import pytest

from offboardd.mavlink.params import decode_param_value, param_id_str
from offboardd.sim import cli
from offboardd.sim.params import param_specs
from offboardd.sim.px4_versions import V1_18
from offboardd.sim.streams import PROFILES
from tests.sim.client import (
    LOITER,
    OFFBOARD,
    POSCTL,
    RTL,
    Peer,
    d,
    offboard_and_arm,
    running_sim,
)

SET_MODE = d.MAV_CMD_DO_SET_MODE


async def _set_mode_acks(peer: Peer, custom_mode: int) -> list[int]:
    peer.set_mode(custom_mode)
    await peer.ack(SET_MODE)
    await asyncio.sleep(0.2)  # v1.16.2's second ACK follows within ms
    return [int(m.result) for _, m in peer.of_type("COMMAND_ACK") if m.command == SET_MODE]


async def test_v1_18_do_set_mode_answers_one_ack() -> None:
    async with running_sim(px4_version="1.18") as (sim, peer):
        assert await _set_mode_acks(peer, OFFBOARD) == [d.MAV_RESULT_ACCEPTED]
        assert [a.result for a in sim.record.acks_for(SET_MODE)] == [0]


@pytest.mark.parametrize("version", ["1.16", "1.17"])  # [SITL v1.16.2, v1.17.0]
async def test_v1_16_and_v1_17_do_set_mode_answer_two_acks_first_accepted(version: str) -> None:
    async with running_sim(px4_version=version) as (_sim, peer):
        assert await _set_mode_acks(peer, LOITER) == [0, 0]


async def test_v1_18_do_set_mode_refusal_is_the_one_ack() -> None:
    """Armed, no RC: Position cannot run; v1.18's single ACK is the refusal itself (v1.16.2
    sent ACCEPTED first)."""
    async with running_sim(px4_version="1.18") as (sim, peer):
        await offboard_and_arm(sim, peer, down=-1.0)
        before = len(peer.of_type("COMMAND_ACK"))
        peer.set_mode(POSCTL)
        await peer.wait_for(lambda m: m.get_type() == "COMMAND_ACK" and m.command == SET_MODE
                            and len(peer.of_type("COMMAND_ACK")) > before)  # fmt: skip
        await asyncio.sleep(0.2)
        acks = [m.result for _, m in peer.of_type("COMMAND_ACK")[before:]]
        assert acks == [d.MAV_RESULT_TEMPORARILY_REJECTED]
        assert sim.vehicle.mode_name == "OFFBOARD"


@pytest.mark.parametrize(("version", "double_ack", "count"), [("1.18", True, 2),
                                                              ("1.16", False, 1)])  # fmt: skip
async def test_double_ack_override_beats_the_release(version: str, double_ack: bool,
                                                     count: int) -> None:  # fmt: skip
    async with running_sim(px4_version=version, double_ack=double_ack) as (_sim, peer):
        assert len(await _set_mode_acks(peer, LOITER)) == count


async def test_v1_18_has_man_override_spd_not_com_rc_override() -> None:
    """#27041; [SITL main] MAN_OVERRIDE_SPD is REAL32 1.0, a read of COM_RC_OVERRIDE gets
    PARAM_ERROR (#345) error 1 (DOES_NOT_EXIST) naming it (#25699)."""
    async with running_sim(px4_version="1.18") as (_sim, peer):
        peer.send(d.MAVLink_param_request_list_message(1, 1))
        await asyncio.sleep(0.3)
        names = {param_id_str(m.param_id): m for _, m in peer.of_type("PARAM_VALUE")}
        assert set(names) == {s.name for s in param_specs(V1_18)}
        assert "COM_RC_OVERRIDE" not in names and "COM_RC_STICK_OV" not in names
        assert {m.param_count for m in names.values()} == {len(names)}
        spd = names["MAN_OVERRIDE_SPD"]
        assert spd.param_type == d.MAV_PARAM_TYPE_REAL32 and spd.param_value == 1.0
        nav = names["NAV_RCL_ACT"]
        assert decode_param_value(nav.param_value, nav.param_type) == 2
        peer.send(d.MAVLink_param_request_read_message(1, 1, b"COM_RC_OVERRIDE", -1))
        err = await peer.wait_for(lambda m: m.get_type() == "PARAM_ERROR")
        assert param_id_str(err.param_id) == "COM_RC_OVERRIDE"
        assert err.error == d.MAV_PARAM_ERROR_DOES_NOT_EXIST and err.param_index == -1
        assert (err.target_system, err.target_component) == (1, 191)
        peer.send(d.MAVLink_param_set_message(1, 1, b"COM_RC_STICK_OV", 30.0,
                                              d.MAV_PARAM_TYPE_REAL32))  # fmt: skip
        err = await peer.wait_for(lambda m: m.get_type() == "PARAM_ERROR")
        assert param_id_str(err.param_id) == "COM_RC_STICK_OV" and err.error == 1
        assert not peer.of_type("STATUSTEXT")  # the error is the answer now


async def test_v1_17_keeps_com_rc_override_and_answers_unknown_reads_with_silence() -> None:
    async with running_sim(px4_version="1.17") as (_sim, peer):
        peer.send(d.MAVLink_param_request_read_message(1, 1, b"MAN_OVERRIDE_SPD", -1))
        peer.send(d.MAVLink_param_request_read_message(1, 1, b"COM_RC_OVERRIDE", -1))
        msg = await peer.wait_for(lambda m: m.get_type() == "PARAM_VALUE")
        assert param_id_str(msg.param_id) == "COM_RC_OVERRIDE"
        await asyncio.sleep(0.2)
        assert len(peer.of_type("PARAM_VALUE")) == 1 and not peer.of_type("PARAM_ERROR")


REMOVED_V1_18 = [d.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES, d.MAV_CMD_REQUEST_PROTOCOL_VERSION,
                 d.MAV_CMD_GET_HOME_POSITION, d.MAV_CMD_REQUEST_FLIGHT_INFORMATION,
                 d.MAV_CMD_REQUEST_STORAGE_INFORMATION]  # fmt: skip


async def test_v1_18_removed_request_commands_unsupported() -> None:
    """#27251, #27252: 520, 519, 410, 528, 525 are gone; MAV_CMD_REQUEST_MESSAGE works."""
    async with running_sim(px4_version="1.18") as (_sim, peer):
        for cmd in REMOVED_V1_18:
            peer.command(cmd, 1)
            assert (await peer.ack(cmd)).result == d.MAV_RESULT_UNSUPPORTED, cmd
        assert not peer.of_type("AUTOPILOT_VERSION") and not peer.of_type("HOME_POSITION")
        peer.command(d.MAV_CMD_REQUEST_MESSAGE, d.MAVLINK_MSG_ID_HOME_POSITION)
        assert (await peer.ack(d.MAV_CMD_REQUEST_MESSAGE)).result == d.MAV_RESULT_ACCEPTED
        await peer.wait_for(lambda m: m.get_type() == "HOME_POSITION", include_past=True)


async def test_v1_16_old_request_commands_still_answered() -> None:
    async with running_sim(px4_version="1.16") as (_sim, peer):
        peer.command(d.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES, 1)
        assert (await peer.ack(d.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES)).result == 0
        await peer.wait_for(lambda m: m.get_type() == "AUTOPILOT_VERSION", include_past=True)
        peer.command(d.MAV_CMD_GET_HOME_POSITION)
        assert (await peer.ack(d.MAV_CMD_GET_HOME_POSITION)).result == 0


@pytest.mark.parametrize(("version", "release"), [("1.16", (1, 16, 2)), ("1.17", (1, 17, 0)),
                                                  ("1.18", (1, 18, 0))])  # fmt: skip
async def test_autopilot_version_reports_the_release(
    version: str, release: tuple[int, int, int]
) -> None:
    async with running_sim(px4_version=version) as (_sim, peer):
        peer.command(d.MAV_CMD_REQUEST_MESSAGE, d.MAVLINK_MSG_ID_AUTOPILOT_VERSION)
        av = await peer.wait_for(lambda m: m.get_type() == "AUTOPILOT_VERSION")
        major, minor, patch = release
        assert av.flight_sw_version == (major << 24) | (minor << 16) | (patch << 8) | 255


async def test_v1_18_current_mode_over_udp_on_change_capped_by_interval() -> None:
    """[SITL main] interval 0.05 s: ~2.4/s at rest, a mode change seen 0.04-0.065 s later
    (the sim ticks at 10 ms and a loaded machine adds some: up to 0.15 s here)."""
    async with running_sim(px4_version="1.18") as (sim, peer):
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, d.MAVLINK_MSG_ID_CURRENT_MODE, 50_000)
        assert (await peer.ack(d.MAV_CMD_SET_MESSAGE_INTERVAL)).result == 0
        await asyncio.sleep(0.5)
        start = sim.now()
        await asyncio.sleep(2.0)
        times = [t for t, _ in peer.of_type("CURRENT_MODE", start)]
        assert 3 <= len(times) <= 7, times  # ~2.4/s, not 20/s
        sent = sim.now()
        peer.set_mode(RTL)  # disarmed: accepted
        msg = await peer.wait_for(lambda m: m.get_type() == "CURRENT_MODE"
                                  and m.custom_mode == RTL)  # fmt: skip
        seen = next(t for t, m in reversed(peer.received) if m is msg)
        assert seen - sent <= 0.15
        everything = [t for t, _ in peer.of_type("CURRENT_MODE")]
        assert min(b - a for a, b in itertools.pairwise(everything)) >= 0.035
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, d.MAVLINK_MSG_ID_CURRENT_MODE, -1)
        await peer.ack(d.MAV_CMD_SET_MESSAGE_INTERVAL)
        stopped = sim.now()
        await asyncio.sleep(1.0)
        assert not peer.of_type("CURRENT_MODE", stopped + 0.05)


async def test_v1_18_offboard_loss_over_udp_reports_rtl_with_the_offboard_intent() -> None:
    """[SITL main] COM_OBL_RC_ACT=0, no RC: AUTO.RTL 1.09-1.13 s after the last setpoint;
    CURRENT_MODE keeps OFFBOARD as the intent."""
    async with running_sim(px4_version="1.18") as (_sim, peer):
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, d.MAVLINK_MSG_ID_CURRENT_MODE, 50_000)
        await offboard_and_arm(_sim, peer, down=-1.0)
        await asyncio.sleep(0.5)
        gap_s, msg = await peer.fallback_after_stop(RTL)
        assert 1.0 <= gap_s <= 1.4, gap_s
        assert msg.intended_custom_mode == OFFBOARD


def test_cli_px4_version_and_ack_switches() -> None:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    config = cli.config_from_args(parser.parse_args([]))
    assert config.px4_version == "1.18" and config.double_ack is None
    config = cli.config_from_args(parser.parse_args(["--px4-version", "1.16", "--single-ack"]))
    assert config.px4_version == "1.16" and config.double_ack is False
    assert cli.config_from_args(parser.parse_args(["--double-ack"])).double_ack is True
    with pytest.raises(SystemExit):
        parser.parse_args(["--px4-version", "1.15"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--single-ack", "--double-ack"])
    args = parser.parse_args(["--px4-version", "1.18", "--param", "COM_RC_OVERRIDE=2"])
    assert cli.main(args) == 2  # v1.18 has no COM_RC_OVERRIDE: refused before serving


@pytest.mark.parametrize(("version", "msg_id", "result"), [
    ("1.16", 441, d.MAV_RESULT_FAILED), ("1.16", 514, d.MAV_RESULT_FAILED),
    ("1.17", 441, d.MAV_RESULT_ACCEPTED), ("1.17", 514, d.MAV_RESULT_FAILED),
    ("1.18", 441, d.MAV_RESULT_ACCEPTED), ("1.18", 514, d.MAV_RESULT_ACCEPTED),
    ("1.16", 290, d.MAV_RESULT_ACCEPTED), ("1.17", 291, d.MAV_RESULT_ACCEPTED),
])  # fmt: skip
async def test_each_release_answers_the_plan_for_the_streams_it_has_or_lacks(
    version: str, msg_id: int, result: int
) -> None:
    """The stream plan's rows on each release: [SITL v1.16.2] GNSS_INTEGRITY (441) and
    ESTIMATOR_SENSOR_FUSION_STATUS (514) refused FAILED; [SITL v1.17.0] 514 FAILED;
    [SITL main] both accepted; ESC_INFO/ESC_STATUS (290/291) accepted everywhere."""
    async with running_sim(px4_version=version) as (_sim, peer):
        peer.command(d.MAV_CMD_SET_MESSAGE_INTERVAL, msg_id, -1)  # off
        assert (await peer.ack(d.MAV_CMD_SET_MESSAGE_INTERVAL)).result == result


# [SITL] what each release's SIH sends on its onboard link, by message id on the wire
# (20 s, streams left alone): v1.16.2 407 msg/s of 31 types, v1.17.0 407 of 32, main 429 of
# 35; and on a 57,600-baud line LOCAL_POSITION_NED at 3.0/s on v1.16.2 and v1.17.0, 2.4/s
# on main (tests/px4/test_px4_slow_link.py).
@pytest.mark.parametrize(("version", "absent", "msg_s", "lpn_hz_57600"), [
    ("1.16", {"ESC_INFO", "ESC_STATUS", "ESTIMATOR_SENSOR_FUSION_STATUS", "GNSS_INTEGRITY"},
     407, 3.0),
    ("1.17", {"ESC_INFO", "ESC_STATUS", "ESTIMATOR_SENSOR_FUSION_STATUS"}, 407, 3.0),
    ("1.18", set(), 429, 2.4),
])  # fmt: skip
async def test_each_release_sends_its_own_onboard_set(
    version: str, absent: set[str], msg_s: float, lpn_hz_57600: float
) -> None:
    async with running_sim(px4_version=version, pty=True, pty_baud=57600) as (sim, _peer):
        rates = sim.link("udp").streams.rates_hz
        line_mult = sim.link("pty").streams.rate_mult  # PX4's fitting to the line
    assert not absent & set(rates)
    assert set(PROFILES["px4"]) - absent == set(rates)
    assert abs(sum(rates.values()) - msg_s) < 0.02 * msg_s
    assert abs(30.0 * line_mult - lpn_hz_57600) < 0.15
