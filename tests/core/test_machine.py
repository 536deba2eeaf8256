"""The phase table (core/machine_table.py) checked as data, over every path, and
against the engine it drives; and the diagram in docs/engine.md checked against it.

- every (phase, trigger) pair resolves to exactly one rule whatever the facts;
- the safety invariants hold over all paths through the table: OFFBOARD never asked
  for before the warm-up; control never taken back after PREEMPTED or FAILSAFE without
  a new engage; every way out of ACTIVE stops the stream or hands it over first;
- a real engine, put in each phase, does what the table says for every command and
  for the FC events a test can inject (tests/core/test_walk.py);
- `offboardd engine-table --mermaid` prints what docs/engine.md embeds.
"""

from __future__ import annotations

import io
import itertools
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from offboardd.cli import main as cli_main
from offboardd.core.commands import CommandKind
from offboardd.core.machine import Do, Fact, MisuseError, Outcome, Rule, Source, Trigger, yes
from offboardd.core.machine_diagram import (
    MERMAID_MARKS,
    TABLE_MARKS,
    embedded,
    render_markdown,
    render_mermaid,
)
from offboardd.core.machine_table import MACHINE, NOT_ENGAGED, TAKEN
from offboardd.core.reasons import STREAMING_PHASES, Phase, Reason
from offboardd.core.setpoints import PositionNed

from .bench import Bench

DOC = Path(__file__).resolve().parents[2] / "docs" / "engine.md"
STREAM_ALLOWED = STREAMING_PHASES | {Phase.RELEASING}

# The command/phase table as it was written before the table existed (engine_commands.py,
# ALLOWED): the machine must accept exactly these.
_ALL = frozenset(Phase)
_NOT_ENGAGED = frozenset({Phase.IDLE, Phase.FAILSAFE, Phase.PREEMPTED})
FORMER_ALLOWED: dict[CommandKind, frozenset[Phase]] = {
    CommandKind.ENGAGE: _NOT_ENGAGED,
    CommandKind.SETPOINT: STREAMING_PHASES,
    CommandKind.RELEASE: STREAMING_PHASES,
    CommandKind.HOLD: _ALL,
    CommandKind.LAND: _ALL,
    CommandKind.RTL: _ALL,
    CommandKind.ARM: _NOT_ENGAGED | {Phase.ACTIVE},
    CommandKind.DISARM: _NOT_ENGAGED | {Phase.ACTIVE},
    CommandKind.EMERGENCY_STOP: _ALL,
    # issue 15: a heartbeat without a lease is refused (not_in_control), no longer "ok"
    CommandKind.HEARTBEAT: frozenset({Phase.WARMUP, Phase.ENGAGING, Phase.ARMING, Phase.ACTIVE}),
    # issue 16: motions where a setpoint is; a goto or path with engage: true also engages
    CommandKind.GOTO: STREAMING_PHASES | _NOT_ENGAGED,
    CommandKind.PATH: STREAMING_PHASES | _NOT_ENGAGED,
    CommandKind.ORBIT: STREAMING_PHASES,
    CommandKind.STOP: STREAMING_PHASES,
}


# An engage, or a goto / path with engage: true (their only rows that start a stream).
ENGAGES = frozenset({Trigger.ENGAGE, Trigger.GOTO, Trigger.PATH})


def test_commands_are_accepted_in_exactly_the_former_phases() -> None:
    assert {k: MACHINE.allowed(k) for k in CommandKind} == FORMER_ALLOWED


def test_every_phase_trigger_pair_resolves_to_one_rule_for_every_fact_value() -> None:
    for phase, trigger in itertools.product(Phase, Trigger):
        # only the facts its rows name can decide a pair: every value of each of those
        named = sorted({c.fact for r in MACHINE.listed(phase, trigger) for c in r.when})
        for values in itertools.product((False, True), repeat=len(named)):
            facts = dict.fromkeys(Fact, False) | dict(zip(named, values, strict=True))
            rule = MACHINE.rule(phase, trigger, facts.__getitem__)
            matching = [r for r in MACHINE.listed(phase, trigger) if r.applies(facts.__getitem__)]
            assert matching in ([rule], []), (phase, trigger, facts)
            if not matching:  # not listed: the default rule of its source, itself a row
                assert rule is MACHINE.defaults[trigger.source]
            if trigger.source is Source.COMMAND:
                assert rule.to is not Outcome.IGNORE  # a command is always answered
            else:
                assert rule.to is not Outcome.REFUSE  # only commands are refused


