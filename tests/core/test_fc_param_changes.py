"""Parameters a GCS sets while the daemon flies: PX4 sends the new PARAM_VALUE to every
link (measured on PX4 SIH main, v1.17.0 and v1.16.2: on the onboard link 10-20 ms after
the GCS's PARAM_SET), and the daemon judges it again. Found by review: the new value was
folded silently, the state kept the old loss action's warning, and MAV_FWDEXTSP=0 or a
COM_OF_LOSS_T too short for the stream was first said when PX4 had already fallen back."""

from __future__ import annotations

import itertools

from offboardd.core.actions import NoticeKind
from offboardd.core.commands import Engage
from offboardd.core.events import (
    FcAutopilotVersion,
    FcCurrentMode,
    FcExtendedSysState,
    FcParamValue,
    LandedState,
)
from offboardd.core.modes import Px4Mode
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed
from offboardd.core.settings import EngineSettings

from .bench import FC, PX4_PARAMS, Bench

UP = PositionNed(0, 0, -5)


def _gcs_sets(b: Bench, name: str, value: int | float) -> list[str]:
    """PX4's broadcast of a GCS's PARAM_SET; the warnings it raised."""
    before = len(b.notices(NoticeKind.WARNING))
    b.feed(FcParamValue(name, value, **FC))
    return [n.message for n in b.notices(NoticeKind.WARNING)[before:]]


def _warnings(b: Bench) -> tuple[str, ...]:
    return b.engine.snapshot(b.now).warnings


def test_a_loss_action_changed_in_flight_replaces_the_old_warning() -> None:
    b = Bench()
    b.fc.params = {**PX4_PARAMS, "COM_OBL_RC_ACT": 0}
    b.engage(UP, arm=True)
    assert any("COM_OBL_RC_ACT=0" in w for w in _warnings(b))
    assert _gcs_sets(b, "COM_OBL_RC_ACT", 5) == []  # Hold surprises nobody
    snap = b.engine.snapshot(b.now)
    assert snap.com_obl_rc_act == "Hold"
    assert not any("COM_OBL_RC_ACT" in w for w in snap.warnings), snap.warnings
    said = _gcs_sets(b, "COM_OBL_RC_ACT", 7)  # Disarm: said at once, in flight
    assert any("cuts the motors" in w for w in said), said
    assert any("COM_OBL_RC_ACT=7" in w for w in _warnings(b))
    assert b.phase() is Phase.ACTIVE  # a warning, not a takeover of our own


def test_mav_fwdextsp_0_in_flight_is_said_at_once_and_withdrawn_when_set_back() -> None:
    b = Bench()
    b.engage(UP, arm=True)
    said = _gcs_sets(b, "MAV_FWDEXTSP", 0)
    assert len(said) == 1 and "MAV_FWDEXTSP=0" in said[0] and "loss action" in said[0]
    assert said[0] in _warnings(b)
    assert _gcs_sets(b, "MAV_FWDEXTSP", 0) == []  # PX4 answering a read: no change
    assert _gcs_sets(b, "MAV_FWDEXTSP", 1) == []
    assert not any("MAV_FWDEXTSP" in w for w in _warnings(b))
    # PX4 fell back meanwhile: the usual takeover, never fought
    b.set_mode(Px4Mode.AUTO_LOITER)
    assert b.phase() is Phase.PREEMPTED


def test_com_of_loss_t_lowered_in_flight_below_the_streams_margin_is_said() -> None:
    b = Bench()  # 20 Hz: a 0.05 s period needs COM_OF_LOSS_T >= 0.2 s
    b.engage(UP, arm=True)
    said = _gcs_sets(b, "COM_OF_LOSS_T", 0.1)
    assert len(said) == 1 and "COM_OF_LOSS_T" in said[0] and "0.025" in said[0], said
    assert b.engine.snapshot(b.now).com_of_loss_t_s == 0.1
    assert _gcs_sets(b, "COM_OF_LOSS_T", 0.5) == []
    assert not any("COM_OF_LOSS_T" in w for w in _warnings(b))


