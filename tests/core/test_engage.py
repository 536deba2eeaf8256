"""Engage: warm-up, OFFBOARD confirmed from telemetry only, bounded retries, arming."""

from __future__ import annotations

import itertools

import pytest

from offboardd.core.actions import (
    ArmDisarm,
    Notice,
    NoticeKind,
    Reply,
    RequestMode,
    RequestParams,
    SendCompanionHeartbeat,
    SendSetpoint,
)
from offboardd.core.commands import Arm, Engage, Hold, Land, Release, SetSetpoint
from offboardd.core.engine_engage import warmup_gap_limit_s
from offboardd.core.events import (
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    AckResult,
    FcCommandAck,
    FcEstimatorStatus,
    FcGlobalPosition,
)
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.retry import ACCEPTED_REPORT_WAIT_S
from offboardd.core.setpoints import (
    AltitudeFrame,
    Attitude,
    GlobalPosition,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityNed,
)
from offboardd.core.settings import EngineSettings, LossAction
from offboardd.errors import ConfigError, ErrorCode

from .bench import FC, PX4_PARAMS, Bench

UP = PositionNed(0, 0, -5)
OFFBOARD = Px4Mode.OFFBOARD


def start(bench: Bench, setpoint: Setpoint | None = UP, arm: bool = False) -> float:
    bench.connect()
    bench.commander_alive = True
    bench.feed(Engage("e", setpoint, arm=arm))
    return bench.now


@pytest.mark.parametrize("warmup_s", [1.0, 1.7])
def test_offboard_is_requested_only_after_warmup_of_streaming(warmup_s: float) -> None:
    b = Bench(EngineSettings(warmup_s=warmup_s))
    t0 = start(b)
    assert b.phase() is Phase.WARMUP
    b.step(warmup_s - 0.01)
    assert b.mode_requests() == []
    b.step(0.02)
    ((t_req, mode),) = b.mode_requests()
    first_setpoint = b.setpoint_times()[0]
    assert first_setpoint == t0 and mode is OFFBOARD
    assert t_req - first_setpoint >= warmup_s
    # it streamed the whole warm-up at the configured rate
    assert len(b.setpoint_times(since=t0)) >= warmup_s * 20


def test_warmup_below_one_second_cannot_be_configured() -> None:
    with pytest.raises(ConfigError, match="warmup_s"):
        EngineSettings(warmup_s=0.5)


def test_ack_alone_never_confirms_and_late_mode_report_does() -> None:
    b = Bench()
    start(b)
    b.step(1.0)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.step(0.75)  # ACCEPTED, yet no CURRENT_MODE: the ACK alone proves nothing
    assert b.phase() is Phase.ENGAGING and b.no_reply("e")
    b.set_mode(OFFBOARD, current_mode=False)  # only the next 1 Hz HEARTBEAT will say so
    b.step(0.5)
    assert b.phase() is Phase.ACTIVE
    assert b.reply("e").ok and len(b.mode_requests()) == 1


def test_mode_reported_after_the_confirm_timeout_is_retried_then_confirmed() -> None:
    b = Bench(EngineSettings(mode_confirm_timeout_s=0.5))
    start(b)
    b.step(1.0)
    b.step(0.6)  # timed out: second request
    assert len(b.mode_requests()) == 2
    b.set_mode(OFFBOARD)
    assert b.phase() is Phase.ACTIVE and b.reply("e").ok


def test_double_ack_first_accepted_then_rejected_is_a_refusal() -> None:
    # PX4 v1.16.2 answers DO_SET_MODE twice; the first is always ACCEPTED (§4).
    b = Bench()
    start(b)
    b.step(1.0)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    assert b.phase() is Phase.ENGAGING
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)  # a duplicate counts once
    assert b.engine._mode_try.refusals == 1
    b.step(b.settings.retry_backoff_s)
    assert len(b.mode_requests()) == 2
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.set_mode(OFFBOARD)
    assert b.phase() is Phase.ACTIVE and b.reply("e").ok


def test_retries_exhausted_is_a_coded_failure_with_a_diagnosis() -> None:
    b = Bench(EngineSettings(mode_retries=2))
    start(b)
    b.step(1.0)
    for _ in range(3):
        b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
        b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
        b.step(b.settings.retry_backoff_s + 0.01)
    assert len(b.mode_requests()) == 3
    reply = b.reply("e")
    assert not reply.ok and reply.code is ErrorCode.FC_REFUSED
    assert reply.reason is Reason.MODE_REFUSED
    assert "TEMPORARILY_REJECTED" in reply.message and "stream was fresh" in reply.message
    assert "local_position estimate" in reply.message
    assert b.phase() is Phase.IDLE and not b.engine.stream.running
    t_fail = b.now
    b.step(3.0)
    assert b.setpoint_times(since=t_fail + 1e-9) == [] and len(b.mode_requests()) == 3


def test_silent_fc_times_out_with_fc_timeout_code() -> None:
    b = Bench(EngineSettings(mode_retries=1, mode_confirm_timeout_s=0.5))
    start(b)
    b.step(3.0)
    reply = b.reply("e")
    assert reply.code is ErrorCode.FC_TIMEOUT and reply.reason is Reason.MODE_TIMEOUT
    # disarmed, with HEARTBEATs saying the mode it stayed in: nothing of ours flies, stopped
    assert [m for _, m in b.mode_requests()] == [OFFBOARD, OFFBOARD]
    assert b.phase() is Phase.IDLE and not b.engine.feed.running


def test_engage_and_arm_confirms_armed_from_heartbeat() -> None:
    b = Bench()
    start(b, arm=True)
    b.auto_fc(arm_delay_s=0.55)
    b.step(1.1)
    assert b.phase() is Phase.ARMING
    (arm,) = [a for _, a in b.actions(ArmDisarm)]
    assert arm.arm and not arm.force
    b.step(0.5)
    assert b.phase() is Phase.ARMING and b.no_reply("e")  # ACK came, heartbeat lags
    b.step(1.5)
    assert b.phase() is Phase.ACTIVE and b.reply("e").ok