def test_a_handovers_reason_is_one_its_success_can_record() -> None:
    """A hand-over keeps the reason its row recorded to its end: the rows of its success
    (the mode reached) must have it, or the engine raises MisuseError at the very end."""
    reached = {r for rule in MACHINE.rules if rule.trigger is Trigger.FC_MODE_HANDED_OVER
               for r in rule.reasons}
    for rule in MACHINE.rules:
        if rule.to is Phase.RELEASING:
            assert set(rule.reasons) <= reached, rule


def test_every_row_is_well_formed() -> None:
    for rule in MACHINE.rules:
        assert rule.why, rule
        if rule.moves:
            assert rule.reasons, rule
        if rule.to is Phase.RELEASING:  # every hand-over names its reasons (kept to its end)
            assert Do.HAND_OVER in rule.does and None not in rule.reasons, rule
        if Do.START_STREAM in rule.does:  # a stream starts only with a warm-up
            assert rule.to is Phase.WARMUP and rule.trigger in ENGAGES, rule


# -- all paths -------------------------------------------------------------------------------

# (phase, streaming, warmed up since the stream started, or PX4 took OFFBOARD by itself
# during the warm-up: a row that holds only when the FC flies our stream, §3; the phase
# the last engage or plain mode request was made from, where BACK goes; in RELEASING,
# whether the hand-over was asked while the vehicle was taken)
State = tuple[Phase, bool, bool, Phase, bool]
_FAILSAFE_HANDOVERS = frozenset({Reason.LOSS_ACTION, Reason.FENCE_BREACH})
_ENGAGE_PHASES = frozenset({Phase.WARMUP, Phase.ENGAGING, Phase.ARMING})


def _steps(state: State, skip: frozenset[Trigger] = frozenset()) -> list[tuple[Rule, State]]:
    """Every row the table allows from `state`, with the state it leads to. Facts other
    than STREAMING and TAKEN_HANDOVER may take either value; those two are the model's."""
    phase, streaming, warmed, left_from, taken = state
    out = []
    for rule in MACHINE.rules:
        if phase not in rule.phases or rule.trigger in skip:
            continue
        if any((c.fact is Fact.STREAMING and c.holds is not streaming)
               or (c.fact is Fact.TAKEN_HANDOVER and c.holds is not taken) for c in rule.when):
            continue
        to = (rule.to if isinstance(rule.to, Phase)
              else left_from if rule.to is Outcome.BACK else phase)
        left = phase if phase in NOT_ENGAGED and rule.moves else left_from
        failsafe = bool(_FAILSAFE_HANDOVERS & set(rule.reasons))
        hands_over = Do.HAND_OVER in rule.does
        lapsed = hands_over and (failsafe or phase is Phase.HOLDING)
        if lapsed:
            left = Phase.FAILSAFE  # a plain request's success (no failsafe's) goes back there
        now_taken = to is Phase.RELEASING and (
            (taken and phase is Phase.RELEASING and not hands_over)
            or (hands_over and (lapsed or phase in TAKEN or (phase is Phase.RELEASING and taken)
                               or (phase in _ENGAGE_PHASES and left_from in TAKEN))))
        on = streaming
        if Do.STOP_STREAM in rule.does:
            on = False
        if Do.START_STREAM in rule.does:
            on, warmed = True, False
        if rule.trigger is Trigger.WARMUP_DONE or (
                rule.moves and yes(Fact.FC_FLIES_STREAM) in rule.when):
            warmed = True  # PX4 is in OFFBOARD already: it is never asked for after this
        out.append((rule, (to, on, warmed, left, now_taken)))
    return out


def _reachable(start: State, skip: frozenset[Trigger] = frozenset()) -> list[tuple[Rule, State]]:
    seen, todo, taken = {start}, [start], []
    while todo:
        for rule, nxt in _steps(todo.pop(), skip):
            taken.append((rule, nxt))
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return taken


START: State = (Phase.IDLE, False, False, Phase.IDLE, False)


def test_offboard_is_never_asked_for_before_the_warmup_on_any_path() -> None:
    taken = _reachable(START)
    assert taken
    for rule, (phase, _, warmed, _, _) in taken:
        if Do.REQUEST_OFFBOARD in rule.does or phase in {Phase.ENGAGING, Phase.ARMING,
                                                         Phase.ACTIVE, Phase.HOLDING}:
            assert warmed, (rule, phase)