def test_mav_fwdextsp_0_during_the_warmup_never_lets_offboard_be_asked() -> None:
    """The gate passed at the engage; then a GCS turned forwarding off. PX4 takes none of
    the warm-up's setpoints, so asking for OFFBOARD would break the 1 s rule in PX4's
    eyes (and freezes SIH's lockstep, docs/px4.md)."""
    for name, value, reason in (("MAV_FWDEXTSP", 0, Reason.FWDEXTSP_DISABLED),
                                ("COM_OF_LOSS_T", 0.1, Reason.STREAM_TOO_SLOW),
                                ("COM_OBL_RC_ACT", 7, Reason.LOSS_ACTION_CUTS_MOTORS)):
        b = Bench()
        b.connect()
        b.commander_alive = True
        b.auto_fc()
        b.feed(Engage("e", UP, arm=True))
        b.step(0.5)
        assert b.phase() is Phase.WARMUP
        b.feed(FcParamValue(name, value, **FC))
        b.step(b.settings.warmup_s + 1.0)
        assert b.mode_requests() == [], name
        assert b.phase() is Phase.IDLE and b.reason() is reason, (name, b.reason())
        assert b.reply("e").reason is reason
        assert b.setpoint_times(since=b.now - 0.5) == []


def test_a_required_parameter_at_rest_is_warned_once_read() -> None:
    b = Bench()
    b.connect({**PX4_PARAMS, "MAV_FWDEXTSP": 0})
    assert any("MAV_FWDEXTSP=0" in w for w in _warnings(b))


def test_a_px4_failsafe_that_keeps_offboard_intended_is_named_with_the_loss_action() -> None:
    """Measured on PX4 SIH main: a geofence breach (GF_ACTION=2) switched to AUTO.LOITER
    with OFFBOARD still the intended mode; the daemon stopped, and 1.1 s after its last
    setpoint PX4 added its offboard-loss action (AUTO.RTL). A GCS's mode change replaces
    the intent and is not named so. The takeover may show first in a HEARTBEAT, which
    carries no intent: the CURRENT_MODE after it decides."""
    loiter, offboard = Px4Mode.AUTO_LOITER.custom_mode, Px4Mode.OFFBOARD.custom_mode
    for intended, by_heartbeat in itertools.product((offboard, loiter), (False, True)):
        b = Bench()
        b.engage(UP, arm=True)
        if by_heartbeat:
            b.set_mode(Px4Mode.AUTO_LOITER, current_mode=False)
            b.step(1.0)  # the next HEARTBEAT shows it
            assert b.phase() is Phase.PREEMPTED and b.notices(NoticeKind.FAILSAFE) == []
        taken_s = b.now
        for _ in range(2):  # said once
            b.feed(FcCurrentMode(loiter, intended, **FC))
        assert b.phase() is Phase.PREEMPTED and b.reason() is Reason.PREEMPTED_MODE
        said = [n.message for n in b.notices(NoticeKind.FAILSAFE)]
        if intended == offboard:
            assert len(said) == 1 and "PX4 failsafe" in said[0], said
            assert "offboard-loss action (Hold)" in said[0], said
        else:
            assert said == []
        b.step(3.0)
        assert b.setpoint_times(since=taken_s + 0.01) == [] and b.mode_requests(taken_s) == []


def test_an_auto_disarm_after_landing_in_offboard_is_named() -> None:
    """Measured on PX4 SIH main: descending in OFFBOARD to the ground, PX4 disarmed by
    itself (COM_DISARM_LAND) and stayed in OFFBOARD; the daemon stopped. In the air a
    disarm is said plainly."""
    for landed, named in ((LandedState.ON_GROUND, True), (LandedState.IN_AIR, False)):
        b = Bench()
        b.engage(UP, arm=True)
        b.feed(FcExtendedSysState(int(landed), **FC))
        b.set_armed(False)
        b.step(1.0)  # the next HEARTBEAT shows it
        assert b.phase() is Phase.PREEMPTED and b.reason() is Reason.PREEMPTED_DISARMED
        said = b.notices(NoticeKind.TRANSITION)[-1].message
        assert ("COM_DISARM_LAND" in said) is named, said
        taken_s = b.now
        b.step(2.0)
        assert b.setpoint_times(since=taken_s + 0.01) == [] and b.mode_requests(taken_s) == []