def test_arming_refused_fails_the_engage() -> None:
    b = Bench(EngineSettings(mode_retries=0))
    start(b, arm=True)
    b.step(1.0)
    b.set_mode(OFFBOARD)
    assert b.phase() is Phase.ARMING
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.TEMPORARILY_REJECTED)
    reply = b.reply("e")
    assert reply.reason is Reason.ARM_REFUSED and reply.code is ErrorCode.FC_REFUSED
    assert "vehicle disarmed" in reply.message
    assert not b.engine.stream.running


def test_an_accepted_arm_is_never_sent_again_and_a_later_disarm_is_a_takeover() -> None:
    """PX4 answers ACCEPTED only when it armed (Commander::handle_command). A person who
    disarms from a GCS in the second before HEARTBEAT showed the arm (its flag lags the ACK
    by ~0.55 s, §4) is answered by no second arm: the next HEARTBEAT saying disarmed,
    ARM_REPORT_SETTLE_S after the ACK, is a takeover (review: it re-armed and took off)."""
    b = Bench()
    start(b, arm=True)
    b.fc.down_m = 0.0
    b.step(1.0)
    b.set_mode(OFFBOARD)
    assert b.phase() is Phase.ARMING
    t_ack = b.now
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.ACCEPTED)  # armed, for 0.4 s only:
    b.step(5.0)  # the HEARTBEATs after it all say disarmed
    assert len(b.actions(ArmDisarm)) == 1
    assert b.phase() is Phase.PREEMPTED and not b.engine.feed.running
    assert b.reply("e").reason is Reason.PREEMPTED_DISARMED
    (t_stop,) = [t for t, a in b.log if isinstance(a, Notice) and "disarmed" in a.message]
    assert t_ack + 1.0 <= t_stop <= t_ack + 2.0


def test_after_a_disarm_under_us_only_an_arm_quoting_the_new_token_arms() -> None:
    """An arm written before a person disarmed the vehicle, delivered late (a bridged
    broker, a stalled network), must not re-arm it (found by review)."""
    b = Bench()
    b.fc.down_m = 0.0
    start(b, arm=True)
    b.auto_fc()
    b.step(3.0)
    assert b.phase() is Phase.ACTIVE
    b.set_armed(False)  # a GCS disarms it
    b.step(1.5)
    assert b.phase() is Phase.PREEMPTED
    arms = len(b.actions(ArmDisarm))
    b.feed(Arm("late"))
    reply = b.reply("late")
    assert reply.reason is Reason.NOT_IN_CONTROL and reply.resume == b.engine.resume_token
    assert 'arm with "resume"' in reply.message
    assert len(b.actions(ArmDisarm)) == arms
    b.feed(Arm("now", resume=b.engine.resume_token))
    assert len(b.actions(ArmDisarm)) == arms + 1 and b.no_reply("now")


@pytest.mark.parametrize("failure", ["lease lapsed", "released", "OFFBOARD refused"])
def test_an_engage_from_a_taken_phase_that_fails_leaves_the_vehicle_taken(failure: str) -> None:
    """Found by review: a re-engage quoting the token after a GCS disarmed the vehicle
    that failed went to IDLE, where an arm or a hold written before the takeover (no token)
    acts again. It goes back to `preempted` instead, with a new token."""
    b = Bench()
    b.fc.down_m = 0.0
    start(b, arm=True)
    b.auto_fc()
    b.step(3.0)
    b.set_armed(False)  # a GCS disarms it
    b.set_mode(Px4Mode.POSCTL)  # and a pilot has the sticks
    b.step(1.5)
    assert b.phase() is Phase.PREEMPTED
    b.feed(Engage("re", UP, arm=True, resume=b.engine.resume_token))  # written since
    assert b.phase() is Phase.WARMUP and b.engine.resume_token is not None
    engaged_token = b.engine.resume_token
    if failure == "lease lapsed":
        b.commander_alive = False
        b.step(b.settings.command_timeout_s + 0.1)
    elif failure == "released":
        b.feed(Release("rel"))
        assert b.reply("rel").ok
    else:
        b.hooks.clear()  # PX4 refuses OFFBOARD from now on
        b.step(b.settings.warmup_s + 0.05)
        for _ in range(20):  # every attempt
            if b.phase() is not Phase.ENGAGING:
                break
            b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)
            b.step(1.0)
    assert b.phase() is Phase.PREEMPTED, failure
    assert b.engine.resume_token not in (None, engaged_token)  # taken again: a new token
    arms = len(b.actions(ArmDisarm))
    b.feed(Arm("late-arm"))  # written before the takeover, delivered now
    b.feed(Hold("late-hold"))
    for late in ("late-arm", "late-hold"):
        assert b.reply(late).reason is Reason.NOT_IN_CONTROL, late
    assert len(b.actions(ArmDisarm)) == arms


def test_a_plain_hold_from_preempted_that_a_pilot_overrides_goes_back_to_preempted() -> None:
    # a hold quoting the token, asked for (not streaming); the pilot picks a mode meanwhile
    b = Bench()
    start(b)
    b.auto_fc()
    b.step(2.0)
    b.hooks.clear()  # the FC takes no more requests by itself
    b.set_mode(Px4Mode.POSCTL)  # a pilot
    b.step(0.5)
    assert b.phase() is Phase.PREEMPTED
    taken_token = b.engine.resume_token
    b.feed(Hold("h", resume=taken_token))
    # the quoting commander's token holds while its request is under way (it may land instead)
    assert b.phase() is Phase.RELEASING and b.engine.resume_token == taken_token
    b.set_mode(Px4Mode.ALTCTL)  # the pilot again, before PX4 took the hold
    b.step(0.1)
    assert b.phase() is Phase.PREEMPTED and b.reply("h").reason is Reason.PREEMPTED_MODE
    assert b.engine.resume_token not in (None, taken_token)
    assert b.reply("h").resume == b.engine.resume_token  # the token to quote next
    b.feed(Land("late"))  # written before: refused, the pilot keeps the vehicle
    assert b.reply("late").reason is Reason.NOT_IN_CONTROL


