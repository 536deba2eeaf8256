"""A commander whose lease lapsed is presumed dead until it proves otherwise (a hold's
resume token, an engage): what a stalled network or a bridge delivers from it later never
flies, renews nothing and takes no lease from a commander that resumed. Found by review:
after a live commander resumed, the dead one's backlog took the lease back and flew 3 m/s
north (5.1 m in 2 s); during a motion allowed to finish unleased, it renewed the lease for
as long as it lasted."""

from __future__ import annotations

from offboardd.core.actions import SendSetpoint
from offboardd.core.commands import Command, CommanderHeartbeat, Engage, SetSetpoint
from offboardd.core.motion_commands import Goto
from offboardd.core.motion_settings import MotionSettings, OnLeaseLapse
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.core.settings import EngineSettings

from .bench import Bench

STALE = VelocityNed(3.0, 0.0, 0.0)


def engaged_by(b: Bench, who: str) -> None:
    b.connect()
    b.auto_fc()
    b.feed(Engage("e", PositionNed(0, 0, -5)), commander=who)
    for _ in range(int((b.settings.warmup_s + 2.5) / 0.25)):
        b.feed(CommanderHeartbeat("hb", ack=False), commander=who)
        b.step(0.25)
    assert b.phase() is Phase.ACTIVE and b.engine.lease.holds(who)
    b.hooks.clear()


def streamed(b: Bench) -> object:
    return b.actions(SendSetpoint)[-1][1].setpoint


def test_after_another_commander_resumed_the_dead_ones_backlog_is_refused() -> None:
    b = Bench(EngineSettings(hold_s=10.0))
    engaged_by(b, "D")
    b.step(1.1)  # D went silent
    token = b.engine.resume_token
    assert b.phase() is Phase.HOLDING and token is not None
    b.feed(SetSetpoint("l1", PositionNed(1, 0, -5), resume=token), commander="L")
    assert b.phase() is Phase.ACTIVE and b.engine.lease.holds("L")
    backlog: list[Command] = [SetSetpoint("d1", STALE), Goto("d2", PositionNed(30, 0, -5)),
                              CommanderHeartbeat("d3")]
    for i, cmd in enumerate(backlog):
        b.feed(cmd, commander="D")
        refused = b.reply(f"d{i + 1}")
        assert not refused.ok and refused.reason is Reason.NOT_IN_CONTROL
        assert "lease lapsed" in refused.message
    assert b.engine.lease.holds("L") and streamed(b) == PositionNed(1, 0, -5)
    b.feed(CommanderHeartbeat("l2"), commander="L")
    assert b.reply("l2").ok  # the live commander keeps it


def test_a_commander_that_quotes_a_later_holds_token_is_back() -> None:
    b = Bench(EngineSettings(hold_s=10.0))
    engaged_by(b, "D")
    b.step(1.1)
    b.feed(SetSetpoint("l1", PositionNed(1, 0, -5), resume=b.engine.resume_token),
           commander="L")
    b.step(1.1)  # L went silent too: a new hold, a new token
    assert b.phase() is Phase.HOLDING
    b.feed(SetSetpoint("d1", PositionNed(2, 0, -5), resume=b.engine.resume_token),
           commander="D")  # D was only stalled: it read the token
    assert b.reply("d1").ok and b.phase() is Phase.ACTIVE and b.engine.lease.holds("D")
    b.feed(CommanderHeartbeat("d2"), commander="D")
    assert b.reply("d2").ok


def test_while_a_motion_finishes_unleased_the_dead_commander_renews_nothing() -> None:
    settings = EngineSettings(hold_s=10.0, motion=MotionSettings(
        on_lease_lapse=OnLeaseLapse.FINISH, max_unleased_s=3.0))
    b = Bench(settings)
    engaged_by(b, "D")
    b.feed(Goto("g", PositionNed(60, 0, -5), speed_m_s=3.0), commander="D")  # 20 s long
    b.step(1.1)  # D went silent: the motion may finish, for 3 s at most
    assert b.phase() is Phase.ACTIVE
    t_lapse = b.now
    for i in range(100):  # D's backlog for 5 s
        b.feed(SetSetpoint(f"d{i}", STALE), commander="D")
        b.feed(CommanderHeartbeat(f"h{i}", ack=False), commander="D")
        b.step(0.05)
    assert not b.reply("d0").ok and b.phase() is Phase.HOLDING
    assert all(a.setpoint != STALE for _, a in b.actions(SendSetpoint, since=t_lapse))
