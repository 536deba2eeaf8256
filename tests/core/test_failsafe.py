"""Commander lease, HOLDING, loss action and its escalation; preemption; FC link loss;
release and the mode commands (which are releases with a reason, not preemptions)."""

from __future__ import annotations

import math

import pytest

from offboardd.core.actions import ArmDisarm, NoticeKind, SendSetpoint
from offboardd.core.commands import (
    CommanderHeartbeat,
    Disarm,
    EmergencyStop,
    Engage,
    Land,
    Release,
    SetSetpoint,
)
from offboardd.core.engine_handover import MAX_JOINED
from offboardd.core.envelope_settings import EnvelopeSettings, LimitAction
from offboardd.core.events import (
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    AckResult,
    FcAttitude,
    FcEstimatorStatus,
    FcExtendedSysState,
    FcLinkDown,
    LandedState,
)
from offboardd.core.modes import Px4Mode, mode_name
from offboardd.core.motion_commands import Goto
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import (
    AccelerationNed,
    Attitude,
    BodyRates,
    PositionNed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.core.settings import EngineSettings, LossAction, ReleaseMode
from offboardd.errors import ErrorCode

from .bench import FC, Bench

UP = PositionNed(0, 0, -5)


def last_setpoint(b: Bench) -> object:
    return b.actions(SendSetpoint)[-1][1].setpoint


def lapse(b: Bench) -> float:
    """The commander goes silent; return when its lease lapses (at the latest)."""
    b.commander_alive = False
    t = b.now
    b.step(b.settings.command_timeout_s + 0.01)
    return t


def test_lease_lapse_while_active_holds_where_the_vehicle_is() -> None:
    b = Bench(EngineSettings(hold_s=3.0))
    b.engage(VelocityNed(1, 0, 0))
    b.fc.north_m, b.fc.east_m = 12.0, 4.0
    b.step(0.2)
    lapse(b)
    assert b.phase() is Phase.HOLDING and b.reason() is Reason.LEASE_LAPSED
    hold = last_setpoint(b)
    assert isinstance(hold, PositionVelocityNed)
    assert (hold.north_m, hold.east_m, hold.north_m_s, hold.east_m_s) == (12.0, 4.0, 0, 0)
    assert b.notices(NoticeKind.FAILSAFE)


def test_heartbeat_only_during_holding_does_not_resume() -> None:
    b = Bench(EngineSettings(hold_s=3.0))
    b.engage(VelocityNed(1, 0, 0))
    lapse(b)
    assert b.phase() is Phase.HOLDING
    b.feed(CommanderHeartbeat("hb-late"))
    late = b.reply("hb-late")  # told it is not in control (issue 15); only a setpoint resumes
    assert not late.ok and late.reason is Reason.NOT_IN_CONTROL and "holding" in late.message
    b.step(1.0)
    assert b.phase() is Phase.HOLDING
    assert isinstance(last_setpoint(b), PositionVelocityNed)  # never the old velocity


def test_a_setpoint_quoting_the_holds_token_resumes() -> None:
    b = Bench(EngineSettings(hold_s=3.0))
    b.engage(VelocityNed(1, 0, 0))
    lapse(b)
    token = b.engine.resume_token
    assert token is not None and b.engine.snapshot(b.now).resume_token == token
    t = b.now
    b.feed(SetSetpoint("sp", PositionNed(5, 5, -5), resume=token))
    assert b.phase() is Phase.ACTIVE and b.reason() is Reason.RESUMED
    assert b.engine.resume_token not in (None, token)  # control changed hands: a new one
    assert b.reply("sp").ok and last_setpoint(b) == PositionNed(5, 5, -5)
    assert b.setpoint_times(since=t)[0] == t  # sent at once
    b.commander_alive = True
    b.step(5.0)
    assert b.phase() is Phase.ACTIVE


def test_a_stale_backlog_never_resumes_from_holding() -> None:
    """What a bridge or a stalled network held back arrives after its commander died:
    same session, seq growing, no token (it was written before the lapse). Refused; the
    hold streams on; the refusal names the token a live commander would quote."""
    b = Bench(EngineSettings(hold_s=3.0))
    b.engage(VelocityNed(1, 0, 0))
    lapse(b)
    for i in range(10):
        b.feed(SetSetpoint(f"old{i}", VelocityNed(3, 0, 0)))
        b.step(0.05)
    assert b.phase() is Phase.HOLDING
    refused = b.reply("old0")
    assert not refused.ok and refused.reason is Reason.NOT_IN_CONTROL
    assert refused.resume == b.engine.resume_token and f'"resume": "{refused.resume}"' in (
        refused.message)
    assert isinstance(last_setpoint(b), PositionVelocityNed)  # the hold, never 3 m/s
    assert b.engine.lease.remaining_s(b.now) is None  # nothing renewed a lease


def test_a_token_of_an_earlier_hold_does_not_resume_a_later_one() -> None:
    b = Bench(EngineSettings(hold_s=3.0))
    b.engage(VelocityNed(1, 0, 0))
    lapse(b)
    first = b.engine.resume_token
    b.commander_alive = True
    b.feed(SetSetpoint("sp1", VelocityNed(1, 0, 0), resume=first))
    assert b.phase() is Phase.ACTIVE
    lapse(b)
    second = b.engine.resume_token
    assert second not in (None, first)
    b.feed(SetSetpoint("sp2", VelocityNed(1, 0, 0), resume=first))
    assert b.phase() is Phase.HOLDING and b.reply("sp2").resume == second
    b.feed(CommanderHeartbeat("hb-late"))
    assert b.reply("hb-late").resume == second  # a heartbeat is told the token, never resumes
    assert b.phase() is Phase.HOLDING


def test_in_active_a_resume_field_is_ignored() -> None:
    b = Bench(EngineSettings(hold_s=3.0))
    b.engage(VelocityNed(1, 0, 0))
    b.feed(SetSetpoint("sp", VelocityNed(2, 0, 0), resume="whatever"))
    assert b.reply("sp").ok and b.phase() is Phase.ACTIVE


def test_hold_time_over_runs_the_loss_action() -> None:
    b = Bench(EngineSettings(hold_s=2.0, command_loss_action=LossAction.LAND))
    b.engage(UP)
    t_lapse = lapse(b)
    b.step(2.0)
    ((t_req, mode),) = b.mode_requests(since=t_lapse)
    assert mode is Px4Mode.AUTO_LAND and t_req >= t_lapse + 2.0
    assert b.phase() is Phase.RELEASING
    assert b.engine.stream.running  # still streaming until PX4 reports the new mode
    b.set_mode(Px4Mode.AUTO_LAND)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.LOSS_ACTION
    assert not b.engine.stream.running


def test_without_a_position_estimate_the_hold_is_skipped() -> None:
    b = Bench(EngineSettings(hold_s=5.0, command_loss_action=LossAction.HOLD))
    b.engage(BodyRates(0, 0, 0, 0.5))
    b.position_alive = False
    b.step(1.0)
    t = lapse(b)
    assert b.phase() is Phase.RELEASING
    assert [m for _, m in b.mode_requests(since=t)] == [Px4Mode.AUTO_LOITER]


def test_px4_loss_action_just_stops_streaming() -> None:
    b = Bench(EngineSettings(hold_s=0.5, command_loss_action=LossAction.PX4))
    b.engage(UP)
    t = lapse(b)
    b.step(0.6)
    assert b.phase() is Phase.FAILSAFE and not b.engine.stream.running
    assert b.mode_requests(since=t) == []
    assert any("Hold" in n.message for n in b.notices(NoticeKind.FAILSAFE))


@pytest.mark.parametrize("hold_s", [0.0, 0.5])
def test_px4_loss_action_leaves_px4_a_stop_not_the_commanders_velocity(hold_s: float) -> None:
    """[SITL main and v1.17.0] With no action on the loss (COM_OBL_RC_ACT 0, NAV_RCL_ACT 0,
    no RC) PX4 stays in OFFBOARD flying the last setpoint: 1 m/s north flew on at
    0.8-0.94 m/s for 10 s. The stream's last word is a stop (here: a hold where it is)."""
    b = Bench(EngineSettings(hold_s=hold_s, command_loss_action=LossAction.PX4))
    b.engage(UP)
    b.feed(SetSetpoint("v", VelocityNed(1.0, 0.0, 0.0)))
    b.fc.north_m = 7.0
    b.step(0.3)
    lapse(b)
    b.step(hold_s + 0.1)
    assert b.phase() is Phase.FAILSAFE and not b.engine.stream.running
    last = last_setpoint(b)
    assert isinstance(last, PositionVelocityNed) and last.north_m == 7.0
    assert (last.north_m_s, last.east_m_s, last.down_m_s) == (0, 0, 0)


def test_a_silent_fc_is_left_a_stop_not_the_commanders_velocity() -> None:
    """Silent one way only, PX4 may still fly our stream; with no action on the loss it
    would fly the last setpoint on (the same measurement)."""
    b = Bench()
    b.engage(UP)
    b.feed(SetSetpoint("v", VelocityNed(2.0, 1.0, 0.0)))
    b.step(0.3)
    b.fc_alive = False
    b.step(1.5)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.FC_SILENT
    last = last_setpoint(b)
    assert not isinstance(last, VelocityNed) or (last.north_m_s, last.east_m_s) == (0, 0)
    assert last != VelocityNed(2.0, 1.0, 0.0)


def test_refused_loss_action_escalates_hold_land_then_stops() -> None:
    b = Bench(EngineSettings(hold_s=0.5, mode_retries=1, command_loss_action=LossAction.HOLD))
    b.engage(UP)
    t = lapse(b)
    b.step(0.5)
    for _ in range(4):  # two attempts at AUTO.LOITER, two at AUTO.LAND, all refused
        b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
        b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)
        b.step(b.settings.retry_backoff_s + 0.01)
    modes = [m for _, m in b.mode_requests(since=t)]
    assert modes == [Px4Mode.AUTO_LOITER] * 2 + [Px4Mode.AUTO_LAND] * 2
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.ESCALATED
    assert not b.engine.stream.running
    steps = [n for n in b.notices(NoticeKind.FAILSAFE) if n.reason is Reason.ESCALATED]
    assert len(steps) == 2  # "escalating to AUTO.LAND", then "stopped streaming"
    assert "AUTO.LAND" in steps[0].message and "stopped streaming" in steps[1].message