def test_a_current_mode_after_an_accepted_arm_is_no_disarm() -> None:
    """CURRENT_MODE has no armed flag: read 1 s after the ACK with a HEARTBEAT lost, the
    last HEARTBEAT's "disarmed" once stopped the stream of a vehicle climbing in OFFBOARD
    (review of the first fix). Only a HEARTBEAT says disarmed."""
    b = Bench()
    start(b, arm=True)
    b.step(1.0)
    b.set_mode(OFFBOARD)
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.ACCEPTED)
    b.heartbeat_alive = False
    b.step(1.2)
    b.set_mode(OFFBOARD)  # a CURRENT_MODE (PX4 sends them ~2 Hz at rest)
    assert b.phase() is Phase.ARMING and b.engine.feed.running
    b.fc.armed, b.heartbeat_alive = True, True
    b.step(1.0)
    assert b.phase() is Phase.ACTIVE and b.reply("e").ok


def test_an_accepted_arm_never_reported_ends_the_engage_without_a_second_arm() -> None:
    b = Bench()
    start(b, arm=True)
    b.step(1.0)
    b.set_mode(OFFBOARD)
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.ACCEPTED)
    b.heartbeat_alive = False  # no HEARTBEAT says either way (the rest flows)
    b.step(ACCEPTED_REPORT_WAIT_S - 0.1)  # (a HEARTBEAT lost is waited for)
    assert b.phase() is Phase.ARMING and b.no_reply("e")
    b.step(0.15)
    reply = b.reply("e")
    assert reply.reason is Reason.ARM_TIMEOUT and "accepted but never reported" in reply.message
    assert len(b.actions(ArmDisarm)) == 1
    # it may be armed and climbing: handed to release_mode, streaming, not to the loss action
    assert b.phase() is Phase.RELEASING and b.engine.feed.running


def test_offboard_accepted_for_an_armed_vehicle_is_not_asked_again_over_a_pilot() -> None:
    """Armed, PX4 accepts OFFBOARD only when it switches (§4). A pilot who flips back to
    the engage's starting mode before any report showed OFFBOARD (no CURRENT_MODE, 1 Hz
    HEARTBEAT) is a takeover, not a request still pending (review: asked again at 2.5 s)."""
    b = Bench()
    b.fc.armed = True
    start(b)
    b.step(1.0)
    assert len(b.mode_requests()) == 1
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.fc.custom_mode = OFFBOARD.custom_mode  # switched; no report of it reaches us
    b.step(0.4)
    b.fc.custom_mode = Px4Mode.POSCTL.custom_mode  # the pilot takes it back
    b.step(3.0)
    assert len(b.mode_requests()) == 1
    assert b.phase() is Phase.PREEMPTED and not b.engine.feed.running


def test_offboard_accepted_then_refused_armed_is_asked_again() -> None:
    # v1.16.2's first ACK is always ACCEPTED: the second, a refusal, is what counts (§4)
    b = Bench()
    b.fc.armed = True
    start(b)
    b.step(1.0)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
    b.step(b.settings.retry_backoff_s + 0.01)
    assert len(b.mode_requests()) == 2 and b.phase() is Phase.ENGAGING


def test_offboard_accepted_while_disarmed_is_asked_again() -> None:
    # disarmed, PX4 accepts every mode, even one it then never takes (§4, §7)
    b = Bench(EngineSettings(mode_confirm_timeout_s=0.5))
    start(b)
    b.step(1.0)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.step(0.6)
    assert len(b.mode_requests()) == 2 and b.phase() is Phase.ENGAGING


def test_a_refusal_addressed_to_another_client_is_not_ours() -> None:
    """Behind mavlink-router PX4's ACKs to a ground station reach our link too: its refused
    arm must not fail our engage; the same refusal addressed to us (or to no one) does."""
    b = Bench(EngineSettings(mode_retries=0))
    start(b, arm=True)
    b.step(1.0)
    b.set_mode(OFFBOARD)
    assert b.phase() is Phase.ARMING
    ours = b.settings.companion_component_id
    for system, component in ((255, 190), (1, 190), (7, ours)):
        b.feed(FcCommandAck(MAV_CMD_COMPONENT_ARM_DISARM, int(AckResult.TEMPORARILY_REJECTED),
                            system, component, **FC))
        b.feed(FcCommandAck(MAV_CMD_DO_SET_MODE, int(AckResult.DENIED), system, component,
                            **FC))
    assert b.phase() is Phase.ARMING and b.no_reply("e")
    b.feed(FcCommandAck(MAV_CMD_COMPONENT_ARM_DISARM, int(AckResult.TEMPORARILY_REJECTED),
                        1, ours, **FC))
    assert b.reply("e").reason is Reason.ARM_REFUSED


def test_the_companion_heartbeat_goes_before_the_first_commands() -> None:
    """It gives our frames the vehicle's system id (the runtime sets it from this action):
    the first commands after the FC appears must carry it, or their ACKs are not ours."""
    b = Bench()
    b.step(0.0)  # the FC's first heartbeat
    kinds = [type(a) for _, a in b.log]
    assert SendCompanionHeartbeat in kinds and RequestParams in kinds
    assert kinds.index(SendCompanionHeartbeat) < kinds.index(RequestParams)


