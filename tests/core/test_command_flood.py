"""A flood of hand-over commands (issue 15: 20,000 `hold`s at QoS 0 made ~1,200
DO_SET_MODEs): a repeat of the pending request is answered with it, never re-sent."""

from __future__ import annotations

from offboardd.core.commands import Hold, Land
from offboardd.core.engine_handover import MAX_JOINED
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed

from .bench import Bench

UP = PositionNed(0.0, 0.0, -5.0)


def test_a_flood_of_holds_asks_the_fc_once_and_answers_every_one() -> None:
    b = Bench()
    b.engage(UP)
    t = b.now
    for i in range(1000):
        b.feed(Hold(f"h{i}"))
    assert [m for _, m in b.mode_requests(since=t)] == [Px4Mode.AUTO_LOITER]
    assert b.phase() is Phase.RELEASING
    b.set_mode(Px4Mode.AUTO_LOITER)
    b.step(0.1)
    assert b.phase() is Phase.IDLE
    # every one answered: the first and MAX_JOINED repeats with the outcome, the rest at
    # once (a repeat beyond those is not kept: their replies at once would push out others)
    kept = 1 + MAX_JOINED
    assert all(b.reply(f"h{i}").ok for i in range(kept))
    assert all(b.reply(f"h{i}").reason is Reason.REPEAT_NOT_KEPT for i in range(kept, 1000))


def test_another_mode_still_supersedes_the_pending_one() -> None:
    b = Bench()
    b.engage(UP)
    t = b.now
    b.feed(Hold("h1"))
    b.feed(Hold("h2"))
    b.feed(Land("l1"))
    assert [m for _, m in b.mode_requests(since=t)] == [Px4Mode.AUTO_LOITER, Px4Mode.AUTO_LAND]
    for superseded in ("h1", "h2"):
        assert b.reply(superseded).reason is Reason.SUPERSEDED
    b.set_mode(Px4Mode.AUTO_LAND)
    b.step(0.1)
    assert b.reply("l1").ok