def test_escalation_stops_at_the_first_mode_the_fc_takes() -> None:
    b = Bench(EngineSettings(hold_s=0.5, mode_retries=0))
    b.engage(UP)
    lapse(b)
    b.step(0.5)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
    assert b.mode_requests()[-1][1] is Px4Mode.AUTO_LAND
    b.set_mode(Px4Mode.AUTO_LAND)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.LOSS_ACTION


def test_release_requests_release_mode_confirms_then_stops() -> None:
    b = Bench(EngineSettings(release_mode=ReleaseMode.HOLD))
    b.engage(UP)
    t = b.now
    b.feed(Release("r"))
    assert b.mode_requests(since=t) == [(t, Px4Mode.AUTO_LOITER)]
    assert b.no_reply("r") and b.engine.stream.running
    b.step(0.1)
    b.set_mode(Px4Mode.AUTO_LOITER)
    reply = b.reply("r")
    assert reply.ok and reply.reason is Reason.RELEASED
    assert b.phase() is Phase.IDLE and not b.engine.stream.running
    t_done = b.now
    b.step(3.0)
    assert b.setpoint_times(since=t_done + 1e-9) == []


def test_land_command_is_a_release_with_a_reason_not_a_preemption() -> None:
    b = Bench()
    b.engage(UP)
    b.feed(Land("l"))
    b.set_mode(Px4Mode.AUTO_LAND)
    assert b.phase() is Phase.IDLE and b.reason() is Reason.COMMANDED_LAND
    assert b.reply("l").ok