def test_lease_lost_during_warmup_aborts_without_requesting_offboard() -> None:
    b = Bench()
    start(b)
    b.commander_alive = False
    b.step(5.0)
    assert b.mode_requests() == [] and b.actions(ArmDisarm) == []
    reply = b.reply("e")
    assert reply.reason is Reason.LEASE_LAPSED and not reply.ok
    assert b.phase() is Phase.IDLE and not b.engine.stream.running


def test_lease_lost_while_engaging_never_arms() -> None:
    b = Bench()
    start(b, arm=True)
    b.step(1.0)
    assert b.phase() is Phase.ENGAGING
    b.commander_alive = False
    b.step(1.2)
    b.set_mode(OFFBOARD)
    b.step(2.0)
    assert b.actions(ArmDisarm) == [] and b.reply("e").reason is Reason.LEASE_LAPSED


def test_preemption_during_engage_stops_and_never_retries() -> None:
    b = Bench()
    start(b)
    b.step(1.0)
    b.set_mode(Px4Mode.AUTO_LOITER)  # a GCS switched mode while we were engaging
    assert b.phase() is Phase.PREEMPTED
    assert b.reply("e").reason is Reason.PREEMPTED_MODE
    t = b.now
    b.step(5.0)
    assert b.setpoint_times(since=t + 1e-9) == [] and len(b.mode_requests()) == 1


def test_engage_holding_here_uses_the_current_position() -> None:
    b = Bench()
    b.fc.north_m, b.fc.east_m, b.fc.down_m = 3.0, -2.0, -10.0
    start(b, setpoint=None)
    (_, first), *_ = b.actions(SendSetpoint)
    sp = first.setpoint
    assert isinstance(sp, PositionVelocityNed)
    assert (sp.north_m, sp.east_m, sp.down_m, sp.north_m_s) == (3.0, -2.0, -10.0, 0.0)


def test_engage_refused_without_the_estimate_its_setpoint_needs() -> None:
    b = Bench()
    b.position_alive = False
    b.connect()
    b.step(1.0)
    b.feed(Engage("e", None))
    b.feed(Engage("f", UP))
    for cid in ("e", "f"):
        assert b.reply(cid).reason is Reason.ESTIMATE_MISSING
    assert b.phase() is Phase.IDLE and b.actions(SendSetpoint) == []


def test_engage_refused_in_a_phase_that_does_not_allow_it() -> None:
    b = Bench()
    b.engage(UP)
    b.feed(Engage("again", UP))
    reply = b.reply("again")
    assert reply.code is ErrorCode.COMMAND_NOT_ALLOWED
    assert "engage" in reply.message and "active" in reply.message


def test_replies_are_sent_once_per_engage() -> None:
    b = Bench()
    b.engage(UP)
    assert [a for _, a in b.actions(Reply) if a.command_id == "engage-1"]


def test_a_stall_during_warmup_restarts_it() -> None:
    b = Bench()
    t0 = start(b)
    b.step(0.5)
    b.now += 0.7  # the shell was stuck: 0.7 s without a setpoint (> COM_OF_LOSS_T / 2)
    b.step(0.0)
    b.step(0.5)
    assert b.mode_requests() == [] and b.phase() is Phase.WARMUP
    b.step(1.0)
    ((t_req, _),) = b.mode_requests()
    stall_end = t0 + 1.2
    assert t_req >= stall_end + b.settings.warmup_s - 0.06


def test_a_stall_is_judged_in_stream_periods_not_in_a_raised_com_of_loss_t() -> None:
    """COM_OF_LOSS_T 10 s once let a 4 s stall count as steady warm-up streaming, and
    OFFBOARD be asked for on a setpoint 4 s old (found by review)."""
    b = Bench()
    b.connect({**PX4_PARAMS, "COM_OF_LOSS_T": 10.0})
    b.commander_alive = True
    b.feed(Engage("e", UP))
    b.step(0.5)
    b.now += 0.3  # stuck for 0.3 s: over 0.25 s (4 periods at 20 Hz, 5 % of COM_OF_LOSS_T)
    b.step(0.0)
    b.step(0.6)
    assert b.mode_requests() == [] and b.phase() is Phase.WARMUP
    b.step(1.0)
    assert len(b.mode_requests()) == 1
    assert warmup_gap_limit_s(10.0, 0.05) == 0.25
    assert warmup_gap_limit_s(1.0, 0.2) == 0.5  # a slow stream: 4 periods, at most half
    assert warmup_gap_limit_s(0.4, 0.05) == 0.2


def test_offboard_is_never_asked_of_an_fc_unheard_at_the_warmups_end() -> None:
    """An attitude stream needs no estimate that would go stale: an FC whose downlink died
    in the warm-up was asked for OFFBOARD, then left at once as silent (found by review).
    The warm-up waits for it instead (armed, a silence of 0.9 x COM_OF_LOSS_T stops it:
    the next test)."""
    b = Bench()
    b.fc.armed = True
    start(b, Attitude(1.0, 0.0, 0.0, 0.0, 0.5))
    b.step(0.2)
    b.fc_alive = False
    b.step(0.8)  # the warm-up's end at 1.0 s, the FC unheard for ~0.75 s
    assert b.mode_requests() == [] and b.phase() is Phase.WARMUP
    assert b.engine.feed.running
    b.fc_alive = True
    b.step(1.2)
    assert len(b.mode_requests()) == 1


def test_an_armed_warmup_stops_for_the_fc_silent_though_px4_was_not_seen_in_offboard() -> None:
    """Armed after a failsafe, PX4 re-enters OFFBOARD by itself once our setpoints come
    (§3); with the FC silent that switch is never seen, so an armed warm-up is judged as
    one PX4 flies (found by review: it streamed on, unheard, until fc_lost at 2.8 s)."""
    b = Bench()
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_RTL.custom_mode
    start(b)
    b.step(0.05)
    b.fc_alive = False
    b.step(0.95)
    assert b.phase() is Phase.FAILSAFE and not b.engine.feed.running
    assert b.reply("e").reason is Reason.FC_SILENT


