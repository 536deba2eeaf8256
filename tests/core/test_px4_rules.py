"""PX4's per-release rules (core.px4_rules) and FcChecks reading what each release has."""

from __future__ import annotations

from collections.abc import Sequence

from offboardd.core.actions import RequestParams, Target
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAutopilotVersion
from offboardd.core.fc_link import PX4_LIMIT_PARAMS, FcChecks
from offboardd.core.px4_rules import loss_action, loss_warnings, rules_for

V1_16_2 = (1 << 24) | (16 << 16) | (2 << 8) | 255
V1_17_0 = (1 << 24) | (17 << 16) | (0 << 8) | 255
V1_19_DEV = 0x01130000  # PX4 main of Aug 2026 reports v1.19.0-dev [SITL main]
FC = Target(1, 1)


def _requested(actions: Sequence[object]) -> tuple[str, ...]:
    return tuple(n for a in actions if isinstance(a, RequestParams) for n in a.names)


def test_rules_follow_the_release() -> None:
    assert rules_for(1, 14).rc_override_param == "COM_RC_OVERRIDE"
    assert not rules_for(1, 16).manual_loss_action_without_rc_uses_nav_rcl_act
    assert rules_for(1, 17).manual_loss_action_without_rc_uses_nav_rcl_act
    assert rules_for(1, 18).rc_override_param == "MAN_OVERRIDE_SPD"
    assert rules_for(1, 19) is rules_for(1, 18)  # main: the newest row
    assert not rules_for(1, 18).legacy_request_commands


def test_v1_17_offboard_loss_without_rc_is_nav_rcl_act_return() -> None:
    params = {"COM_OBL_RC_ACT": 0, "NAV_RCL_ACT": 2}
    assert loss_action(rules_for(1, 16), params) == "Position (without RC: descends until it lands)"
    assert loss_action(rules_for(1, 16), {"COM_OBL_RC_ACT": 1}) == "Altitude"  # (unmeasured)
    assert loss_action(rules_for(1, 17), params) == \
        "Position (without RC: Return, NAV_RCL_ACT=2)"
    assert loss_action(None, params) == \
        "Position (from PX4 v1.17 without RC: NAV_RCL_ACT's action)"
    assert loss_action(rules_for(1, 18), {"COM_OBL_RC_ACT": 5}) == "Hold"
    (warning,) = loss_warnings(rules_for(1, 18), params)
    assert warning.startswith("COM_OBL_RC_ACT=0 (Position): without RC, PX4 >= v1.18 takes "
                              "NAV_RCL_ACT=2 (Return)")
    assert "descends until it lands" in loss_warnings(rules_for(1, 16), params)[0]
    assert loss_warnings(rules_for(1, 18), {"COM_OBL_RC_ACT": 4}) == []
    assert any("cuts the motors" in w for w in
               loss_warnings(rules_for(1, 17), {"COM_OBL_RC_ACT": 1, "NAV_RCL_ACT": 6}))


def test_nav_rcl_act_without_a_failsafe_leaves_a_dead_companions_vehicle_hovering() -> None:
    """Measured on PX4 v1.17.0 and main SIH (helper review, session 25): with
    COM_OBL_RC_ACT 0 and no RC, NAV_RCL_ACT 0 (and 7 on main) takes no failsafe on offboard
    loss: PX4 stays in OFFBOARD, armed, holding (2 m for 8 s). A daemon that dies leaves
    the vehicle hovering until its battery fails; nothing said so."""
    for rules, rcl in ((rules_for(1, 17), 0), (rules_for(1, 18), 0), (rules_for(1, 18), 7)):
        params = {"COM_OBL_RC_ACT": 0, "NAV_RCL_ACT": rcl}
        assert "stays in OFFBOARD" in (loss_action(rules, params) or "")
        warnings = loss_warnings(rules, params)
        assert any("no failsafe" in w and "stays in OFFBOARD" in w for w in warnings), warnings
    assert not any("no failsafe" in w for w in
                   loss_warnings(rules_for(1, 18), {"COM_OBL_RC_ACT": 0, "NAV_RCL_ACT": 1}))


