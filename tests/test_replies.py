"""Pending replies: a command delivered again while it awaits its reply is known as such
(the same route, id and content), and only then; forgotten once answered or evicted."""

from __future__ import annotations

from offboardd.core.actions import Reply
from offboardd.core.commands import Land
from offboardd.mqtt.wire import ReplyRoute
from offboardd.replies import PendingReplies

A = ReplyRoute("offboardd/v/reply/a", "l1")
B = ReplyRoute("offboardd/v/reply/b", "l1")


def test_a_repeat_is_the_same_id_route_and_content_while_it_awaits_its_reply() -> None:
    replies = PendingReplies()
    token = replies.tokenize(Land("l1"), A)
    assert replies.repeats_pending(Land("l1"), A)
    assert not replies.repeats_pending(Land("l1"), B)  # another commander's own "l1"
    assert not replies.repeats_pending(Land("l1", resume="tok"), A)  # not the same command
    assert not replies.repeats_pending(Land("l2"), A)
    resolved = replies.resolve(Reply.success(token.command_id, "FC reports AUTO.LAND"))
    assert resolved is not None and resolved[0].command_id == "l1"
    assert not replies.repeats_pending(Land("l1"), A)  # answered: a new one is new


def test_an_evicted_command_is_forgotten_and_a_newer_one_kept() -> None:
    replies = PendingReplies(max_pending=2)
    replies.tokenize(Land("l1"), A)
    replies.tokenize(Land("l2"), A)
    replies.tokenize(Land("l3"), A)  # l1 evicted
    assert not replies.repeats_pending(Land("l1"), A)
    assert replies.repeats_pending(Land("l3"), A)
