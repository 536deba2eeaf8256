"""Only the lease's holder flies; anyone else takes control by quoting the engine's token,
which changes whenever control changes hands. So what a stalled network or a bridge
delivers late from a commander that lost control never flies, renews nothing and takes no
lease. Found by two reviews: after a live commander resumed, the dead one's backlog took
the lease back and flew 3 m/s north (5.1 m in 2 s); during a motion allowed to finish
unleased it renewed the lease for as long as it came (its late `arm`s too, 25 s); a
commander that lost control by a hand-over or a takeover was never marked at all."""

from __future__ import annotations

from offboardd.core.actions import SendSetpoint
from offboardd.core.commands import Arm, Command, CommanderHeartbeat, Engage, Hold, SetSetpoint
from offboardd.core.modes import Px4Mode
from offboardd.core.motion_commands import Goto, Stop
from offboardd.core.motion_settings import MotionSettings, OnLeaseLapse
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import GlobalPosition, PositionNed, VelocityNed
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
        assert "another commander's" in refused.message
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


FINISH = EngineSettings(hold_s=10.0, motion=MotionSettings(
    on_lease_lapse=OnLeaseLapse.FINISH, max_unleased_s=3.0))


def test_while_a_motion_finishes_unleased_the_dead_commander_renews_nothing() -> None:
    b = Bench(FINISH)
    engaged_by(b, "D")
    b.feed(Goto("g", PositionNed(60, 0, -5), speed_m_s=3.0), commander="D")  # 20 s long
    b.step(1.1)  # D went silent: the motion may finish, for 3 s at most
    assert b.phase() is Phase.ACTIVE
    t_lapse = b.now
    for i in range(100):  # D's backlog for 5 s: setpoints, heartbeats, arms (none renews)
        b.feed(SetSetpoint(f"d{i}", STALE), commander="D")
        b.feed(CommanderHeartbeat(f"h{i}", ack=False), commander="D")
        b.feed(Arm(f"a{i}"), commander="D")
        b.step(0.05)
    assert not b.reply("d0").ok and b.phase() is Phase.HOLDING
    assert all(a.setpoint != STALE for _, a in b.actions(SendSetpoint, since=t_lapse))


def test_in_the_finish_window_a_live_commander_takes_its_motion_back_with_the_token() -> None:
    b = Bench(FINISH)
    engaged_by(b, "D")
    b.feed(Goto("g", PositionNed(60, 0, -5), speed_m_s=3.0), commander="D")
    b.step(1.1)  # a drop-out: the motion goes on, unleased
    token = b.engine.snapshot(b.now).resume_token
    assert b.phase() is Phase.ACTIVE and token is not None
    b.feed(Stop("s", resume=token), commander="D")  # back: it stops its own motion
    assert b.reply("s").ok and b.engine.lease.holds("D")
    for _ in range(20):
        b.feed(CommanderHeartbeat("hb", ack=False), commander="D")
        b.step(0.25)
    assert b.phase() is Phase.ACTIVE  # its lease again, past the 3 s window


def test_a_commander_that_lost_control_by_a_hand_over_never_flies_its_backlog() -> None:
    b = Bench(EngineSettings(hold_s=10.0))
    engaged_by(b, "D")  # D hangs; an operator on L takes the vehicle back, then engages
    b.auto_fc()
    b.feed(Hold("h"), commander="L")
    b.step(0.5)
    b.set_mode(Px4Mode.POSCTL)
    b.step(0.2)
    assert b.phase() is not Phase.ACTIVE
    b.feed(Engage("e2", PositionNed(0, 0, -5)), commander="L")
    b.step(0.5)
    b.feed(SetSetpoint("d-late", STALE), commander="D")
    assert b.reply("d-late").reason is Reason.NOT_IN_CONTROL and b.engine.lease.holds("L")


def test_another_live_commander_takes_over_with_the_token() -> None:
    b = Bench(EngineSettings(hold_s=10.0))
    engaged_by(b, "L")
    b.feed(SetSetpoint("d1", PositionNed(1, 0, -5), resume=b.engine.resume_token),
           commander="D")  # D read the state: alive, it takes over
    assert b.reply("d1").ok and b.engine.lease.holds("D")


def test_a_takeover_that_is_refused_takes_nothing() -> None:
    b = Bench(EngineSettings(hold_s=10.0))
    engaged_by(b, "A")
    token = b.engine.resume_token
    unflyable = GlobalPosition(47.4, 8.5, 500.0)  # no global estimate here: refused
    b.feed(SetSetpoint("b1", unflyable, resume=token), commander="B")
    assert b.reply("b1").reason is Reason.ESTIMATE_MISSING
    assert b.engine.lease.holds("A") and b.engine.resume_token == token
    b.feed(CommanderHeartbeat("a-hb"), commander="A")
    assert b.reply("a-hb").ok


def test_a_takeover_during_the_engage_fails_the_engages_waiting_reply() -> None:
    b = Bench()
    b.connect()
    b.auto_fc()
    b.feed(Engage("a-engage", PositionNed(0, 0, -5), arm=True), commander="A")
    b.step(0.3)  # warming up
    b.feed(SetSetpoint("b1", PositionNed(1, 0, -5), resume=b.engine.resume_token),
           commander="B")
    assert b.reply("b1").ok and b.engine.lease.holds("B")
    answer = b.reply("a-engage")  # never "engaged" for a commander that lost it
    assert not answer.ok and answer.reason is Reason.NOT_IN_CONTROL
    for _ in range(16):
        b.feed(CommanderHeartbeat("b-hb", ack=False), commander="B")
        b.step(0.25)
    assert b.phase() is Phase.ACTIVE and b.engine.lease.holds("B")  # the engage went on


def test_the_finish_window_has_a_token_of_its_own() -> None:
    b = Bench(FINISH)
    engaged_by(b, "D")
    b.feed(Goto("g", PositionNed(60, 0, -5), speed_m_s=3.0), commander="D")
    before = b.engine.resume_token
    b.step(1.1)  # the lapse: the motion finishes unleased, control is nobody's
    assert b.engine.resume_token not in (None, before)
    b.feed(SetSetpoint("late", STALE, resume=before), commander="D")  # written before
    assert b.reply("late").reason is Reason.NOT_IN_CONTROL
