"""Walk every (phase, trigger) pair a test can produce through a real engine and check it
does what the table (core/machine_table.py) says: every command in every phase, and the
FC events a fake PX4 can inject (a mode nobody asked for, a disarm, the link going down,
a reboot, refusing ACKs). Timers, the envelope and the FC confirmations are walked in
test_walk_timers.py, which also checks that the whole walk looked up every row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from offboardd.core.actions import Notice, NoticeKind
from offboardd.core.commands import (
    Arm,
    Command,
    CommanderHeartbeat,
    Disarm,
    EmergencyStop,
    Engage,
    Hold,
    Land,
    Release,
    Rtl,
    SetSetpoint,
)
from offboardd.core.events import (
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    AckResult,
    FcLinkDown,
    SystemStatus,
)
from offboardd.core.machine import Outcome, Rule, Trigger
from offboardd.core.machine_table import MACHINE
from offboardd.core.modes import Px4Mode
from offboardd.core.motion_commands import FollowPath, Goto, Orbit, Stop
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed

from .bench import Bench

UP = PositionNed(0, 0, -5)


def _warmup(b: Bench, arm: bool = False) -> None:
    b.connect()
    b.commander_alive = True
    b.feed(Engage("e0", UP, arm=arm))


def _engaging(b: Bench) -> None:
    _warmup(b)
    b.step(1.0)


def _arming(b: Bench) -> None:
    _warmup(b, arm=True)
    b.step(1.0)
    b.set_mode(Px4Mode.OFFBOARD)


def _holding(b: Bench) -> None:
    b.engage(UP)
    b.commander_alive = False
    b.step(b.settings.command_timeout_s + 0.01)


def _failsafe(b: Bench) -> None:
    b.engage(UP, arm=True)
    b.feed(EmergencyStop("x0", confirm=True))


def _active(b: Bench) -> None:
    b.engage(UP, arm=True)


def _releasing(b: Bench) -> None:
    b.engage(UP)
    b.feed(Release("r0"))


def _preempted(b: Bench) -> None:
    b.engage(UP)
    b.set_mode(Px4Mode.POSCTL)


RECIPES: dict[Phase, Callable[[Bench], None]] = {
    Phase.IDLE: lambda b: b.connect(),
    Phase.WARMUP: _warmup,
    Phase.ENGAGING: _engaging,
    Phase.ARMING: _arming,
    Phase.ACTIVE: _active,
    Phase.HOLDING: _holding,
    Phase.RELEASING: _releasing,
    Phase.FAILSAFE: _failsafe,
    Phase.PREEMPTED: _preempted,
}

COMMANDS: dict[Trigger, Command] = {
    Trigger.ENGAGE: Engage("c", UP),
    Trigger.SETPOINT: SetSetpoint("c", PositionNed(1, 0, -5)),
    Trigger.RELEASE: Release("c"),
    Trigger.HOLD: Hold("c"),
    Trigger.LAND: Land("c"),
    Trigger.RTL: Rtl("c"),
    Trigger.ARM: Arm("c"),
    Trigger.DISARM: Disarm("c"),
    Trigger.EMERGENCY_STOP: EmergencyStop("c", confirm=True),
    Trigger.HEARTBEAT: CommanderHeartbeat("c"),
    # where nothing of ours flies, a goto with engage: true engages; a path without refuses
    Trigger.GOTO: Goto("c", PositionNed(3, 0, -5), engage=True),
    Trigger.PATH: FollowPath("c", (PositionNed(3, 0, -5), PositionNed(3, 3, -5))),
    Trigger.ORBIT: Orbit("c", PositionNed(0, 0, -5), radius_m=3.0),
    Trigger.STOP: Stop("c"),
}


def in_phase(phase: Phase) -> Bench:
    b = Bench()
    RECIPES[phase](b)
    assert b.phase() is phase
    b.log.clear()
    return b


def expect(b: Bench, rule: Rule, before: Phase, back: Phase = Phase.IDLE) -> None:
    """The engine did what `rule` says: moved to its phase with one of its reasons and a
    TRANSITION naming where it came from, or stayed. `back`: where BACK leads, the phase
    the engage or plain mode request was made from (every recipe's is idle)."""
    if rule.moves:
        to = rule.to if isinstance(rule.to, Phase) else back
        assert b.phase() is to
        moves = [a for _, a in b.log if isinstance(a, Notice) and a.kind is NoticeKind.TRANSITION]
        assert moves and moves[0].previous_phase is before and moves[0].phase is to
        assert moves[0].reason in rule.reasons
    else:
        assert b.phase() is before


@pytest.mark.parametrize("trigger", list(COMMANDS))
@pytest.mark.parametrize("phase", list(Phase))
def test_every_command_in_every_phase_does_what_the_table_says(
    phase: Phase, trigger: Trigger
) -> None:
    b = in_phase(phase)
    b.engine.command_in_hand = COMMANDS[trigger]  # the facts its rule reads (engage asked)
    rule = b.engine.rule(trigger, b.now)
    b.engine.command_in_hand = None
    assert rule in (*MACHINE.listed(phase, trigger), MACHINE.defaults[trigger.source])
    b.feed(COMMANDS[trigger])
    if rule.to is Outcome.REFUSE:
        reply = b.reply("c")
        refusal = rule.reasons[0] if rule.reasons else Reason.PHASE_NOT_ALLOWED
        assert not reply.ok and reply.reason is refusal
        assert phase.value in reply.message and trigger.value in reply.message
    else:
        assert b.no_reply("c") or b.reply("c").reason not in (
            Reason.PHASE_NOT_ALLOWED, Reason.NOT_IN_CONTROL)
    expect(b, rule, phase)


def _mode_taken(b: Bench) -> Trigger:
    b.set_mode(Px4Mode.ALTCTL)  # neither OFFBOARD nor the mode at engage (POSCTL)
    return Trigger.FC_MODE_TAKEN


def _disarmed(b: Bench) -> Trigger:
    b.set_armed(False)
    b.feed(b.fc.heartbeat())  # only a HEARTBEAT shows it
    return Trigger.FC_DISARMED


def _link_down(b: Bench) -> Trigger:
    b.feed(FcLinkDown(detail="unplugged"))
    return Trigger.FC_LOST


def _rebooted(b: Bench) -> Trigger:
    b.fc.boot_ms = 500  # time_boot_ms went back
    b.feed(b.fc.position())
    return Trigger.FC_REBOOTED


def _mode_refused(b: Bench) -> Trigger:
    b.ack(MAV_CMD_DO_SET_MODE, AckResult.DENIED)
    return Trigger.FC_MODE_REFUSED


def _arm_refused(b: Bench) -> Trigger:
    b.ack(MAV_CMD_COMPONENT_ARM_DISARM, AckResult.DENIED)
    return Trigger.FC_ARM_REFUSED


def _motors_cut(b: Bench) -> Trigger:
    b.fc.system_status = SystemStatus.FLIGHT_TERMINATION  # the mode and armed flag stay
    b.feed(b.fc.heartbeat())
    return Trigger.FC_MOTORS_CUT


FC_EVENTS = [_mode_taken, _disarmed, _link_down, _rebooted, _mode_refused, _arm_refused,
             _motors_cut]


@pytest.mark.parametrize("inject", FC_EVENTS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("phase", list(Phase))
def test_fc_events_in_every_phase_do_what_the_table_says(
    phase: Phase, inject: Callable[[Bench], Trigger]
) -> None:
    b = in_phase(phase)
    armed_before = b.engine.vehicle.armed
    rules = {t: b.engine.rule(t, b.now) for t in Trigger}
    trigger = inject(b)
    rule = rules[trigger]
    if trigger is Trigger.FC_DISARMED and not armed_before:
        rule = MACHINE.defaults[trigger.source]  # nothing changed: no disarm to report
    if trigger is Trigger.FC_MODE_TAKEN and phase is Phase.RELEASING:
        assert rule.to is Phase.PREEMPTED  # a hand-over we fly: a takeover
    expect(b, rule, phase)


# The rows that need the engine's token (the walk above sends none: refused there).
QUOTED = [*[(Phase.HOLDING, t) for t in (Trigger.SETPOINT, Trigger.GOTO, Trigger.PATH,
                                          Trigger.ORBIT, Trigger.STOP)],
          *[(p, t) for p in (Phase.FAILSAFE, Phase.PREEMPTED)
            for t in (Trigger.ENGAGE, Trigger.GOTO,  # (the walk's goto has engage: true)
                      Trigger.HOLD, Trigger.LAND, Trigger.RTL)]]


@pytest.mark.parametrize(("phase", "trigger"), QUOTED)
def test_what_quotes_the_token_takes_control(phase: Phase, trigger: Trigger) -> None:
    b = in_phase(phase)
    token = b.engine.resume_token
    assert token is not None
    command = dataclasses.replace(COMMANDS[trigger], resume=token)  # type: ignore[arg-type]
    b.engine.command_in_hand = command
    rule = b.engine.rule(trigger, b.now)
    b.engine.command_in_hand = None
    assert rule.to in (Phase.ACTIVE, Phase.WARMUP, Phase.RELEASING)
    assert rule in MACHINE.listed(phase, trigger)
    b.feed(command)
    assert b.no_reply("c") or b.reply("c").ok
    expect(b, rule, phase)