def test_a_land_flown_as_descend_is_the_land_we_asked_for() -> None:
    """Without a position estimate PX4 flies a Land as Descend, and main (#27918) reports
    it as AUTO.DESCEND (sub mode 20): the hand-over is done, not taken by someone else."""
    b = Bench()
    b.engage(UP)
    b.feed(Land("l"))
    b.set_mode(Px4Mode.AUTO_DESCEND)
    assert b.phase() is Phase.IDLE and b.reason() is Reason.COMMANDED_LAND
    assert b.reply("l").ok and "AUTO.DESCEND" in (b.reply("l").message or "")


def test_every_px4_sub_mode_has_px4s_name() -> None:
    assert mode_name(Px4Mode.AUTO_DESCEND.custom_mode) == "AUTO.DESCEND"
    assert mode_name((4 << 16) | (20 << 24)) == "AUTO.DESCEND"
    assert mode_name((3 << 16) | (1 << 24)) == "POSCTL.ORBIT"
    assert mode_name((4 << 16) | (19 << 24)) == "main4.sub19"  # unknown: still readable
    assert not Px4Mode.AUTO_DESCEND.honours(Px4Mode.AUTO_LOITER)


def test_preemption_by_a_pilot_stops_streaming_and_stays_stopped() -> None:
    b = Bench()
    b.engage(UP)
    b.set_mode(Px4Mode.POSCTL)
    assert b.phase() is Phase.PREEMPTED and b.reason() is Reason.PREEMPTED_MODE
    t = b.now
    b.step(5.0)  # the commander keeps sending heartbeats and even setpoints
    b.feed(SetSetpoint("sp", UP))
    assert b.reply("sp").code is ErrorCode.NOT_IN_CONTROL  # issue 15: says it lost control
    assert b.setpoint_times(since=t + 1e-9) == [] and b.mode_requests(since=t) == []
    b.feed(Engage("late", UP))  # written before the pilot took it, delivered late
    assert b.reply("late").code is ErrorCode.NOT_IN_CONTROL and b.mode_requests(since=t) == []
    token = b.engine.resume_token  # a new explicit engage, written after: the only way back
    b.feed(Engage("again", UP, resume=token))
    assert b.phase() is Phase.WARMUP


def test_disarm_under_us_is_a_preemption_but_our_own_disarm_ends_control() -> None:
    b = Bench()
    b.engage(UP, arm=True)
    b.feed(Disarm("d"))
    b.set_armed(False)
    b.step(1.0)  # the next HEARTBEAT shows it
    assert b.reply("d").ok
    assert b.phase() is Phase.IDLE and b.reason() is Reason.COMMANDED_DISARM
    t = b.now
    b.step(2.0)
    assert b.setpoint_times(since=t + 1e-9) == [], "no stream to a disarmed vehicle"
    b2 = Bench()
    b2.engage(UP, arm=True)
    b2.set_armed(False)
    b2.step(1.0)
    assert b2.phase() is Phase.PREEMPTED and b2.reason() is Reason.PREEMPTED_DISARMED


def test_fc_link_loss_while_holding_stops_and_never_reengages() -> None:
    b = Bench(EngineSettings(hold_s=10.0, fc_timeout_s=3.0))
    b.engage(UP)
    lapse(b)
    assert b.phase() is Phase.HOLDING
    b.fc_alive = False
    t = b.now
    b.step(0.95)  # streaming: silent for 0.9 x COM_OF_LOSS_T is enough to stop (FC_SILENT)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.FC_SILENT
    assert not b.engine.stream.running
    b.step(2.55)  # ... and the link counts as lost at fc_timeout_s
    assert b.phase() is Phase.FAILSAFE and b.notices(NoticeKind.FC_LINK)
    t_lost = b.now
    assert b.engine.snapshot(b.now).fc_link == "lost"
    b.fc_alive = True
    b.step(3.0)
    assert b.phase() is Phase.FAILSAFE and b.engine.snapshot(b.now).fc_link == "up"
    assert b.setpoint_times(since=t_lost) == [] and b.mode_requests(since=t) == []
    assert len(b.param_requests()) >= 2  # parameters re-read on return