def test_a_warmup_px4_flies_stops_for_the_fc_silent() -> None:
    """PX4 took OFFBOARD by itself in the warm-up (§3) and the link went down both ways:
    stopped before PX4's COM_OF_LOSS_T, as once OFFBOARD was asked for, so that a link
    coming back cannot take the vehicle back from its loss action (review)."""
    b = Bench()
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_RTL.custom_mode
    start(b)
    b.step(0.05)
    b.set_mode(OFFBOARD)
    b.step(0.2)
    b.fc_alive = False
    b.step(0.95)  # before PX4's COM_OF_LOSS_T (1 s) runs out
    assert b.phase() is Phase.FAILSAFE and not b.engine.feed.running
    assert b.reply("e").reason is Reason.FC_SILENT
    assert [n.reason for n in b.notices(NoticeKind.FAILSAFE)] == [Reason.FC_SILENT]


def test_an_fc_heard_only_in_bursts_does_not_keep_the_warmup_restarting() -> None:
    """Unheard at three warm-up ends in a row (never 0.9 x COM_OF_LOSS_T at once): the
    engage fails as fc_silent instead of restarting its warm-up forever (review)."""
    b = Bench()
    start(b)
    for _ in range(3):
        b.fc_alive = True
        b.feed(b.fc.heartbeat())  # never lost: a HEARTBEAT in every burst
        b.step(0.3)
        b.fc_alive = False
        b.step(0.7)  # at the warm-up's end the FC unheard for ~0.6-0.7 s: restarted
    b.step(0.05)
    assert b.phase() is Phase.IDLE and not b.engine.feed.running
    assert b.reply("e").reason is Reason.FC_SILENT
    assert b.mode_requests() == []


def test_rejected_then_retried_after_the_backoff() -> None:
    b = Bench(EngineSettings(retry_backoff_s=0.3))
    start(b)
    b.step(1.0)
    t_reject = b.now
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
    b.step(0.29)
    assert len(b.mode_requests()) == 1  # not hammered at once
    b.step(0.02)
    (_, (t_retry, _)) = b.mode_requests()
    assert t_retry == pytest.approx(t_reject + 0.3)
    b.set_mode(OFFBOARD)
    assert b.phase() is Phase.ACTIVE and b.reply("e").ok


def test_back_to_the_old_mode_after_offboard_is_a_takeover() -> None:
    """PX4 re-enters OFFBOARD by itself after its own offboard-loss fallback (its intended
    mode is still OFFBOARD, §3); a pilot pressing Hold then takes the vehicle back. That is a
    takeover: the engine stops and never asks for OFFBOARD over the pilot's Hold."""
    b = Bench()
    b.fc.custom_mode = Px4Mode.AUTO_LOITER.custom_mode
    b.fc.armed = True
    b.connect()
    t0 = b.now
    b.feed(Engage("e1", PositionNed(0, 0, -5)))
    b.step(0.03)
    b.set_mode(Px4Mode.OFFBOARD)
    b.step(0.3)
    b.set_mode(Px4Mode.AUTO_LOITER)
    b.step(1.5)
    assert b.phase() is Phase.PREEMPTED
    assert b.mode_requests(since=t0) == []
    assert not b.engine.feed.running


def test_the_old_mode_before_offboard_is_no_takeover() -> None:
    """Until OFFBOARD is seen, a report of the mode the vehicle had is no takeover (a
    HEARTBEAT sent before PX4 took the request): the engage goes on."""
    b = Bench()
    b.fc.custom_mode = Px4Mode.AUTO_LOITER.custom_mode
    b.connect()
    b.feed(Engage("e1", PositionNed(0, 0, -5)))
    b.step(0.3)
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.WARMUP


def test_the_engine_stands_by_only_the_requests_it_would_still_make() -> None:
    """What a request that waited for the link's budget is checked against (runtime.py):
    an OFFBOARD request only while ENGAGING, a hand-over's only for its current mode."""
    b = Bench()
    b.connect()
    target = b.engine.vehicle.target
    assert target is not None
    offboard = RequestMode(target, Px4Mode.OFFBOARD)
    b.commander_alive = True
    b.feed(Engage("e", PositionNed(0, 0, -5)))
    b.step(b.settings.warmup_s + 0.01)
    assert b.phase() is Phase.ENGAGING and b.engine.still_wants(offboard)
    assert not b.engine.still_wants(ArmDisarm(target, arm=True))
    b.set_mode(Px4Mode.AUTO_RTL)  # a GCS presses Return
    assert b.phase() is Phase.PREEMPTED and not b.engine.still_wants(offboard)
    b.feed(Land("l", resume=b.engine.resume_token))  # written after the takeover
    assert b.engine.still_wants(RequestMode(target, Px4Mode.AUTO_LAND))
    assert not b.engine.still_wants(RequestMode(target, Px4Mode.AUTO_LOITER))


def test_a_terrain_altitude_needs_pxs_terrain_estimate() -> None:
    # PX4 drops SET_POSITION_TARGET_GLOBAL_INT in MAV_FRAME_GLOBAL_TERRAIN_ALT_INT without a
    # valid terrain estimate (mavlink_receiver.cpp: `terrain_alt_valid` or return), with no
    # proof of life: measured on PX4 v1.17.0 SIH with its range finder out of range
    # (ESTIMATOR_STATUS without POS_VERT_AGL), a terrain setpoint accepted in OFFBOARD
    # was followed by AUTO.RTL (offboard loss) within 4 s.
    b = Bench()
    b.engage(UP, arm=True)
    healthy_no_agl = 1 | 2 | 4 | 8 | 16 | 32  # attitude, velocities, positions; no AGL (64)
    b.feed(FcGlobalPosition(b.fc.boot_ms, 47.4, 8.5, 500.0, 5.0, **FC))
    b.feed(FcEstimatorStatus(healthy_no_agl, **FC))
    terrain = GlobalPosition(47.4, 8.5, 5.0, AltitudeFrame.TERRAIN)
    b.feed(SetSetpoint("t1", terrain))
    assert b.reply("t1").reason is Reason.ESTIMATE_MISSING
    assert "terrain" in b.reply("t1").message
    b.feed(SetSetpoint("a1", GlobalPosition(47.4, 8.5, 505.0)))
    assert b.reply("a1").ok  # AMSL needs no terrain
    b.feed(FcEstimatorStatus(healthy_no_agl | 64, **FC))
    b.feed(SetSetpoint("t2", terrain))
    assert b.reply("t2").ok


