"""Connect checks and the engage gate: PX4 only, MAV_FWDEXTSP, stream rate vs
COM_OF_LOSS_T, parameter retries, warnings; identity and the published snapshot."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import pytest

from offboardd.core.actions import (
    Notice,
    NoticeKind,
    RequestMessage,
    RequestParams,
    SendCompanionHeartbeat,
    SetMessageInterval,
    Target,
)
from offboardd.core.commands import Arm, Engage, Hold, Release, SetSetpoint
from offboardd.core.engine_fc import NO_ESTIMATOR_STATUS, NO_ESTIMATOR_STATUS_AFTER_S
from offboardd.core.events import (
    MAV_AUTOPILOT_INVALID,
    FcEstimatorStatus,
    FcHeartbeat,
    FcLocalPosition,
    FcParamValue,
)
from offboardd.core.modes import Px4Mode, mode_from_custom, mode_name
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings
from offboardd.errors import ConfigError, ErrorCode

from .bench import FC, PX4_PARAMS, Bench

UP = PositionNed(0, 0, -5)


def test_not_px4_is_refused_clearly() -> None:
    b = Bench()
    b.fc.autopilot = 3  # ArduPilot
    b.connect()
    b.feed(Engage("e", UP))
    reply = b.reply("e")
    assert reply.code is ErrorCode.FC_NOT_PX4 and "not PX4" in reply.message
    assert any("not PX4" in n.message for n in b.notices(NoticeKind.WARNING))


def test_mav_fwdextsp_zero_is_refused() -> None:
    b = Bench()
    b.connect({**PX4_PARAMS, "MAV_FWDEXTSP": 0})
    b.feed(Engage("e", UP))
    reply = b.reply("e")
    assert reply.reason is Reason.FWDEXTSP_DISABLED and "MAV_FWDEXTSP" in reply.message


def test_stream_too_slow_for_com_of_loss_t_is_refused() -> None:
    b = Bench(EngineSettings(setpoint_rate_hz=5.0))  # period 0.2 s
    b.connect({**PX4_PARAMS, "COM_OF_LOSS_T": 0.5})  # needs <= 0.125 s
    b.feed(Engage("e", UP))
    reply = b.reply("e")
    assert reply.reason is Reason.STREAM_TOO_SLOW and "COM_OF_LOSS_T" in reply.message
    ok = Bench(EngineSettings(setpoint_rate_hz=5.0))
    ok.connect({**PX4_PARAMS, "COM_OF_LOSS_T": 0.8})  # 0.2 <= 0.8 / 4
    ok.commander_alive = True
    ok.feed(Engage("e", UP))
    assert ok.phase() is Phase.WARMUP


def test_engage_refused_until_parameters_are_read() -> None:
    b = Bench()
    b.step(0.0)
    b.feed(Engage("e", UP))
    assert b.reply("e").reason is Reason.FC_PARAMS_UNKNOWN


def test_engage_refused_before_any_fc() -> None:
    b = Bench()
    b.fc_alive = False
    b.step(0.1)
    b.feed(Engage("e", UP))
    assert b.reply("e").reason is Reason.FC_UNKNOWN


def test_connect_requests_version_current_mode_and_params_with_bounded_retries() -> None:
    b = Bench(EngineSettings(param_retries=2, param_retry_s=1.0))
    b.step(10.0)  # the FC never answers
    assert len(b.actions(RequestParams)) == 3 and len(b.actions(RequestMessage)) == 3
    (interval,) = [a for _, a in b.actions(SetMessageInterval)]
    # 50 ms: from v1.17 PX4 holds a CURRENT_MODE change back until the interval is over
    assert interval.message_id == 436 and interval.interval_us == 50_000
    warnings = [n.message for n in b.notices(NoticeKind.WARNING)]
    assert any("COM_OF_LOSS_T could not be read" in w for w in warnings)


def test_surprising_settings_are_warned_once() -> None:
    b = Bench()
    b.connect({**PX4_PARAMS, "COM_RCL_EXCEPT": 4, "COM_OBL_RC_ACT": 0, "COM_RC_OVERRIDE": 3})
    warnings = [n.message for n in b.notices(NoticeKind.WARNING)]
    assert any("RC loss is ignored" in w for w in warnings)
    assert any("Position" in w for w in warnings)
    assert not any("COM_RC_OVERRIDE" in w for w in warnings)  # bit 1 set: sticks take over
    assert b.engine.snapshot(b.now).warnings == tuple(warnings)


def test_warnings_about_the_fc_are_judged_afresh_when_it_comes_back() -> None:
    """Found by review: state.warnings kept every warning for the run. A parameter fixed
    (and the FC rebooted) was still warned of in every state for weeks, and each distinct
    bad value an FC sent added a warning to every state for good."""
    b = Bench()
    b.connect({**PX4_PARAMS, "COM_RCL_EXCEPT": 4})
    assert any("RC loss is ignored" in w for w in b.engine.snapshot(b.now).warnings)
    for value in range(100):
        b.feed(FcParamValue("COM_OF_LOSS_T", 61.0 + value, **FC))
    assert len(b.engine.snapshot(b.now).warnings) <= 32 + 1  # bounded
    b.fc_alive = False  # the operator fixes COM_RCL_EXCEPT; the FC reboots
    b.step(5.0)
    b.fc_alive = True
    b.step(1.1)
    b.connect()  # the FC back, its parameters read again
    warnings = b.engine.snapshot(b.now).warnings
    assert not any("RC loss is ignored" in w or "FC sent" in w for w in warnings), warnings
    assert any("COM_RC_OVERRIDE" in w for w in warnings)  # what still holds is said again


def test_gcs_and_other_systems_are_ignored() -> None:
    b = Bench()
    b.feed(FcHeartbeat(MAV_AUTOPILOT_INVALID, 6, 0, 0, 4, source_system=255, source_component=190))
    assert b.engine.vehicle.target is None
    b.connect()
    b.feed(FcHeartbeat(12, 2, 0, 0, 4, source_system=2, source_component=1))
    b.feed(FcLocalPosition(1, 99, 99, 99, 0, 0, 0, source_system=2, source_component=1))
    assert b.engine.vehicle.target == Target(1, 1)
    assert b.engine.vehicle.local_position.north_m != 99  # type: ignore[union-attr]


def test_companion_heartbeat_at_1_hz_with_the_vehicle_sysid() -> None:
    b = Bench(EngineSettings(companion_component_id=191))
    b.connect()
    t = b.now
    b.step(10.0)
    hbs = b.actions(SendCompanionHeartbeat, since=t + 1e-9)
    assert len(hbs) == 10
    assert {(a.system_id, a.component_id) for _, a in hbs} == {(FC["source_system"], 191)}


def test_the_companion_heartbeat_goes_on_while_the_px4_followed_is_lost() -> None:
    """A PX4 that came back from a reboot with an old signing timestamp is heard again only
    once it takes a newer one from a signed frame of ours (review): 1 Hz, to its system."""
    b = Bench(EngineSettings(companion_component_id=191))
    b.connect()
    b.fc_alive = False
    b.step(4.0)  # lost after fc_timeout_s (3 s)
    assert not b.engine.fc_up
    t = b.now
    b.step(10.0)
    hbs = b.actions(SendCompanionHeartbeat, since=t + 1e-9)
    assert 9 <= len(hbs) <= 11
    assert {(a.system_id, a.component_id) for _, a in hbs} == {(FC["source_system"], 191)}


def test_while_streaming_the_companion_heartbeat_rides_on_the_ticks() -> None:
    """No wake-up of its own (each costs the daemon as much as a tick): sent with the
    first tick (or FC event) at or after it is due, so still 1 Hz, at most a period late."""
    b = Bench()
    b.engage(UP)
    t = b.now
    for _ in range(200):
        b.step(0.05)
        assert b.engine.next_deadline() == b.engine.feed.deadline()
    hbs = [at for at, _ in b.actions(SendCompanionHeartbeat, since=t)]
    assert 9 <= len(hbs) <= 11
    period_s = b.engine.settings.stream_period_s
    assert max(later - at for at, later in itertools.pairwise(hbs)) <= 1 + period_s


def test_commands_refused_by_phase_name_phase_and_command() -> None:
    b = Bench()
    b.connect()
    for cmd, reason in ((SetSetpoint("s", UP), Reason.NOT_IN_CONTROL),
                        (Release("r"), Reason.PHASE_NOT_ALLOWED)):
        reply = b.reply(cmd.command_id) if b.feed(cmd) else None
        assert reply is not None and reply.reason is reason
        assert cmd.kind.value in reply.message and "idle" in reply.message
    # arm in IDLE is allowed (its reply waits for the heartbeat); hold in IDLE is a
    # plain mode request, answered once the FC reports the mode
    b.feed(Arm("a"))
    assert b.no_reply("a")
    b.feed(Hold("h"))
    assert b.mode_requests()[-1][1] is Px4Mode.AUTO_LOITER
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.reply("h").ok and b.phase() is Phase.IDLE


def test_snapshot_is_json_friendly_and_next_deadline_is_in_the_future() -> None:
    b = Bench()
    b.engage(UP)
    snap = b.engine.snapshot(b.now)
    data = json.loads(json.dumps(snap.as_dict()))
    rounded = {name: round(value, 3) for name, value in dataclasses.asdict(snap).items()
               if isinstance(value, float)}  # (test_snapshot.py)
    assert snap.as_dict() == {**dataclasses.asdict(snap), "warnings": list(snap.warnings),
                              **rounded}
    assert data["phase"] == "active" and data["fc_mode"] == "OFFBOARD"
    assert data["com_of_loss_t_s"] == 1.0 and data["com_obl_rc_act"] == "Hold"
    assert data["estimates"]["local_position"] is True
    assert 19.0 < data["stream_rate_hz"] < 21.0
    b.engine.poll(b.now)
    assert b.now < b.engine.next_deadline() < math.inf


def test_settings_are_validated_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="setpoint_rate_hz"):
        EngineSettings(setpoint_rate_hz=0)
    with pytest.raises(ConfigError, match="command_loss_action"):
        EngineSettings(command_loss_action="explode")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="mode_retries"):
        EngineSettings(mode_retries=1.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="fc_timeout_s"):
        EngineSettings(fc_timeout_s=math.nan)
    assert EngineSettings(release_mode="land").release_mode.value == "land"  # type: ignore[arg-type]


def test_mode_names() -> None:
    assert mode_from_custom(Px4Mode.AUTO_LOITER.custom_mode) is Px4Mode.AUTO_LOITER
    assert mode_name(Px4Mode.AUTO_LOITER.custom_mode) == "AUTO.LOITER"
    assert mode_name(None) == "unknown" and mode_name(8 << 16) == "main8.sub0"


def test_checks_restart_when_a_px4_autopilot_replaces_a_component_heard_first() -> None:
    b = Bench()
    b.feed(FcHeartbeat(0, 26, 0, 0, 4, source_system=1, source_component=154))
    b.step(0.0)  # now the PX4 autopilot's heartbeat
    targets = [a.target for _, a in b.actions(RequestParams)]
    assert targets[-1] == Target(1, 1)
    b.connect()
    b.commander_alive = True
    b.feed(Engage("e", UP))
    assert b.phase() is Phase.WARMUP


def test_a_cycle_folds_what_the_link_held_before_it_judges_the_fc_timeout() -> None:
    """`step` (the polled link's cycle): the FC messages read just now count before the
    timers run, so a heartbeat that waited in the socket is no lost FC. `handle_all`
    (messages as they come) runs the timers first: lost, then found again."""
    b = Bench()
    b.connect()
    engine = b.engine

    def late() -> float:
        assert engine.vehicle.last_heartbeat_s is not None
        return engine.vehicle.last_heartbeat_s + engine.settings.fc_timeout_s + 0.01

    stepped = engine.step([b.fc.heartbeat()], late())
    assert engine.fc_up and not [a for a in stepped if isinstance(a, Notice)]
    handled = engine.handle_all([b.fc.heartbeat()], late())
    assert [a.kind for a in handled if isinstance(a, Notice)] == [NoticeKind.FC_LINK] * 2


@pytest.mark.parametrize(("name", "value"), [
    ("COM_OBL_RC_ACT", math.nan), ("NAV_RCL_ACT", math.inf), ("COM_OF_LOSS_T", -1.0),
    ("COM_OF_LOSS_T", math.nan), ("COM_RC_OVERRIDE", -math.inf),
])
def test_a_parameter_value_px4_cannot_have_is_ignored_and_the_state_still_reads(
    name: str, value: float
) -> None:
    """Found by review: one CRC-valid PARAM_VALUE with COM_OBL_RC_ACT = NaN made every
    later state snapshot raise (int(nan)), and on a serial link the daemon exited."""
    b = Bench()
    b.connect()
    b.feed(FcParamValue(name, value, **FC))
    assert any(name in n.message and "ignored" in n.message
               for n in b.notices(NoticeKind.WARNING))
    assert b.engine.checks.params.get(name) == PX4_PARAMS.get(name)
    json.dumps(b.engine.snapshot(b.now).as_dict())  # the state still reads
    b.engage(UP)
    assert b.phase() is Phase.ACTIVE


def test_a_link_without_estimator_status_is_warned_of_and_the_warning_retracted() -> None:
    """PX4 streams its position whether its estimate is valid or not (since v1.14): without
    ESTIMATOR_STATUS a dead-reckoned one would count as valid. Heard from for 15 s
    without one (a slow line sends one every ~12 s), the daemon says so; one heard, the
    warning goes; the FC back after a loss is judged afresh."""
    b = Bench()
    b.connect()
    b.step(NO_ESTIMATOR_STATUS_AFTER_S - 1.0)
    assert NO_ESTIMATOR_STATUS not in b.engine.snapshot(b.now).warnings
    b.step(2.0)
    said = [n.message for n in b.notices(NoticeKind.WARNING)]
    assert said.count(NO_ESTIMATOR_STATUS) == 1
    assert NO_ESTIMATOR_STATUS in b.engine.snapshot(b.now).warnings
    b.step(5.0)
    assert [n.message for n in b.notices(NoticeKind.WARNING)].count(NO_ESTIMATOR_STATUS) == 1
    b.feed(FcEstimatorStatus(895, **FC))
    assert NO_ESTIMATOR_STATUS not in b.engine.snapshot(b.now).warnings
    b.step(20.0)  # flags heard: no warning again
    assert [n.message for n in b.notices(NoticeKind.WARNING)].count(NO_ESTIMATOR_STATUS) == 1


def test_an_fc_rebooted_is_given_its_time_to_send_estimator_status_again() -> None:
    """A reboot forgets the flags; judged by when the FC first came up, the warning came at
    once, before the booting FC could send one (review, 2026-11-29)."""
    b = Bench()
    b.connect()
    b.feed(FcEstimatorStatus(895, **FC))
    b.step(NO_ESTIMATOR_STATUS_AFTER_S + 5.0)
    b.fc.boot_ms = 500  # time_boot_ms went back: the FC rebooted
    b.step(2.0)
    assert NO_ESTIMATOR_STATUS not in b.engine.snapshot(b.now).warnings
    b.step(NO_ESTIMATOR_STATUS_AFTER_S)
    assert NO_ESTIMATOR_STATUS in b.engine.snapshot(b.now).warnings