@pytest.mark.parametrize("lost", ["link", "heartbeats", "transport"])
def test_an_fc_declared_lost_is_left_a_stop_not_the_commanders_velocity(lost: str) -> None:
    """With COM_OF_LOSS_T 5 our silence limit (4.5 s) comes after the FC's 3 s timeout, and
    with HEARTBEATs alone lost it never comes: the loss was declared with the reports and
    the target already forgotten, and the stop frame (which needs the target) never went
    out: PX4, hearing us one way, was left our 3 m/s (review, 2026-11-29)."""
    b = Bench(EngineSettings(fc_timeout_s=3.0))
    b.fc.params["COM_OF_LOSS_T"] = 5.0
    b.engage(UP)
    b.feed(SetSetpoint("v", VelocityNed(3.0, 0.0, 0.0)))
    b.step(0.3)
    if lost == "transport":
        b.feed(FcLinkDown(detail="serial unplugged"))
    elif lost == "link":
        b.fc_alive = False
    else:
        b.heartbeat_alive = False
    b.step(3.5)
    assert b.phase() is Phase.FAILSAFE and b.notices(NoticeKind.FC_LINK)
    assert not b.engine.stream.running
    last = last_setpoint(b)
    assert isinstance(last, VelocityNed) and (last.north_m_s, last.east_m_s) == (0, 0), last


def test_transport_down_is_fc_loss_at_once() -> None:
    b = Bench()
    b.engage(UP)
    b.feed(FcLinkDown(detail="serial unplugged"))
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.FC_LINK_LOST


def test_fc_reboot_rereads_parameters_and_stops() -> None:
    b = Bench()
    b.engage(UP)
    before = len(b.param_requests())
    b.fc.boot_ms = 500  # time_boot_ms went back: the FC rebooted
    b.step(0.2)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.FC_REBOOTED
    assert len(b.param_requests()) == before + 1
    assert b.engine.checks.params == {}


def test_emergency_stop_needs_confirmation_then_force_disarms() -> None:
    b = Bench()
    b.engage(UP, arm=True)
    b.feed(EmergencyStop("x"))
    assert b.reply("x").reason is Reason.CONFIRMATION_MISSING
    assert b.phase() is Phase.ACTIVE
    b.feed(EmergencyStop("y", confirm=True))
    kill = b.actions(ArmDisarm)[-1][1]
    assert not kill.arm and kill.force
    assert b.phase() is Phase.FAILSAFE and not b.engine.stream.running
    b.set_armed(False)
    b.step(1.0)
    assert b.reply("y").ok


def test_refused_release_escalates_and_replies_with_a_coded_failure() -> None:
    b = Bench(EngineSettings(mode_retries=0))
    b.engage(UP)
    b.feed(Release("r"))
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)  # AUTO.LOITER refused
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)  # AUTO.LAND refused
    reply = b.reply("r")
    assert not reply.ok and reply.code is ErrorCode.FC_REFUSED
    assert b.phase() is Phase.FAILSAFE and not b.engine.stream.running


def test_pilot_taking_over_during_a_release_is_a_preemption() -> None:
    b = Bench()
    b.engage(UP)
    b.feed(Land("l"))
    b.set_mode(Px4Mode.POSCTL)
    assert b.phase() is Phase.PREEMPTED and not b.engine.stream.running
    assert b.reply("l").reason is Reason.PREEMPTED_MODE


def test_mode_command_without_control_does_not_escalate() -> None:
    b = Bench(EngineSettings(mode_retries=0))
    b.connect()
    b.feed(Land("l"))
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)
    assert [m for _, m in b.mode_requests()] == [Px4Mode.AUTO_LAND]
    assert b.reply("l").code is ErrorCode.FC_REFUSED and b.phase() is Phase.IDLE


# -- found by review (2026-11-27): what a hand-over streams, and whose mode it is ------------


def test_a_handover_streams_a_hold_not_the_commanders_last_setpoint() -> None:
    """release_mode = rtl, the commander gone, the FC silent: until the FC reports a mode
    the stream holds where the vehicle is (a stale 5 m/s was streamed for 13.5 s)."""
    b = Bench(EngineSettings(release_mode=ReleaseMode.RTL))
    b.engage(VelocityNed(5, 0, 0))
    b.step(0.6)
    b.commander_alive = False
    t0 = b.now
    b.feed(Release("rel"))
    b.step(3.0)
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=t0)]
    holds = [sp for sp in sent if isinstance(sp, PositionVelocityNed)]
    assert sent and holds == sent
    assert all((sp.north_m_s, sp.east_m_s, sp.down_m_s) == (0, 0, 0) for sp in holds)


