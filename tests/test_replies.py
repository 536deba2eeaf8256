"""Pending replies: a command delivered again (the same route, id and content) is known as
such while it awaits its reply, and for ANSWERED_KEEP_S after it succeeded; a refused one,
a setpoint and a heartbeat act each time."""

from __future__ import annotations

from offboardd.core.actions import Reply
from offboardd.core.commands import CommanderHeartbeat, Land, Release, SetSetpoint
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


def _answer(replies: PendingReplies, command: object, route: ReplyRoute, reply_ok: bool,
            now: float) -> None:
    token = replies.tokenize(command, route)  # type: ignore[arg-type]
    reply = (Reply.success(token.command_id, "done") if reply_ok else
             Reply.failure(token.command_id, Reason.NOT_IN_CONTROL, "no"))
    assert replies.resolve(reply, now) is not None


def test_a_command_that_succeeded_is_answered_again_for_a_minute_and_not_acted_on() -> None:
    replies = PendingReplies()
    _answer(replies, Land("l1"), A, True, now=100.0)
    earlier = replies.answered_before(Land("l1"), A, 100.0 + ANSWERED_KEEP_S)
    assert earlier is not None and earlier.ok and earlier.command_id == "l1"
    assert replies.answered_before(Land("l1"), B, 101.0) is None  # another commander's "l1"
    assert replies.answered_before(Land("l1", resume="tok"), A, 101.0) is None  # new content
    assert replies.answered_before(Land("l2"), A, 101.0) is None
    assert replies.answered_before(Land("l1"), A, 100.1 + ANSWERED_KEEP_S) is None  # forgotten


def test_a_refusal_a_setpoint_and_a_heartbeat_are_not_remembered() -> None:
    replies = PendingReplies()
    setpoint = SetSetpoint("s1", VelocityNed(1.0, 0.0, 0.0))
    _answer(replies, Release("r1"), A, False, now=0.0)  # the retry of a refused one acts
    _answer(replies, setpoint, A, True, now=0.0)
    _answer(replies, CommanderHeartbeat("h1"), A, True, now=0.0)
    assert replies.answered_before(Release("r1"), A, 1.0) is None
    assert replies.answered_before(setpoint, A, 1.0) is None
    assert replies.answered_before(CommanderHeartbeat("h1"), A, 1.0) is None


def test_a_stream_route_that_is_not_answered_on_success_is_not_remembered() -> None:
    replies = PendingReplies()
    quiet = ReplyRoute("offboardd/v/reply/a", "l1", None, reply_on_success=False)
    _answer(replies, Land("l1"), quiet, True, now=0.0)
    assert replies.answered_before(Land("l1"), quiet, 1.0) is None


def test_what_is_remembered_is_bounded() -> None:
    replies = PendingReplies(max_pending=2)
    for n in range(3):
        _answer(replies, Land(f"l{n}"), A, True, now=float(n))
    assert replies.answered_before(Land("l0"), A, 3.0) is None
    assert replies.answered_before(Land("l2"), A, 3.0) is not None