def test_fc_checks_read_the_parameters_the_release_has() -> None:
    checks = FcChecks(retry_s=1.0, retries=3, current_mode_interval_s=0.05)
    checks.start(0.0)
    first, _ = checks.poll(0.0, FC)
    # before the version: only what every release has
    assert _requested(first) == ("COM_OF_LOSS_T", "COM_OBL_RC_ACT", "MAV_FWDEXTSP")
    for name, value in {"COM_OF_LOSS_T": 1.0, "COM_OBL_RC_ACT": 0, "MAV_FWDEXTSP": 1}.items():
        assert checks.on_param(name, value) == []
    assert checks.on_version(FcAutopilotVersion(V1_19_DEV, 0xFFFF)) == []
    assert checks.deadline() <= 0.0  # the release's own parameters are due at once
    again, _ = checks.poll(0.1, FC)
    assert _requested(again) == ("COM_RCL_EXCEPT", "MAN_OVERRIDE_SPD", "NAV_RCL_ACT")
    assert checks.on_param("COM_RCL_EXCEPT", 0) == []
    assert checks.on_param("MAN_OVERRIDE_SPD", 1.0) == []
    warnings = checks.on_param("NAV_RCL_ACT", 2)
    assert len(warnings) == 1 and "NAV_RCL_ACT=2 (Return)" in warnings[0]
    assert checks.loss_action_name() == "Position (without RC: Return, NAV_RCL_ACT=2)"
    assert checks.deadline() == float("inf")


def test_fc_checks_on_v1_16_ask_for_com_rc_override() -> None:
    checks = FcChecks(retry_s=1.0, retries=3, current_mode_interval_s=0.05)
    checks.start(0.0)
    checks.poll(0.0, FC)
    checks.on_version(FcAutopilotVersion(V1_16_2, 0xFFFF))
    again, _ = checks.poll(0.0, FC)
    assert "COM_RC_OVERRIDE" in _requested(again) and "NAV_RCL_ACT" not in _requested(again)


def test_fc_checks_without_a_version_still_warn_once_retries_run_out() -> None:
    checks = FcChecks(retry_s=1.0, retries=1, current_mode_interval_s=0.05)
    checks.start(0.0)
    for name, value in {"COM_OF_LOSS_T": 1.0, "COM_OBL_RC_ACT": 0, "MAV_FWDEXTSP": 1}.items():
        checks.on_param(name, value)
    warnings: list[str] = []
    for t in (0.0, 1.0, 2.0, 3.0):
        warnings += checks.poll(t, FC)[1]
    assert "the FC never answered the AUTOPILOT_VERSION request" in warnings
    assert any("from PX4 v1.17" in w or "Position" in w for w in warnings)


def _read_all(checks: FcChecks, now: float) -> None:
    """Answer the required and the release's parameters (PX4 main, Hold on loss)."""
    checks.start(now)
    checks.poll(now, FC)
    for name, value in {"COM_OF_LOSS_T": 1.0, "COM_OBL_RC_ACT": 5, "MAV_FWDEXTSP": 1}.items():
        checks.on_param(name, value)
    checks.on_version(FcAutopilotVersion(V1_19_DEV, 0xFFFF))
    checks.poll(now, FC)
    for name, value in {"COM_RCL_EXCEPT": 0, "MAN_OVERRIDE_SPD": 1.0, "NAV_RCL_ACT": 2}.items():
        checks.on_param(name, value)


