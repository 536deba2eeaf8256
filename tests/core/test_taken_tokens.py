"""A vehicle taken from us (a pilot, a GCS, a failsafe) stays taken until we fly it again:
what a review of the tokens found (2026-11-28). A command written before the takeover,
delivered late (a stalled network, a dead commander's backlog, a QoS-1 repeat), never
acts; one quoting the token acts once, and its reply names the token to quote next."""

from __future__ import annotations

from offboardd.core.actions import ArmDisarm
from offboardd.core.commands import Arm, Engage, Hold, Land
from offboardd.core.events import MAV_CMD_COMPONENT_ARM_DISARM, MAV_CMD_DO_SET_MODE, AckResult
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.settings import EngineSettings

from .bench import Bench
from .test_failsafe import UP, lapse


def _preempted(b: Bench) -> str:
    b.engage(UP)
    b.set_mode(Px4Mode.POSCTL)  # a pilot
    assert b.phase() is Phase.PREEMPTED
    token = b.engine.resume_token
    assert token is not None
    return token


def test_a_quoted_hold_that_succeeds_leaves_the_vehicle_taken() -> None:
    b = Bench()
    token = _preempted(b)
    b.feed(Hold("h", resume=token))
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.PREEMPTED and b.reason() is Reason.COMMANDED_HOLD
    new = b.engine.resume_token
    assert b.reply("h").ok and b.reply("h").resume == new and new not in (None, token)
    asked = len(b.mode_requests()), len(b.actions(ArmDisarm))
    b.feed(Engage("late", UP))  # written before the takeover: it was accepted from idle
    b.feed(Arm("late-arm"))
    for late in ("late", "late-arm"):
        assert b.reply(late).reason is Reason.NOT_IN_CONTROL, late
    assert (len(b.mode_requests()), len(b.actions(ArmDisarm))) == asked
    b.feed(Engage("again", UP, resume=new))  # what the reply named takes it back
    assert b.phase() is Phase.WARMUP


def test_a_late_request_never_supersedes_a_quoted_one_under_way() -> None:
    b = Bench()
    token = _preempted(b)
    b.feed(Hold("h", resume=token))
    assert b.phase() is Phase.RELEASING
    asked = len(b.mode_requests())
    b.feed(Land("late"))  # no token: superseded the hold and landed the pilot's vehicle
    assert b.reply("late").reason is Reason.NOT_IN_CONTROL
    assert b.reply("late").resume == token and len(b.mode_requests()) == asked
    b.feed(Land("l", resume=token))  # the quoting commander changes its mind
    assert b.reply("h").reason is Reason.SUPERSEDED
    assert [m for _, m in b.mode_requests()[asked:]] == [Px4Mode.AUTO_LAND]


def test_a_dead_commanders_backlog_never_undoes_the_loss_action() -> None:
    b = Bench(EngineSettings(hold_s=0.0))  # the loss action at once: AUTO.LOITER
    b.engage(UP)
    lapse(b)
    assert b.phase() is Phase.RELEASING
    t = b.now
    b.feed(Hold("backlog"))  # a failsafe's hand-over was superseded by anyone's hold
    assert b.reply("backlog").reason is Reason.NOT_IN_CONTROL
    assert b.mode_requests(since=t + 1e-9) == []
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.FAILSAFE  # not idle, where a late engage needed no token
    b.feed(Engage("late", UP))
    assert b.reply("late").reason is Reason.NOT_IN_CONTROL


def test_a_quoted_land_over_the_loss_action_leaves_the_vehicle_to_failsafe() -> None:
    b = Bench(EngineSettings(hold_s=0.0))
    b.engage(UP)
    lapse(b)
    b.feed(Land("l", resume=b.engine.resume_token))  # a live commander, on purpose
    b.set_mode(Px4Mode.AUTO_LAND)
    assert b.phase() is Phase.FAILSAFE and b.reason() is Reason.COMMANDED_LAND
    assert b.reply("l").ok and b.reply("l").resume == b.engine.resume_token


def test_a_hold_after_the_lease_lapsed_ends_in_failsafe() -> None:
    b = Bench(EngineSettings(hold_s=30.0))
    b.engage(UP)
    lapse(b)
    assert b.phase() is Phase.HOLDING
    b.feed(Land("l"))  # anyone may land it: a safe mode
    b.set_mode(Px4Mode.AUTO_LAND)
    assert b.phase() is Phase.FAILSAFE and b.reply("l").ok
    b.feed(Engage("late", UP))  # the dead commander's engage, delivered late
    assert b.reply("late").reason is Reason.NOT_IN_CONTROL


def test_an_arm_spends_the_token_a_repeat_never_re_arms() -> None:
    b = Bench()
    b.engage(UP, arm=True)
    b.set_armed(False)
    b.feed(b.fc.heartbeat())  # a GCS disarmed it
    assert b.phase() is Phase.PREEMPTED
    token = b.engine.resume_token
    b.feed(Arm("a1", resume=token))
    b.set_armed(True)
    b.feed(b.fc.heartbeat())
    assert b.reply("a1").ok and b.reply("a1").resume == b.engine.resume_token != token
    b.set_armed(False)
    b.feed(b.fc.heartbeat())  # disarmed again
    arms = len(b.actions(ArmDisarm))
    b.feed(Arm("a1-repeat", resume=token))  # a QoS-1 repeat, a retry: the old token
    assert b.reply("a1-repeat").reason is Reason.NOT_IN_CONTROL
    assert len(b.actions(ArmDisarm)) == arms


def test_a_refused_arm_names_the_token_it_spent_the_next_one() -> None:
    b = Bench()
    b.engage(UP, arm=True)
    b.set_armed(False)
    b.feed(b.fc.heartbeat())
    token = b.engine.resume_token
    b.feed(Arm("a1", resume=token))
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.TEMPORARILY_REJECTED)
    reply = b.reply("a1")
    assert reply.reason is Reason.ARM_REFUSED
    assert reply.resume == b.engine.resume_token and reply.resume not in (None, token)


def test_only_the_lease_holder_arms_in_active() -> None:
    b = Bench()
    b.engage(UP)  # on the ground, disarmed, in OFFBOARD
    assert not b.fc.armed
    arms = len(b.actions(ArmDisarm))
    b.feed(Arm("b-arm"), commander="b")  # would start the holder's flight
    assert b.reply("b-arm").reason is Reason.NOT_IN_CONTROL
    assert len(b.actions(ArmDisarm)) == arms
    b.feed(Arm("a-arm"))  # the holder
    assert len(b.actions(ArmDisarm)) == arms + 1


def test_a_failed_engage_from_a_taken_phase_names_the_new_token() -> None:
    b = Bench(EngineSettings(mode_retries=0))
    token = _preempted(b)
    b.hooks.clear()
    b.feed(Engage("e", UP, resume=token))
    b.step(1.05)  # the warm-up, then OFFBOARD asked for
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)
    b.step(0.5)
    reply = b.reply("e")
    assert b.phase() is Phase.PREEMPTED and reply.reason is Reason.MODE_REFUSED
    assert reply.resume == b.engine.resume_token and reply.resume not in (None, token)