def test_a_terrain_setpoint_holds_while_pxs_terrain_estimate_is_lost() -> None:
    # Streamed on, PX4 would drop every one of them (no proof of life) and leave OFFBOARD
    # for its loss failsafe; the daemon holds where the vehicle was instead, and flies the
    # terrain altitude again once PX4's terrain estimate is back.
    b = Bench()
    b.commander_period_s = 0.25
    b.engage(UP, arm=True)
    healthy = 1 | 2 | 4 | 8 | 16 | 32 | 64
    terrain = GlobalPosition(47.4, 8.5, 5.0, AltitudeFrame.TERRAIN)

    def telemetry(flags: int) -> None:
        b.feed(FcGlobalPosition(b.fc.boot_ms, 47.4, 8.5, 500.0, 5.0, **FC))
        b.feed(FcEstimatorStatus(flags, **FC))

    telemetry(healthy)
    b.feed(SetSetpoint("t1", terrain))
    assert b.reply("t1").ok
    b.step(0.3)
    assert b.actions(SendSetpoint)[-1][1].setpoint == terrain
    b.fc.north_m, b.fc.east_m, b.fc.down_m = 2.0, 1.0, -6.0
    b.step(0.3)
    lost_t = b.now
    for k in range(6):  # terrain lost for 1.5 s; the vehicle at (2, 1, -6), then drifting
        telemetry(healthy & ~64)
        b.step(0.25)
        b.fc.north_m = 2.0 + 0.1 * k
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=lost_t + 0.1)]
    held = [sp for sp in sent if isinstance(sp, PositionVelocityNed)]
    assert held and held == sent, sent
    assert {(sp.north_m, sp.east_m, sp.down_m) for sp in held} == {(2.0, 1.0, -6.0)}
    assert any(n.reason is Reason.ESTIMATE_MISSING for n in b.notices(NoticeKind.WARNING))
    assert b.phase() is Phase.ACTIVE
    back_t = b.now
    telemetry(healthy)
    b.step(0.3)
    assert [a.setpoint for _, a in b.actions(SendSetpoint, since=back_t + 0.1)][-1] == terrain


# -- OFFBOARD asked for: PX4 may be in it unseen (review finding 3) --------------------------


def _worst_gap_s(times: list[float]) -> float:
    return max(later - earlier for earlier, later in itertools.pairwise(times))


def _offboard_unseen(b: Bench) -> None:
    """PX4 takes every OFFBOARD request 20 ms on, and says so only in its 1 Hz HEARTBEAT
    (no CURRENT_MODE: PX4 v1.14, a build without the development dialect, or it was lost)."""
    def hook(a: object) -> None:
        if isinstance(a, RequestMode) and a.mode is OFFBOARD:
            b.later(0.005, FcCommandAck(MAV_CMD_DO_SET_MODE, 0, **FC))
            b.later(0.02, lambda: setattr(b.fc, "custom_mode", OFFBOARD.custom_mode))
    b.hooks.append(hook)


def _lapse_while_engaging(settings: EngineSettings) -> tuple[Bench, float]:
    """The review's timeline: armed, holding in AUTO.LOITER; an engage with 3 m/s; the
    commander dies just before the warm-up ends, so the lease lapses in ENGAGING, after
    PX4 switched and before a HEARTBEAT said so. Returns the bench and the lapse time."""
    b = Bench(settings)
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_LOITER.custom_mode
    b.connect()
    _offboard_unseen(b)
    b.commander_alive = True
    b.feed(Engage("e", VelocityNed(3.0, 0.0, 0.0)))
    b.step(0.95)
    b.commander_alive = False
    for _ in range(200):
        b.step(0.01)
        if b.phase() not in (Phase.WARMUP, Phase.ENGAGING):
            break
    ((t_lapse, _),) = [(t, a) for t, a in b.log if isinstance(a, Notice)
                       and a.previous_phase is Phase.ENGAGING]  # before OFFBOARD was seen
    assert b.fc.custom_mode == OFFBOARD.custom_mode
    return b, t_lapse


def test_a_lapse_while_engaging_holds_instead_of_leaving_offboard_to_the_loss_action() -> None:
    """It stopped streaming and went idle while PX4, in OFFBOARD, flew on to its
    offboard-loss action about a second later, the engine none the wiser."""
    b, t_lapse = _lapse_while_engaging(EngineSettings(hold_s=5.0))
    assert b.phase() is Phase.HOLDING and b.reason() is Reason.LEASE_LAPSED
    assert b.reply("e").reason is Reason.LEASE_LAPSED
    b.step(3.0)  # the HEARTBEAT shows OFFBOARD: ours, held
    assert b.phase() is Phase.HOLDING and b.engine.vehicle.in_offboard
    times = b.setpoint_times(since=t_lapse)
    assert times[-1] > b.now - 0.1 and _worst_gap_s(times) <= b.settings.stream_period_s + 1e-9
    held = [a.setpoint for _, a in b.actions(SendSetpoint, since=t_lapse)]
    assert all(isinstance(sp, PositionVelocityNed) and sp.north_m_s == 0.0 for sp in held)
    assert [m for _, m in b.mode_requests()] == [OFFBOARD] and b.actions(ArmDisarm) == []