def test_px4_limits_are_read_after_everything_the_engine_needs() -> None:
    """PX4 flies a position step at its own MPC_XY_VEL_MAX and tilts to MPC_TILTMAX_AIR,
    not at the envelope's limits (measured: a 30 m step at 8.7-9.0 m/s and 45°; docs/
    safety-envelope.md). The four limits are asked for only once the parameters the
    engine needs are in (on a 57,600-baud radio they share the link's command budget with
    them and the stream plan), and an envelope tighter than PX4's says so."""
    tight = EnvelopeSettings(max_horizontal_speed_m_s=5.0, max_tilt_deg=25.0)
    checks = FcChecks(retry_s=1.0, retries=3, current_mode_interval_s=0.05, envelope=tight)
    checks.start(0.0)
    first, _ = checks.poll(0.0, FC)
    assert not set(PX4_LIMIT_PARAMS) & set(_requested(first))
    _read_all(checks, 0.0)
    assert checks.deadline() <= 0.0  # due at once
    limits, _ = checks.poll(0.05, FC)
    assert _requested(limits) == tuple(PX4_LIMIT_PARAMS)
    (speed,) = checks.on_param("MPC_XY_VEL_MAX", 12.0)
    assert "MPC_XY_VEL_MAX=12 m/s is above [envelope] max_horizontal_speed_m_s=5" in speed
    assert checks.on_param("MPC_Z_VEL_MAX_UP", 3.0) == []
    assert checks.on_param("MPC_Z_VEL_MAX_DN", 1.5) == []
    (tilt,) = checks.on_param("MPC_TILTMAX_AIR", 45.0)
    assert "MPC_TILTMAX_AIR=45 ° is above [envelope] max_tilt_deg=25" in tilt
    assert checks.on_param("RTL_RETURN_ALT", 60.0) == []  # no max_altitude_m: not judged
    assert checks.settled() and checks.deadline() == float("inf")
    assert checks.on_param("MPC_XY_VEL_MAX", 12.0) == []  # PX4's echo: said once
    assert checks.on_param("MPC_XY_VEL_MAX", 4.0) == []  # a GCS set it right
    assert len(checks.on_param("MPC_XY_VEL_MAX", 15.0)) == 1  # and wrong again


def test_px4_limits_at_the_envelopes_defaults_say_nothing() -> None:
    checks = FcChecks(1.0, 3, 0.05, envelope=EnvelopeSettings())
    _read_all(checks, 0.0)
    checks.poll(0.0, FC)
    for name, value in {"MPC_XY_VEL_MAX": 12.0, "MPC_Z_VEL_MAX_UP": 3.0,
                        "MPC_Z_VEL_MAX_DN": 1.5, "MPC_TILTMAX_AIR": 45.0,
                        "RTL_RETURN_ALT": 60.0}.items():
        assert checks.on_param(name, value) == []


def test_a_return_altitude_above_the_envelopes_ceiling_is_named() -> None:
    """PX4's Return climbs to RTL_RETURN_ALT above home first (60 m by default, more than
    RTL_MIN_DIST out; tests/px4/test_px4_rtl.py), and it is the loss action PX4 takes
    without RC: an envelope with a lower ceiling says so."""
    checks = FcChecks(1.0, 3, 0.05, envelope=EnvelopeSettings(max_altitude_m=30.0))
    _read_all(checks, 0.0)
    checks.poll(0.0, FC)
    (text,) = checks.on_param("RTL_RETURN_ALT", 60.0)
    assert text.startswith("RTL_RETURN_ALT=60 m is above [envelope] max_altitude_m=30: a "
                           "Return")
    assert "set RTL_RETURN_ALT to at most 30" in text
    assert checks.on_param("RTL_RETURN_ALT", 25.0) == []  # a GCS set it within


def test_px4_limits_never_answered_are_asked_twice_and_delay_nothing() -> None:
    checks = FcChecks(1.0, 3, 0.05, envelope=EnvelopeSettings(max_tilt_deg=20.0))
    _read_all(checks, 0.0)
    assert checks.engage_blocker(0.05, motor_cut_allowed=False) is None
    asked = [_requested(checks.poll(t, FC)[0]) for t in (0.0, 0.5, 1.0, 2.0, 3.0)]
    assert asked == [tuple(PX4_LIMIT_PARAMS), (), tuple(PX4_LIMIT_PARAMS), (), ()]
    assert checks.settled()
    checks.start(10.0)  # the FC came back: everything asked again, the limits last
    assert not set(PX4_LIMIT_PARAMS) & set(_requested(checks.poll(10.0, FC)[0]))


def test_without_an_envelope_px4_limits_are_not_read() -> None:
    checks = FcChecks(1.0, 3, 0.05)
    _read_all(checks, 0.0)
    assert checks.poll(0.0, FC) == ([], []) and checks.settled()