def test_a_handover_never_asks_over_a_mode_someone_else_chose() -> None:
    """A GCS presses Land while the engine asks for Hold (Land is later in the chain): the
    vehicle is theirs now; the engine stops and asks for nothing more."""
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    b.commander_alive = False
    t0 = b.now
    b.feed(Release("rel"))
    b.step(0.01)
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.ACCEPTED)
    b.step(0.3)
    b.set_mode(Px4Mode.AUTO_LAND)
    b.step(4.0)
    assert b.phase() is Phase.PREEMPTED
    assert [m for _, m in b.mode_requests(since=t0)] == [Px4Mode.AUTO_LOITER]
    assert not b.engine.feed.running


def test_a_plain_mode_request_never_asks_over_a_mode_someone_else_chose() -> None:
    """The vehicle is not ours; an operator asks for Land, the FC is slow, and a pilot
    switches to Hold meanwhile: the request ends there (it used to ask for Land again at
    the next retry, pulling the vehicle out of the pilot's Hold)."""
    b = Bench()
    b.connect()
    t0 = b.now
    b.feed(Land("l"))
    b.step(0.3)
    b.set_mode(Px4Mode.AUTO_LOITER)
    b.step(5.0)
    assert [m for _, m in b.mode_requests(since=t0)] == [Px4Mode.AUTO_LAND]
    reply = b.reply("l")
    assert not reply.ok and reply.reason is Reason.PREEMPTED_MODE
    assert (reply.message or "").startswith("FC switched to AUTO.LOITER before it took AUTO.LAND")
    assert b.phase() is Phase.IDLE and b.engine.handover.current is None


def test_a_late_answer_to_an_earlier_ask_ends_the_handover() -> None:
    """RTL timed out and the engine escalated to Hold; the FC then reports RTL: that is
    what we asked for first, so the hand-over is done (no pulling it out into Hold)."""
    b = Bench(EngineSettings(release_mode=ReleaseMode.RTL))
    b.engage(PositionNed(0, 0, -5))
    b.commander_alive = False
    t0 = b.now
    b.feed(Release("rel"))
    for _ in range(200):  # until the engine asks for the next mode of the chain
        b.step(0.05)
        if any(m is not Px4Mode.AUTO_RTL for _, m in b.mode_requests(since=t0)):
            break
    assert b.engine.handover.current is not None and b.engine.handover.current.index == 1
    b.set_mode(Px4Mode.AUTO_RTL)
    assert b.phase() is Phase.IDLE
    assert b.reply("rel").ok
    assert (b.reply("rel").message or "").startswith("FC reports AUTO.RTL")


def test_a_handover_counts_only_a_mode_reported_since_it_began() -> None:
    """Engaged from Hold; PX4 takes OFFBOARD but its CURRENT_MODE is lost; a release
    before the next HEARTBEAT asks for Hold. The vehicle was last *reported* in Hold: that
    ended the hand-over at once and stopped the stream, PX4 in OFFBOARD left to its
    offboard-loss action. It waits for a report now, streaming."""
    b = Bench()
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_LOITER.custom_mode
    b.connect()
    b.commander_alive = True
    b.feed(Engage("e", UP))
    b.step(b.settings.warmup_s + 0.05)
    assert b.phase() is Phase.ENGAGING
    b.fc.custom_mode = Px4Mode.OFFBOARD.custom_mode  # switched; the report lost
    t0 = b.now
    b.feed(Release("r"))
    assert b.phase() is Phase.RELEASING and b.engine.feed.running and b.no_reply("r")
    b.step(0.6)  # (the next HEARTBEAT says OFFBOARD: no takeover either)
    assert b.phase() is Phase.RELEASING and b.engine.feed.running
    assert [m for _, m in b.mode_requests(since=t0)] == [Px4Mode.AUTO_LOITER]
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.IDLE and b.reply("r").ok and not b.engine.feed.running


# -- a hand-over with no "here" to hold (review finding 3, the rest of it) ------------------

PITCH_15 = (math.cos(math.radians(7.5)), 0.0, math.sin(math.radians(7.5)), 0.0)


def _lapse_without_estimate(setpoint: Setpoint, attitude: FcAttitude) -> list[Setpoint]:
    """ACTIVE on an attitude-family setpoint; the position estimate goes; the commander
    goes and the FC answers nothing: what is streamed during the hand-over."""
    b = Bench()
    b.engage(setpoint)
    b.fc.attitude_rad = (attitude.roll_rad, attitude.pitch_rad, attitude.yaw_rad)
    b.position_alive = False
    b.step(b.settings.estimate_timeout_s + 0.1)
    t0 = lapse(b)
    b.step(3.0)
    assert b.phase() is Phase.RELEASING  # asking for Hold, streaming meanwhile
    asked_s = b.mode_requests(since=t0)[0][0]
    return [a.setpoint for _, a in b.actions(SendSetpoint, since=asked_s)]


def test_a_handover_without_an_estimate_levels_a_tilted_attitude() -> None:
    """The helper measured a 15° pitch streamed for 9.9 s after a lease lapse; now the
    stream levels, faces where the vehicle faces, on the vertical share of the thrust."""
    sent = _lapse_without_estimate(Attitude(*PITCH_15, thrust=0.6),
                                   FcAttitude(12_000, 0.0, math.radians(15), 1.0, **FC))
    assert len(sent) > 40
    for sp in sent:
        assert isinstance(sp, Attitude) and (sp.x, sp.y) == (0.0, 0.0)
        assert math.isclose(2 * math.atan2(sp.z, sp.w), 1.0)
        assert math.isclose(sp.thrust, 0.6 * math.cos(math.radians(15)))