def test_an_engage_refused_on_the_gates_parameters_reads_them_again() -> None:
    """PX4's broadcast is best effort: on all three releases COM_OF_LOSS_T set back to 1.0
    a second after 0.15 never reached the onboard link, and every engage was refused. Now
    the refusal asks again, so the next engage is judged on what PX4 has. An engage the
    gate lets through asks nothing (on a busy link the reads would delay OFFBOARD)."""
    b = Bench()
    b.connect({**PX4_PARAMS, "COM_OF_LOSS_T": 0.15})  # what the daemon last heard
    b.commander_alive = True
    asked = len(b.param_requests())
    b.feed(Engage("e1", UP))
    assert b.reply("e1").reason is Reason.STREAM_TOO_SLOW
    b.step(0.05)
    (again,) = b.param_requests()[asked:]
    assert set(again.names) == {"COM_OF_LOSS_T", "COM_OBL_RC_ACT", "MAV_FWDEXTSP"}
    b.feed(FcParamValue("COM_OF_LOSS_T", 1.0, **FC))  # PX4's answer: it was set back
    b.feed(Engage("e2", UP))
    assert b.phase() is Phase.WARMUP
    b.step(0.5)
    assert len(b.param_requests()) == asked + 1


def test_a_loss_action_that_cuts_the_motors_refuses_the_engage_unless_allowed() -> None:
    """COM_OBL_RC_ACT Terminate (6) or Disarm (7): the daemon stops its stream on purpose
    at times (an escalation's end, command_loss_action = px4, the FC's silence), and PX4
    would then cut the motors in the air (review). Refused, coded, nothing streamed;
    allow_motor_cut_loss_action = true flies as asked (the warning stays)."""
    for action in (6, 7):
        b = Bench()
        b.fc.params = {**PX4_PARAMS, "COM_OBL_RC_ACT": action}
        b.connect()
        b.commander_alive = True
        b.feed(Engage("e", UP))
        reply = b.reply("e")
        assert not reply.ok and reply.reason is Reason.LOSS_ACTION_CUTS_MOTORS
        assert f"COM_OBL_RC_ACT={action}" in reply.message
        assert "allow_motor_cut_loss_action" in reply.message
        assert b.phase() is Phase.IDLE and b.setpoint_times() == []
    b = Bench(EngineSettings(allow_motor_cut_loss_action=True))
    b.fc.params = {**PX4_PARAMS, "COM_OBL_RC_ACT": 7}
    b.engage(UP, arm=True)
    assert b.phase() is Phase.ACTIVE
    assert any("COM_OBL_RC_ACT=7 (Disarm)" in w for w in _warnings(b))


def test_from_v1_17_nav_rcl_act_cutting_the_motors_refuses_the_engage_too() -> None:
    """From v1.17, COM_OBL_RC_ACT 0-2 without RC hands an offboard loss to NAV_RCL_ACT:
    Disarm (6) there cuts the motors as COM_OBL_RC_ACT=7 does (found by review)."""
    b = Bench()
    b.step(0.0)
    params = dict(PX4_PARAMS, COM_OBL_RC_ACT=0, NAV_RCL_ACT=6)
    for name, value in params.items():
        b.feed(FcParamValue(name, value, **FC))
    b.feed(FcAutopilotVersion(0x01110000, 0xFFFF, **FC))  # v1.17.0
    b.step(0.5)
    for name, value in params.items():  # (the limits' and rules' reads, answered)
        b.feed(FcParamValue(name, value, **FC))
    b.step(0.2)
    blocker = b.engine.checks.engage_blocker(0.05, motor_cut_allowed=False)
    assert blocker is not None and blocker[0] is Reason.LOSS_ACTION_CUTS_MOTORS
    assert "NAV_RCL_ACT=6 (Disarm)" in blocker[1]
    assert b.engine.checks.engage_blocker(0.05, motor_cut_allowed=True) is None
    b.commander_alive = True
    b.feed(Engage("e", UP))
    assert b.reply("e").reason is Reason.LOSS_ACTION_CUTS_MOTORS


