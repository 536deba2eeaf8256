"""Random FC and commander behaviour against the engine's safety invariants.

Hypothesis drives a bench through random steps (commander alive or silent, FC switching
modes, arming, refusing, vanishing, rebooting) and the whole action log is checked:
setpoints only while a phase allows streaming, OFFBOARD never requested before
`warmup_s` of streaming, no re-entry after a preemption or failsafe without an engage,
every engage answered at most once, and the timer never stuck.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offboardd.core.actions import (
    ArmDisarm,
    Notice,
    NoticeKind,
    Reply,
    RequestMode,
    SendSetpoint,
)
from offboardd.core.commands import Engage, Release, SetSetpoint
from offboardd.core.events import MAV_CMD_DO_SET_MODE, AckResult
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import STREAMING_PHASES, Phase
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.core.settings import EngineSettings, LossAction

from .bench import Bench

# Repeated entries weight the draw towards engagements that get somewhere.
OPS = st.sampled_from(
    [
        "step_short",
        "step_short",
        "step_short",
        "step_long",
        "step_long",
        "commander_on",
        "commander_on",
        "cooperative_fc",
        "cooperative_fc",
        "engage",
        "commander_off",
        "engage",
        "engage_arm",
        "setpoint",
        "release",
        "mode_offboard",
        "mode_loiter",
        "mode_posctl",
        "mode_land",
        "ack_reject",
        "armed",
        "disarmed",
        "fc_off",
        "fc_on",
        "position_off",
        "position_on",
    ]
)


def run(ops: list[str], loss_action: LossAction) -> Bench:
    b = Bench(EngineSettings(hold_s=1.0, command_loss_action=loss_action, mode_retries=1))
    b.connect()
    for i, op in enumerate(ops):
        if op == "step_short":
            b.step(0.13)
        elif op == "step_long":
            b.step(1.1)
        elif op == "commander_on":
            b.commander_alive = True
        elif op == "commander_off":
            b.commander_alive = False
        elif op == "cooperative_fc" and not b.hooks:
            b.auto_fc()  # from now on PX4 takes every mode and arm request
        elif op in ("engage", "engage_arm"):
            b.feed(Engage(f"e{i}", PositionNed(0, 0, -5), arm=op == "engage_arm"))
        elif op == "setpoint":
            b.feed(SetSetpoint(f"s{i}", VelocityNed(1, 0, 0)))
        elif op == "release":
            b.feed(Release(f"r{i}"))
        elif op.startswith("mode_"):
            mode = {
                "mode_offboard": Px4Mode.OFFBOARD,
                "mode_loiter": Px4Mode.AUTO_LOITER,
                "mode_posctl": Px4Mode.POSCTL,
                "mode_land": Px4Mode.AUTO_LAND,
            }[op]
            b.set_mode(mode)
        elif op == "ack_reject":
            b.ack(MAV_CMD_DO_SET_MODE, AckResult.TEMPORARILY_REJECTED)
        elif op in ("armed", "disarmed"):
            b.set_armed(op == "armed")
        elif op in ("fc_off", "fc_on"):
            b.fc_alive = op == "fc_on"
        elif op in ("position_off", "position_on"):
            b.position_alive = op == "position_on"
    b.step(8.0)  # let every timer play out
    return b


def check_invariants(b: Bench) -> None:
    phase = Phase.IDLE
    stream_start: float | None = None
    engages: set[str] = set()
    for t, a in b.log:
        if isinstance(a, Notice) and a.kind is NoticeKind.TRANSITION:
            if a.phase is Phase.WARMUP:
                stream_start = t
            phase = a.phase
        elif isinstance(a, SendSetpoint):
            assert phase in STREAMING_PHASES | {Phase.RELEASING}, (t, phase)
        elif isinstance(a, RequestMode) and a.mode is Px4Mode.OFFBOARD:
            assert phase is Phase.ENGAGING
            assert stream_start is not None and t - stream_start >= b.settings.warmup_s
        elif isinstance(a, ArmDisarm) and a.arm:
            assert phase is Phase.ARMING  # the chaos never sends an operator Arm
        elif isinstance(a, Reply) and a.command_id.startswith("e"):
            assert a.command_id not in engages, "an engage answered twice"
            engages.add(a.command_id)
    # at the end nothing streams unless the phase says so
    if b.engine.phase not in STREAMING_PHASES | {Phase.RELEASING}:
        assert not b.engine.stream.running


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(OPS, min_size=5, max_size=40),
    loss_action=st.sampled_from(list(LossAction)),
)
def test_random_behaviour_keeps_the_safety_invariants(
    ops: list[str], loss_action: LossAction
) -> None:
    check_invariants(run(ops, loss_action))


def test_after_preemption_nothing_is_sent_until_a_new_engage() -> None:
    b = run(
        ["commander_on", "engage", "step_long", "mode_offboard", "step_short", "mode_posctl"]
        + ["step_long"] * 3,
        LossAction.HOLD,
    )
    preempted = [t for t, a in b.log if isinstance(a, Notice) and a.phase is Phase.PREEMPTED]
    assert preempted
    assert b.setpoint_times(since=preempted[0] + 1e-9) == []
    check_invariants(b)