def test_a_handover_without_an_estimate_levels_body_rates_by_the_measured_tilt() -> None:
    sent = _lapse_without_estimate(BodyRates(0.0, 0.3, 0.0, thrust=0.55),
                                   FcAttitude(12_000, math.radians(20), 0.0, -2.0, **FC))
    assert sent and all(isinstance(sp, Attitude) for sp in sent)
    level = sent[-1]
    assert isinstance(level, Attitude) and (level.x, level.y) == (0.0, 0.0)
    assert math.isclose(2 * math.atan2(level.z, level.w), -2.0)
    assert math.isclose(level.thrust, 0.55 * math.cos(math.radians(20)))


def test_levelling_rates_with_no_attitude_known_stops_them() -> None:
    """(An FC silent but for its heartbeat stops the stream instead: FC_SILENT.)"""
    b = Bench()
    assert b.engine.vehicle.attitude is None
    rates = BodyRates(0.4, 0.3, 0.2, thrust=0.55)
    assert b.engine.vehicle.level_setpoint(rates) == BodyRates(0.0, 0.0, 0.0, 0.55)


def test_levelling_keeps_at_least_half_the_thrust_and_leaves_other_setpoints_alone() -> None:
    b = Bench()
    upside_down = Attitude(0.0, 1.0, 0.0, 0.0, thrust=0.8)  # a flip: cos(tilt) = -1
    level = b.engine.vehicle.level_setpoint(upside_down)
    assert isinstance(level, Attitude) and math.isclose(level.thrust, 0.4)
    assert b.engine.vehicle.level_setpoint(VelocityNed(1, 0, 0)) is None
    assert b.engine.vehicle.level_setpoint(None) is None


def test_only_what_moves_is_stopped() -> None:
    v = Bench().engine.vehicle  # no ATTITUDE heard: no heading
    still = VelocityNed(0.0, 0.0, 0.0, yaw_rate_rad_s=0.0)
    assert v.stop_setpoint(AccelerationNed(1.0, 0.0, 0.0, yaw_rad=0.5), 0.0) == VelocityNed(
        0.0, 0.0, 0.0, yaw_rad=0.5)
    assert v.stop_setpoint(VelocityBody(1.0, 0.0, 0.0, yaw_rate_rad_s=1.0), 0.0) == still
    moving = PositionVelocityNed(1.0, 0.0, -5.0, 2.0, 0.0, 0.0)  # a planned motion's point
    assert v.stop_setpoint(moving, 0.0, moving=True) == still
    for fixed in (moving, PositionNed(1.0, 0.0, -5.0), Attitude(1.0, 0.0, 0.0, 0.0, 0.5), None):
        assert v.stop_setpoint(fixed, 0.0) is None


def test_a_levelled_stream_keeps_within_the_envelopes_thrust() -> None:
    """Found by the envelope fuzz: levelling a tilted attitude took its thrust below the
    envelope's min_thrust (0.094 against 0.1); the stream is ours, admission never saw it."""
    envelope = EnvelopeSettings(min_thrust=0.2, thrust_action=LimitAction.REJECT)
    b = Bench(EngineSettings(envelope=envelope))
    b.engage(Attitude(*PITCH_15, thrust=0.2))
    b.fc.attitude_rad = (0.0, math.radians(15), 0.0)
    b.position_alive = False
    b.step(b.settings.estimate_timeout_s + 0.1)
    t0 = lapse(b)
    b.step(1.0)
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=t0)]
    levelled = [sp for sp in sent if isinstance(sp, Attitude) and sp.y == 0.0]
    assert levelled and all(sp.thrust == 0.2 for sp in levelled)


# -- ... and with no position: a stop, never the dead commander's velocity (review, finding 2)

# ESTIMATOR_STATUS flags of a GPS loss with flow (or GPS velocity) left: velocities and
# height, no horizontal position. PX4 flies a velocity setpoint on that (§1).
VELOCITY_ONLY = 2 | 4 | 32
HEIGHT_ONLY = 32  # no velocity either


def _estimate(b: Bench, flags: int, for_s: float, yaw_rad: float | None = None) -> None:
    """ESTIMATOR_STATUS with `flags` every 0.1 s for `for_s` (and ATTITUDE, if `yaw_rad`)."""
    def report() -> None:
        b.feed(FcEstimatorStatus(flags, **FC))
        if yaw_rad is not None:
            b.feed(FcAttitude(b.fc.boot_ms, 0.0, 0.0, yaw_rad, **FC))
    for i in range(round(for_s / 0.1)):
        b.later(0.1 * i, report)


