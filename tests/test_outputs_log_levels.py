"""What the journal shows at `-p warning` (docs/deploy.md): every moment a field engineer
must see. Before (review, 2026-11-29), the FC lost while flying, the engine falling to
failsafe and PX4's own critical texts were all `info`, and a restart in flight left the
log silent about the armed vehicle PX4 was flying home."""

from __future__ import annotations

import structlog

from offboardd.core.actions import Notice, NoticeKind
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase
from offboardd.outputs import Outputs, log_level
from offboardd.systemd import SystemdNotifier
from tests.core.bench import Bench


def test_what_a_field_engineer_must_see_is_logged_at_warning_or_above() -> None:
    def level(kind: NoticeKind, phase: Phase, severity: int | None = None) -> str:
        return log_level(Notice(kind, "m", phase, severity=severity))

    assert level(NoticeKind.FC_LINK, Phase.ACTIVE) == "warning"  # FC lost while flown
    assert level(NoticeKind.FC_LINK, Phase.RELEASING) == "warning"
    assert level(NoticeKind.FC_LINK, Phase.IDLE) == "info"  # FC up, or lost on the bench
    assert level(NoticeKind.TRANSITION, Phase.FAILSAFE) == "warning"
    assert level(NoticeKind.TRANSITION, Phase.PREEMPTED) == "warning"  # a takeover
    assert level(NoticeKind.TRANSITION, Phase.ACTIVE) == "info"
    assert level(NoticeKind.FC_STATUSTEXT, Phase.IDLE, severity=2) == "error"  # critical
    assert level(NoticeKind.FC_STATUSTEXT, Phase.IDLE, severity=4) == "warning"
    assert level(NoticeKind.FC_STATUSTEXT, Phase.IDLE, severity=6) == "info"
    assert level(NoticeKind.FAILSAFE, Phase.HOLDING) == "warning"
    assert level(NoticeKind.WARNING, Phase.IDLE) == "warning"
    assert level(NoticeKind.MOTION_DONE, Phase.ACTIVE) == "info"


def test_a_daemon_that_finds_the_vehicle_armed_says_so_and_leaves_it_alone() -> None:
    b = Bench()
    b.fc.armed, b.fc.custom_mode = True, Px4Mode.AUTO_RTL.custom_mode  # as after our restart
    b.connect()
    warnings = [n.message for n in b.notices(NoticeKind.WARNING)]
    assert "FC found armed in AUTO.RTL: left to PX4 and its pilot; only a new engage takes it" \
        in warnings
    assert b.phase() is Phase.IDLE and not b.engine.stream.running


def test_the_vehicle_is_followed_in_the_log_whoever_flies_it() -> None:
    outputs = Outputs(None, SystemdNotifier(None), lambda: None)
    state = {"fc_link": "up", "fc_system_id": 1, "fc_version": "v1.16.2", "phase": "idle",
             "reason": None, "fc_mode": "AUTO.RTL", "armed": True, "landed_state": "in_air"}
    with structlog.testing.capture_logs() as logs:
        outputs.state(state, 1.0)
        outputs.state(state, 2.0)  # unchanged: not again
        outputs.state({**state, "landed_state": "on_ground", "armed": False}, 3.0)
    followed = [(e["mode"], e["armed"], e["landed_state"]) for e in logs
                if e["event"] == "fc_state"]
    assert followed == [("AUTO.RTL", True, "in_air"), ("AUTO.RTL", False, "on_ground")]


def _lost_and_back(rebooted: bool) -> list[str]:
    b = Bench()
    b.connect()
    b.step(2.0)
    b.fc_alive = False
    b.step(6.0)  # lost: no HEARTBEAT for 3 s
    assert not b.engine.fc_up
    if rebooted:
        b.fc.boot_ms = 4_000  # its uptime restarted while unheard
    b.fc_alive = True
    b.step(3.0)
    assert b.engine.fc_up
    return [n.message for n in b.notices(NoticeKind.WARNING) if "rebooted" in n.message]


def test_an_fc_back_from_a_loss_with_its_uptime_restarted_is_said_to_have_rebooted() -> None:
    """A reboot long enough to lose the FC read as a link loss, then "FC up" (review)."""
    assert _lost_and_back(rebooted=True) == [
        "the FC rebooted while unheard (up 5 s now): a reboot, not only a link loss"]
    assert _lost_and_back(rebooted=False) == []  # its uptime ran on: a link loss only