def test_the_stream_runs_only_where_the_table_allows_it_on_any_path() -> None:
    """Every way out of ACTIVE (and HOLDING, and a streaming hand-over) stops the stream
    or hands it over: no path reaches IDLE, FAILSAFE or PREEMPTED still streaming."""
    for rule, (phase, streaming, _, _, _) in _reachable(START):
        assert not streaming or phase in STREAM_ALLOWED, (rule, phase)
        if phase in STREAMING_PHASES:
            assert streaming, (rule, phase)
    for rule in MACHINE.rules:
        if Phase.ACTIVE in rule.phases and rule.moves and rule.to is not Phase.ACTIVE:
            assert {Do.STOP_STREAM, Do.HAND_OVER, Do.HOLD_HERE} & set(rule.does), rule


@pytest.mark.parametrize("phase", [Phase.PREEMPTED, Phase.FAILSAFE])
def test_control_is_never_taken_back_without_a_new_engage(phase: Phase) -> None:
    taken = _reachable((phase, False, False, phase, False), skip=ENGAGES)
    for rule, (to, streaming, _, _, _) in taken:
        assert not streaming and to not in STREAMING_PHASES, rule
        assert not {Do.START_STREAM, Do.REQUEST_OFFBOARD, Do.REQUEST_ARM} & set(rule.does)


@pytest.mark.parametrize("phase", [Phase.PREEMPTED, Phase.FAILSAFE])
def test_a_vehicle_taken_from_us_stays_taken_until_we_fly_it_or_hand_it_over(
    phase: Phase,
) -> None:
    """Found by review: an engage (or a plain mode request) made from a taken phase, quoting
    its token, that failed went to IDLE, where a message written before the takeover (a
    hold, an arm without a token) acts again; then (review again) one that succeeded did.
    On every path from a taken phase, IDLE comes only after we flew the vehicle (ACTIVE)."""
    start: State = (phase, False, False, phase, False)
    seen, todo = {start}, [start]
    unreachable = frozenset({Trigger.FC_DISARMED_ON_COMMAND})  # in ARMING (test_walk_timers)
    while todo:
        for rule, nxt in _steps(todo.pop(), skip=unreachable):
            assert nxt[0] is not Phase.IDLE, rule
            if nxt[0] is not Phase.ACTIVE and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    assert {s[0] for s in seen} >= {phase, Phase.WARMUP, Phase.ENGAGING, Phase.ARMING,
                                    Phase.RELEASING}


# -- the engine keeps to it -------------------------------------------------------------------


def test_a_move_the_table_does_not_have_is_a_misuse_error() -> None:
    b = Bench()
    b.engage(PositionNed(0, 0, -5))
    with pytest.raises(MisuseError, match="not a move"):
        b.engine.go(Trigger.WARMUP_DONE, b.now, "no warm-up timer in ACTIVE")
    with pytest.raises(MisuseError, match="not a move"):
        b.engine.go(Trigger.ENGAGE, b.now, "refused in ACTIVE")
    rule = b.engine.rule(Trigger.FC_DISARMED_ON_COMMAND, b.now)
    with pytest.raises(MisuseError, match="stream still on"):
        b.engine.move(rule, "to IDLE without stopping the stream first")
    with pytest.raises(MisuseError, match="reason"):
        b.engine.move(b.engine.rule(Trigger.LEASE_LAPSED, b.now), "x", Reason.RELEASED)
    assert b.phase() is Phase.ACTIVE and b.engine.stream.running


# -- the diagram -----------------------------------------------------------------------------


def test_the_committed_diagram_and_table_are_what_the_code_prints() -> None:
    doc = DOC.read_text(encoding="utf-8")
    assert embedded(doc, MERMAID_MARKS) == render_mermaid(MACHINE), (
        "docs/engine.md is stale: paste `offboardd engine-table --mermaid` into it"
    )
    assert embedded(doc, TABLE_MARKS) == render_markdown(MACHINE), (
        "docs/engine.md is stale: paste `offboardd engine-table` into it"
    )


@pytest.mark.parametrize("mermaid", [True, False])
def test_the_cli_prints_the_table(mermaid: bool) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["engine-table", "--mermaid"] if mermaid else ["engine-table"]) == 0
    assert out.getvalue() == (render_mermaid if mermaid else render_markdown)(MACHINE)