def _stale_setpoint_after_lapse(setpoint: Setpoint, flags: int = VELOCITY_ONLY,
                                yaw_rad: float | None = None) -> tuple[Bench, list[Setpoint]]:
    """The review's timeline: ACTIVE on `setpoint`, the horizontal position goes, the
    commander dies and the FC answers no mode request: what is streamed from the lapse on."""
    b = Bench()
    b.engage(UP)
    b.feed(SetSetpoint("sp", setpoint))
    assert b.reply("sp").ok
    _estimate(b, flags, 12.0, yaw_rad)
    b.step(0.3)
    t0 = lapse(b)
    assert b.phase() is Phase.RELEASING  # no hold possible: command_loss_action = hold
    asked_s = b.mode_requests(since=t0)[0][0]
    b.step(9.5)  # AUTO.LOITER x 3, AUTO.LAND x 3, each unanswered for 1.5 s
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.ESCALATED
    return b, [a.setpoint for _, a in b.actions(SendSetpoint, since=asked_s)]


def test_a_lapse_with_no_position_stops_a_velocity_instead_of_flying_it() -> None:
    """Measured by the review: 201 setpoints of 8 m/s north in the 10 s after the commander
    died (about 80 m). Now the hand-over streams zero velocity from the lapse on."""
    _, sent = _stale_setpoint_after_lapse(VelocityNed(8.0, 0.0, 0.0))
    assert len(sent) > 150  # streaming on until the escalation's end, as before
    assert set(sent) == {VelocityNed(0.0, 0.0, 0.0, yaw_rate_rad_s=0.0)}


@pytest.mark.parametrize("setpoint", [
    VelocityNed(3.0, 1.0, -0.5, yaw_rate_rad_s=0.4),
    VelocityBody(4.0, 0.0, 0.0, yaw_rate_rad_s=0.3),
    AccelerationNed(2.0, 0.0, 0.0),  # zero acceleration would coast: zero velocity stops
], ids=lambda sp: sp.kind.value)
def test_every_velocity_kind_becomes_a_stop_facing_where_the_vehicle_faces(
    setpoint: Setpoint,
) -> None:
    _, sent = _stale_setpoint_after_lapse(setpoint, yaw_rad=0.7)
    assert sent and set(sent) == {VelocityNed(0.0, 0.0, 0.0, yaw_rad=0.7)}


def test_with_no_velocity_estimate_either_the_handover_still_streams_a_stop() -> None:
    """The engine's own view may lack a velocity only because LOCAL_POSITION_NED is late on
    the link while PX4 still flies the stream: a stop is safe either way (PX4 flies neither
    setpoint without the estimate), stopping the stream would leave the old velocity to fly
    COM_OF_LOSS_T more (engine_failsafe._still)."""
    _, sent = _stale_setpoint_after_lapse(VelocityNed(8.0, 0.0, 0.0), HEIGHT_ONLY)
    assert sent and set(sent) == {VelocityNed(0.0, 0.0, 0.0, yaw_rate_rad_s=0.0)}


def test_a_velocity_keeps_its_yaw_angle_when_no_heading_is_known() -> None:
    _, sent = _stale_setpoint_after_lapse(VelocityNed(8.0, 0.0, 0.0, yaw_rad=-1.0))
    assert sent and set(sent) == {VelocityNed(0.0, 0.0, 0.0, yaw_rad=-1.0)}


def test_a_position_setpoint_is_a_fixed_point_and_streams_on() -> None:
    _, sent = _stale_setpoint_after_lapse(PositionNed(5.0, 0.0, -5.0))
    assert sent and set(sent) == {PositionNed(5.0, 0.0, -5.0)}


def test_a_commanded_release_with_no_position_stops_the_velocity_too() -> None:
    """release_mode = rtl (three modes, up to 13.5 s unanswered): the lease ends with the
    release, and the velocity with it."""
    b = Bench(EngineSettings(release_mode=ReleaseMode.RTL))
    b.engage(UP)
    b.feed(SetSetpoint("sp", VelocityNed(5.0, 0.0, 0.0)))
    _estimate(b, VELOCITY_ONLY, 6.0, yaw_rad=0.2)
    b.step(0.3)
    t0 = b.now
    b.feed(Release("rel"))
    b.step(5.0)
    assert b.phase() is Phase.RELEASING
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=t0)]
    assert len(sent) > 90 and set(sent) == {VelocityNed(0.0, 0.0, 0.0, yaw_rad=0.2)}


def test_a_running_motion_with_no_position_is_stopped_at_the_lapse() -> None:
    b = Bench()
    b.engage(UP)
    b.feed(Goto("g", PositionNed(60.0, 0.0, -5.0), speed_m_s=5.0))
    assert b.reply("g").ok
    b.step(1.0)
    assert b.engine.feed.motion is not None
    _estimate(b, VELOCITY_ONLY, 4.0, yaw_rad=0.0)
    b.step(0.3)
    t0 = lapse(b)
    asked_s = b.mode_requests(since=t0)[0][0]
    b.step(1.0)
    assert b.phase() is Phase.RELEASING and b.engine.feed.motion is None
    assert b.notices(NoticeKind.MOTION_ABORTED)
    sent = [a.setpoint for _, a in b.actions(SendSetpoint, since=asked_s)]
    assert sent and set(sent) == {VelocityNed(0.0, 0.0, 0.0, yaw_rad=0.0)}