def _px4_v1_17_without_nav_rcl_act(b: Bench) -> None:
    """COM_OBL_RC_ACT 0 read; AUTOPILOT_VERSION (v1.17) came, NAV_RCL_ACT asked, not yet."""
    b.step(0.0)
    for name, value in dict(PX4_PARAMS, COM_OBL_RC_ACT=0).items():
        b.feed(FcParamValue(name, value, **FC))
    b.feed(FcAutopilotVersion(0x01110000, 0xFFFF, **FC))
    b.step(0.2)


def test_offboard_waits_for_nav_rcl_act_behind_a_manual_loss_action() -> None:
    """Found by review: NAV_RCL_ACT is read after the version, so an engage could pass the
    gate before it was known and fly with a loss action that cuts the motors. The engage
    is taken (it comes during the warm-up), but OFFBOARD is asked for only once it is known:
    still unread at the warm-up's end, the warm-up starts again."""
    for nav_rcl_act, asked in ((6, False), (2, True)):  # Disarm: refused; Return: flies
        b = Bench()
        _px4_v1_17_without_nav_rcl_act(b)
        b.commander_alive = True
        b.feed(Engage("e", UP))
        b.step(b.settings.warmup_s + 0.1)
        assert b.phase() is Phase.WARMUP and b.mode_requests() == [] and b.no_reply("e")
        assert any("NAV_RCL_ACT not read yet" in n.message
                   for n in b.notices(NoticeKind.WARNING))
        b.feed(FcParamValue("NAV_RCL_ACT", nav_rcl_act, **FC))  # read during the warm-up
        b.step(b.settings.warmup_s)
        assert bool(b.mode_requests()) is asked, nav_rcl_act
        if not asked:
            assert b.reply("e").reason is Reason.LOSS_ACTION_CUTS_MOTORS


def test_an_fc_that_never_answers_for_nav_rcl_act_is_judged_on_what_came() -> None:
    # the reading given up (a warning said so): the gate judges on what it has
    b = Bench(EngineSettings(param_retries=1, param_retry_s=0.2))
    _px4_v1_17_without_nav_rcl_act(b)
    b.commander_alive = True
    b.feed(Engage("e", UP))
    b.step(b.settings.warmup_s + 0.1)
    assert any("NAV_RCL_ACT could not be read" in w for w in _warnings(b))
    assert b.mode_requests() and b.phase() is Phase.ENGAGING


def test_a_version_late_still_gets_nav_rcl_act_read() -> None:
    """Found by review: the rounds were counted from the FC's first appearance, so a
    version that came after them left NAV_RCL_ACT never asked for (yet warned as unread)
    and the gate judged without it. The release's parameters get attempts of their own."""
    b = Bench(EngineSettings(param_retries=1, param_retry_s=0.2))
    b.step(0.0)
    for name, value in dict(PX4_PARAMS, COM_OBL_RC_ACT=0).items():
        b.feed(FcParamValue(name, value, **FC))
    b.step(1.0)  # the version never came: the reading is given up
    assert not b.engine.checks.reading()
    b.feed(FcAutopilotVersion(0x01110000, 0xFFFF, **FC))  # v1.17.0, late
    b.step(0.1)
    asked = [n for r in b.param_requests() for n in r.names]
    assert "NAV_RCL_ACT" in asked and b.engine.checks.motor_cut_pending() == "NAV_RCL_ACT"
    b.feed(FcParamValue("NAV_RCL_ACT", 6, **FC))
    assert b.engine.checks.motor_cut_pending() is None
    blocker = b.engine.checks.engage_blocker(0.05, motor_cut_allowed=False)
    assert blocker is not None and blocker[0] is Reason.LOSS_ACTION_CUTS_MOTORS
