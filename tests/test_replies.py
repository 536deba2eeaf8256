"""Pending replies: a command delivered again (the same route, id and content) is known as
such while it awaits its reply, and for ANSWERED_KEEP_S after it succeeded; a refused one,
a setpoint and a heartbeat act each time."""

from __future__ import annotations

import pytest

from offboardd.core.actions import Reply
from offboardd.core.commands import (
    Arm,
    Command,
    CommanderHeartbeat,
    Disarm,
    EmergencyStop,
    Hold,
    Land,
    Release,
    Rtl,
    SetSetpoint,
)
from offboardd.core.motion_commands import Stop
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import VelocityNed
from offboardd.mqtt.wire import ReplyRoute
from offboardd.replies import ANSWERED_KEEP_S, PendingReplies

A = ReplyRoute("offboardd/v/reply/a", "l1")
B = ReplyRoute("offboardd/v/reply/b", "l1")


def test_a_repeat_is_the_same_id_route_and_content_while_it_awaits_its_reply() -> None:
    replies = PendingReplies()
    token = replies.tokenize(Land("l1"), A)
    assert replies.repeats_pending(Land("l1"), A)
    assert not replies.repeats_pending(Land("l1"), B)  # another commander's own "l1"
    assert not replies.repeats_pending(Land("l1", resume="tok"), A)  # not the same command
    assert not replies.repeats_pending(Land("l2"), A)
    resolved = replies.resolve(Reply.success(token.command_id, "FC reports AUTO.LAND"), 0.0)
    assert resolved is not None and resolved[0].command_id == "l1"
    assert not replies.repeats_pending(Land("l1"), A)  # answered: no longer awaiting


def test_an_evicted_command_is_forgotten_and_a_newer_one_kept() -> None:
    replies = PendingReplies(max_pending=2)
    replies.tokenize(Land("l1"), A)
    replies.tokenize(Land("l2"), A)
    replies.tokenize(Land("l3"), A)  # l1 evicted
    assert not replies.repeats_pending(Land("l1"), A)
    assert replies.repeats_pending(Land("l3"), A)


def _answer(replies: PendingReplies, command: Command, route: ReplyRoute, reply_ok: bool,
            now: float) -> None:
    token = replies.tokenize(command, route)
    reply = (Reply.success(token.command_id, "done") if reply_ok else
             Reply.failure(token.command_id, Reason.NOT_IN_CONTROL, "no"))
    assert replies.resolve(reply, now) is not None


def test_a_go_command_that_succeeded_is_answered_again_for_a_minute_not_acted_on() -> None:
    replies = PendingReplies()
    _answer(replies, Arm("a1"), A, True, now=100.0)
    earlier = replies.answered_before(Arm("a1"), A, 100.0 + ANSWERED_KEEP_S)
    assert earlier is not None and earlier.ok and earlier.command_id == "a1"
    assert replies.answered_before(Arm("a1"), B, 101.0) is None  # another commander's "a1"
    assert replies.answered_before(Arm("a1", resume="tok"), A, 101.0) is None  # new content
    assert replies.answered_before(Arm("a2"), A, 101.0) is None
    assert replies.answered_before(Arm("a1"), A, 100.1 + ANSWERED_KEEP_S) is None  # forgotten


@pytest.mark.parametrize("command", [
    Land("x"), Hold("x"), Rtl("x"), Release("x"), Stop("x"), Disarm("x"),
    EmergencyStop("x", confirm=True),
    SetSetpoint("x", VelocityNed(1.0, 0.0, 0.0)), CommanderHeartbeat("x"),
])
def test_a_stop_a_setpoint_and_a_heartbeat_act_each_time(command: Command) -> None:
    """A dashboard's button may send one id each time: "ok, repeat" to an emergency stop
    that did nothing left a vehicle flying that had taken off again (review)."""
    replies = PendingReplies()
    _answer(replies, command, A, True, now=0.0)
    assert replies.answered_before(command, A, 1.0) is None


def test_a_refusal_is_not_remembered_its_retry_acts() -> None:
    replies = PendingReplies()
    _answer(replies, Arm("a1"), A, False, now=0.0)
    assert replies.answered_before(Arm("a1"), A, 1.0) is None


def test_a_stream_route_that_is_not_answered_on_success_is_not_remembered() -> None:
    replies = PendingReplies()
    quiet = ReplyRoute("offboardd/v/reply/a", "a1", None, reply_on_success=False)
    _answer(replies, Arm("a1"), quiet, True, now=0.0)
    assert replies.answered_before(Arm("a1"), quiet, 1.0) is None


def test_what_is_remembered_is_bounded() -> None:
    replies = PendingReplies(max_pending=2)
    for n in range(3):
        _answer(replies, Arm(f"a{n}"), A, True, now=float(n))
    assert replies.answered_before(Arm("a0"), A, 3.0) is None
    assert replies.answered_before(Arm("a2"), A, 3.0) is not None