def test_a_flood_of_repeats_never_pushes_out_the_operators_reply() -> None:
    """Found by review: repeats of a pending land joined a list with no bound; answered all
    at once they pushed the operator's own reply out. Beyond MAX_JOINED a repeat is
    answered at once, and the hand-over's outcome reaches the operator and the kept ones."""
    b = Bench()
    b.engage(UP)
    b.feed(Land("operator"))
    for i in range(100):
        b.feed(Land(f"repeat{i}"))
    refused = [f"repeat{i}" for i in range(100) if not b.no_reply(f"repeat{i}")]
    assert len(refused) == 100 - MAX_JOINED
    assert all(b.reply(c).reason is Reason.REPEAT_NOT_KEPT for c in refused)
    assert b.no_reply("operator")
    b.set_mode(Px4Mode.AUTO_LAND)
    assert b.reply("operator").ok and b.reply(f"repeat{MAX_JOINED - 1}").ok
    assert [m for _, m in b.mode_requests()][-1:] == [Px4Mode.AUTO_LAND]


# -- the lease is the commander's that flies the vehicle (found by review) --------------------


def test_another_commanders_heartbeats_never_keep_a_dead_commanders_setpoint_flying() -> None:
    """A mission client engaged and set 2 m/s north, then died; a separate heartbeat
    process kept going. The vehicle flew on (16.5 m after 8 s); now it holds."""
    b = Bench()
    b.connect()
    b.auto_fc()
    b.feed(Engage("e", VelocityNed(2, 0, 0)), commander="mission")
    for _ in range(12):  # the mission's own heartbeats through the engage
        b.feed(CommanderHeartbeat("m"), commander="mission")
        b.step(0.25)
    assert b.phase() is Phase.ACTIVE
    t_dead = b.now
    for i in range(8):  # the mission is gone; another process heartbeats on
        b.feed(CommanderHeartbeat(f"other{i}"), commander="heartbeat-loop")
        b.step(0.25)
    assert b.phase() is Phase.HOLDING
    assert b.reason() is Reason.LEASE_LAPSED
    assert b.reply("other0").reason is Reason.NOT_IN_CONTROL
    assert b.now - t_dead < 2.1


def test_another_commander_takes_over_only_quoting_the_token() -> None:
    b = Bench()
    b.connect()
    b.auto_fc()
    b.feed(Engage("e", UP), commander="a")
    for _ in range(12):
        b.feed(CommanderHeartbeat("a-hb"), commander="a")
        b.step(0.25)
    b.feed(SetSetpoint("b-sp0", VelocityNed(1, 0, 0)), commander="b")
    refused = b.reply("b-sp0")  # without the token: it may be anyone's stale backlog
    assert refused.reason is Reason.NOT_IN_CONTROL and refused.resume == b.engine.resume_token
    assert b.engine.lease.holder == "a"
    token = b.engine.resume_token
    b.feed(SetSetpoint("b-sp", VelocityNed(1, 0, 0), resume=token), commander="b")
    assert b.reply("b-sp").ok and b.engine.lease.holder == "b"  # b flies it now
    assert b.engine.resume_token not in (None, token)
    b.feed(CommanderHeartbeat("a-late"), commander="a")
    assert b.reply("a-late").reason is Reason.NOT_IN_CONTROL
    b.feed(SetSetpoint("a-sp", VelocityNed(2, 0, 0), resume=token), commander="a")
    assert b.reply("a-sp").reason is Reason.NOT_IN_CONTROL  # the old token: no longer
    b.feed(CommanderHeartbeat("b-hb"), commander="b")
    assert b.reply("b-hb").ok


def test_a_disarm_in_flight_is_refused_unless_forced() -> None:
    """docs/mqtt-api.md: `disarm` is refused in flight unless `force`. It went to PX4,
    whose refusal read TEMPORARILY_REJECTED with the arming diagnosis (review)."""
    b = Bench()
    b.engage(UP, arm=True)
    for landed in (LandedState.TAKEOFF, LandedState.IN_AIR, LandedState.LANDING):
        b.feed(FcExtendedSysState(int(landed), **FC))
        b.log.clear()
        b.feed(Disarm("d"))
        reply = b.reply("d")
        assert reply.code is ErrorCode.COMMAND_NOT_ALLOWED
        assert reply.reason is Reason.DISARM_IN_FLIGHT and "force" in reply.message
        assert not b.actions(ArmDisarm) and b.phase() is Phase.ACTIVE
    b.log.clear()
    b.feed(Disarm("f", force=True))  # forced: sent as asked (the vehicle falls)
    assert [a.force for _, a in b.actions(ArmDisarm)] == [True]
    b.log.clear()
    b.feed(FcExtendedSysState(int(LandedState.ON_GROUND), **FC))
    b.feed(Disarm("g"))  # on the ground: a plain disarm goes to PX4
    assert [(a.arm, a.force) for _, a in b.actions(ArmDisarm)] == [(False, False)]


def test_px4_refusing_a_disarm_is_explained_as_a_disarm() -> None:
    """Before PX4 has said where the vehicle is, PX4's own check refuses the disarm; its
    reply carried the arming diagnosis (stream, estimate), which says nothing of it."""
    b = Bench()
    b.engage(UP, arm=True)
    b.feed(Disarm("d"))
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.TEMPORARILY_REJECTED)
    reply = b.reply("d")
    assert reply.code is ErrorCode.FC_REFUSED and reply.reason is Reason.DISARM_REFUSED
    assert "to the disarm" in reply.message and "force=true" in reply.message
    assert "stream" not in reply.message