@pytest.mark.parametrize("loss_action", [LossAction.HOLD, LossAction.PX4])
def test_a_lapse_while_engaging_with_no_hold_takes_the_loss_action(loss_action: LossAction
                                                                   ) -> None:
    b, t_lapse = _lapse_while_engaging(
        EngineSettings(hold_s=0.0, command_loss_action=loss_action))
    assert b.reply("e").reason is Reason.LEASE_LAPSED
    if loss_action is LossAction.PX4:  # stopped on purpose: PX4's own action follows
        assert b.phase() is Phase.FAILSAFE and not b.engine.feed.running
        return
    assert b.phase() is Phase.RELEASING and b.engine.feed.running
    assert [m for t, m in b.mode_requests(since=t_lapse)] == [Px4Mode.AUTO_LOITER]
    b.step(0.5)
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.LOSS_ACTION
    assert not b.engine.feed.running


def test_a_lapse_while_engaging_after_a_refusal_just_stops() -> None:
    """PX4 refused the request: nothing of ours flies, so a lapse stops, never asking for
    anything over the mode the vehicle stayed in."""
    b = Bench(EngineSettings(hold_s=5.0))
    b.fc.armed = True
    start(b)
    b.step(1.1)
    assert b.phase() is Phase.ENGAGING
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
    b.commander_alive = False
    b.step(2.0)
    assert b.phase() is Phase.IDLE and not b.engine.feed.running
    assert b.reply("e").reason is Reason.LEASE_LAPSED
    assert {m for _, m in b.mode_requests()} == {OFFBOARD}


def test_a_lapse_while_engaging_a_pilots_vehicle_never_switches_it() -> None:
    """Armed in POSCTL, the request unanswered but a HEARTBEAT since showing POSCTL: PX4
    did not switch. A lapse (no hold possible) stops; it once handed the pilot's vehicle
    to the loss action's mode (review of the first fix)."""
    b = Bench(EngineSettings(hold_s=0.0))
    b.fc.armed = True
    start(b)
    b.step(1.3)
    b.commander_alive = False
    b.step(2.5)  # a HEARTBEAT after the request (at 1.8 s), then the lapse
    assert b.phase() is Phase.IDLE and not b.engine.feed.running
    assert [m for _, m in b.mode_requests()] == [OFFBOARD]


@pytest.mark.parametrize("mode_at_engage", [Px4Mode.POSCTL, Px4Mode.AUTO_LOITER],
                         ids=lambda m: m.name)
def test_offboard_never_confirmed_nor_refused_is_handed_to_the_release_mode(
    mode_at_engage: Px4Mode,
) -> None:
    """Armed, every attempt timed out, no report either way (HEARTBEATs lost): PX4 may
    have switched with its reports lost. Handed over to release_mode (Hold), streaming
    until the FC reports it: a report since the hand-over began, not the mode known from
    before the request (in AUTO.LOITER already, that ended the hand-over at once)."""
    b = Bench(EngineSettings(mode_retries=0))
    b.fc.armed, b.fc.custom_mode = True, mode_at_engage.custom_mode
    t0 = start(b)
    b.step(0.9)
    b.heartbeat_alive = False  # (for less than fc_timeout_s: the FC is not lost)
    b.step(0.1 + 1.5 + 0.1)  # the attempt, 1.5 s, unanswered
    reply = b.reply("e")
    assert not reply.ok and reply.reason is Reason.MODE_TIMEOUT
    assert b.phase() is Phase.RELEASING and b.reason() is Reason.MODE_TIMEOUT
    assert [m for _, m in b.mode_requests()] == [OFFBOARD, Px4Mode.AUTO_LOITER]
    notice = b.notices(NoticeKind.FAILSAFE)[-1]
    assert "may fly the stream" in notice.message and notice.reason is Reason.MODE_TIMEOUT
    b.heartbeat_alive = True
    if mode_at_engage is not Px4Mode.AUTO_LOITER:
        b.set_mode(Px4Mode.AUTO_LOITER)
    else:
        b.step(1.0)  # the next HEARTBEAT says AUTO.LOITER
    assert b.phase() is Phase.IDLE and b.reason() is Reason.MODE_TIMEOUT
    assert not b.engine.feed.running
    times = b.setpoint_times(since=t0)
    assert _worst_gap_s(times) <= b.settings.stream_period_s + 1e-9  # never a gap before


def test_offboard_unanswered_while_reports_show_the_pilots_mode_just_stops() -> None:
    """Armed in POSCTL, the requests unanswered, HEARTBEATs saying POSCTL: PX4 never
    switched; handing over would switch the pilot's vehicle to Hold (review of the first
    fix). Stopped, as before it."""
    b = Bench()
    b.fc.armed = True
    start(b)
    b.step(1.0 + 3 * 1.5 + 0.1)
    assert b.reply("e").reason is Reason.MODE_TIMEOUT
    assert b.phase() is Phase.IDLE and not b.engine.feed.running
    assert [m for _, m in b.mode_requests()] == [OFFBOARD] * 3


def test_a_second_engage_starts_afresh() -> None:
    """The first engage's ACCEPTED once made the second's first report of the vehicle's
    own mode a takeover: one engage per run (review of the first fix)."""
    b = Bench()
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_LOITER.custom_mode
    b.auto_fc()
    start(b)
    b.step(2.0)
    assert b.phase() is Phase.ACTIVE
    b.feed(Release("r"))
    b.step(2.0)
    assert b.phase() is Phase.IDLE and b.fc.custom_mode == Px4Mode.AUTO_LOITER.custom_mode
    b.feed(Engage("e2", UP))
    b.step(2.0)
    assert b.phase() is Phase.ACTIVE and b.reply("e2").ok


def test_offboard_refused_to_the_end_just_stops() -> None:
    """The last ACK refused and the FC still reports its mode: PX4 never switched, there
    is nothing to hand back (a hand-over would ask over whoever flies it)."""
    b = Bench(EngineSettings(mode_retries=0))
    start(b)
    b.step(1.01)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)
    assert b.phase() is Phase.IDLE and b.reply("e").reason is Reason.MODE_REFUSED
    assert not b.engine.feed.running and [m for _, m in b.mode_requests()] == [OFFBOARD]


# -- PX4 back in OFFBOARD by itself during the warm-up (review finding 5) --------------------


def _warmup_after_px4_failsafe(settings: EngineSettings | None = None, *,
                               armed: bool = True) -> Bench:
    """The review's timeline: PX4 flies its fallback (AUTO.RTL) after a failsafe that kept
    OFFBOARD as its intended mode; an engage's first setpoint takes it back to OFFBOARD
    30 ms on (px4-offboard.md §3), long before the warm-up ends."""
    b = Bench(settings)
    b.fc.armed, b.fc.custom_mode = armed, Px4Mode.AUTO_RTL.custom_mode
    b.connect()
    b.commander_alive = True
    b.feed(Engage("e", UP))
    b.later(0.03, lambda: b.set_mode(OFFBOARD))
    b.step(0.5)
    assert b.phase() is Phase.WARMUP and b.engine.vehicle.in_offboard
    return b


def test_px4_taking_offboard_in_the_warmup_is_told_once() -> None:
    b = _warmup_after_px4_failsafe()
    b.step(0.4)  # HEARTBEATs and CURRENT_MODEs saying OFFBOARD again
    b.set_mode(OFFBOARD)
    (told,) = [n for n in b.notices(NoticeKind.WARNING) if n.reason is Reason.OFFBOARD_BY_PX4]
    assert told.phase is Phase.WARMUP and "flies the engage's setpoint" in told.message
    b.step(0.2)  # then the warm-up ends as it always did: engaged
    assert b.phase() is Phase.ACTIVE and b.reply("e").ok


def test_a_release_in_the_warmup_hands_over_when_px4_flies_the_stream() -> None:
    """It stopped the stream and answered "released": PX4, in OFFBOARD with no stream,
    then took its offboard-loss action (Return, a descent, or worse)."""
    b = _warmup_after_px4_failsafe()
    t0 = b.now
    b.feed(Release("r"))
    assert b.reply("e").reason is Reason.CANCELLED
    assert b.phase() is Phase.RELEASING and b.engine.feed.running and b.no_reply("r")
    assert b.mode_requests(since=t0) == [(t0, Px4Mode.AUTO_LOITER)]  # release_mode
    b.step(1.0)  # the FC slow to answer: streaming on, a hold where the vehicle is
    held = [a.setpoint for _, a in b.actions(SendSetpoint, since=t0)]
    assert len(held) >= 20 and all(isinstance(sp, PositionVelocityNed) for sp in held)
    b.set_mode(Px4Mode.AUTO_LOITER)
    reply = b.reply("r")
    assert reply.ok and reply.reason is Reason.RELEASED and "AUTO.LOITER" in reply.message
    assert b.phase() is Phase.IDLE and not b.engine.feed.running


def test_a_release_in_the_warmup_stops_when_px4_does_not_fly_the_stream() -> None:
    """Disarmed, OFFBOARD is no flight (PX4 reports it on the ground after a landing, §3):
    nothing to hand back, as before."""
    b = _warmup_after_px4_failsafe(armed=False)
    b.feed(Release("r"))
    assert b.reply("r").ok and b.phase() is Phase.IDLE and not b.engine.feed.running
    assert b.mode_requests() == []
    assert not [n for n in b.notices(NoticeKind.WARNING) if n.reason is Reason.OFFBOARD_BY_PX4]


def test_a_lapse_in_the_warmup_holds_when_px4_flies_the_stream() -> None:
    b = _warmup_after_px4_failsafe(EngineSettings(warmup_s=3.0))
    b.commander_alive = False
    b.step(1.2)
    assert b.phase() is Phase.HOLDING and b.reason() is Reason.LEASE_LAPSED
    assert b.reply("e").reason is Reason.LEASE_LAPSED and b.engine.feed.running
    assert b.mode_requests() == []  # OFFBOARD was PX4's doing; nothing asked for


def test_an_estimate_lost_in_the_warmup_hands_over_when_px4_flies_the_stream() -> None:
    b = _warmup_after_px4_failsafe()
    b.position_alive = False
    b.step(0.6)  # the warm-up ends without the position its setpoint needs
    reply = b.reply("e")
    assert not reply.ok and reply.reason is Reason.ESTIMATE_MISSING
    assert b.phase() is Phase.RELEASING and b.reason() is Reason.ESTIMATE_MISSING
    assert b.engine.feed.running and [m for _, m in b.mode_requests()] == [Px4Mode.AUTO_LOITER]
    b.step(0.5)
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.IDLE and b.reason() is Reason.ESTIMATE_MISSING


def test_a_setpoint_from_another_route_than_the_engage_says_a_commander_is_its_route() -> None:
    """Engaged with an MQTT 5 response topic, streaming without one: another commander.
    The refusal only offered the token, and quoting it moved the lease away from the
    engage's own route, whose heartbeats were then refused (review, 2026-11-29)."""
    b = Bench()
    b.engage(PositionNed(0, 0, -5))  # (the bench's commander: None)
    b.feed(SetSetpoint("s", PositionNed(1, 0, -5)), commander="offboardd/v/reply")
    reply = b.reply("s")
    assert reply.reason is Reason.NOT_IN_CONTROL
    assert "a commander is its reply route" in reply.message
    assert "the engage's MQTT 5 response topic" in reply.message
