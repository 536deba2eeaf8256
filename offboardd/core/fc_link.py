"""Connect checks: what offboardd must learn from a (re)appearing FC before engaging.

On every appearance of the FC (first heartbeat, return after a loss, reboot) this asks
for AUTOPILOT_VERSION, for CURRENT_MODE to be streamed (fast mode reports, §4) and for
the parameters that decide whether offboard can work at all (§3): COM_OF_LOSS_T,
COM_OBL_RC_ACT, MAV_FWDEXTSP. Once the version is known it reads the parameters that only
surprise users, as that release names them (core.px4_rules: COM_RC_OVERRIDE or
MAN_OVERRIDE_SPD, NAV_RCL_ACT from v1.17), and warns about what PX4 will do on offboard
loss. Requests are retried a bounded number of times. When all of that is in (and only
then: on a 57,600-baud radio those reads share the link's command budget with the stream
plan), it reads PX4's own flight limits once, to warn where they are looser than the
envelope. A parameter a GCS sets later is judged again when PX4 sends its new
PARAM_VALUE to every link (`judgement` holds what is still true); that broadcast is best
effort, so an engage refused on them reads them again. Pure: returns actions and
warning texts, decides nothing about phases.
"""

from __future__ import annotations

import math

from offboardd.core.actions import (
    AUTOPILOT_VERSION_ID,
    CURRENT_MODE_ID,
    FcAction,
    RequestMessage,
    RequestParams,
    SetMessageInterval,
    Target,
)
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcAutopilotVersion
from offboardd.core.px4_rules import (
    MIN_SUPPORTED,
    Px4Rules,
    format_version,
    loss_action,
    loss_warnings,
    motor_cut,
    motor_cut_unread,
    override_warning,
    px4_version,
    rules_for,
)
from offboardd.core.reasons import Reason

REQUIRED_PARAMS = ("COM_OF_LOSS_T", "COM_OBL_RC_ACT", "MAV_FWDEXTSP")
# Every optional parameter some release has (px4_rules says which one a release reads).
OPTIONAL_PARAMS = ("COM_RCL_EXCEPT", "COM_RC_OVERRIDE", "MAN_OVERRIDE_SPD", "NAV_RCL_ACT")
# PX4's own limits for what it flies to a position or velocity step, and the envelope
# setting that bounds what offboardd sends: PX4 flies a 30 m position step at up to
# MPC_XY_VEL_MAX and MPC_TILTMAX_AIR whatever the envelope says (measured on PX4 SIH
# main, v1.17.0, v1.16.2: 8.7-9.0 m/s, 45 deg; docs/safety-envelope.md). And a Return
# (`rtl`, or PX4's own loss action: NAV_RCL_ACT's Return without RC) climbs first, more
# than RTL_MIN_DIST from home to RTL_RETURN_ALT above it (60 m by default; measured on
# main: tests/px4/test_px4_rtl.py). Read for a warning only, after the reads the engine
# needs; never waited for. Name -> (envelope setting, unit, what PX4 does with it).
_STEP = ("PX4 flies a position or velocity step to its own limit, not the envelope's",
         "or move with goto/path")
PX4_LIMIT_PARAMS: dict[str, tuple[str, str, tuple[str, str]]] = {
    "MPC_XY_VEL_MAX": ("max_horizontal_speed_m_s", "m/s", _STEP),
    "MPC_Z_VEL_MAX_UP": ("max_up_speed_m_s", "m/s", _STEP),
    "MPC_Z_VEL_MAX_DN": ("max_down_speed_m_s", "m/s", _STEP),
    "MPC_TILTMAX_AIR": ("max_tilt_deg", "°", _STEP),
    "RTL_RETURN_ALT": ("max_altitude_m", "m", (
        "a Return (`rtl`, or PX4's loss action) more than RTL_MIN_DIST from home climbs to "
        "it above home first", "or set RTL_CONE_ANG to keep it lower near home")),
}
_LIMIT_ASKS = 2  # a lost request is asked again once; then the warning is simply not given
# The stream must beat PX4's loss timeout by this factor, so that a few late or lost
# setpoints never trigger PX4's offboard-loss failsafe.
LOSS_TIMEOUT_MARGIN = 4.0
# MAV_PROTOCOL_CAPABILITY_SET_POSITION_TARGET_LOCAL_NED (common.xml)
_CAP_SET_POSITION_TARGET_LOCAL_NED = 128


class FcChecks:
    def __init__(self, retry_s: float, retries: int, current_mode_interval_s: float, *,
                 envelope: EnvelopeSettings | None = None,
                 stream_period_s: float | None = None) -> None:
        self.retry_s = retry_s
        # None: the engage gate's verdict (engage_blocker) is not part of the judgement
        self.stream_period_s = stream_period_s
        self.judgement: tuple[str, ...] = ()  # the warnings about the parameters, as of now
        self.retries = retries
        self.current_mode_interval_us = round(current_mode_interval_s * 1e6)
        self.params: dict[str, int | float] = {}
        self.version: FcAutopilotVersion | None = None
        self.envelope = envelope  # None: PX4's limits are not read
        self.px4_limits: dict[str, float] = {}  # PX4_LIMIT_PARAMS read so far
        self._limit_asks = 0
        self._rounds = 0
        self._next_s: float | None = None
        self._last_poll_s = -math.inf
        self._reread = False  # the gate's parameters to be read again at the next poll
        self._warned = False

    def start(self, now: float) -> None:
        """The FC (re)appeared: forget what we read and ask again."""
        self.params.clear()
        self.version = None
        self.px4_limits.clear()
        self._limit_asks = 0
        self._rounds = 0
        self._next_s = now
        self._warned = False
        self.judgement = ()

    def stop(self) -> None:
        self._next_s = None

    def deadline(self) -> float:
        return math.inf if self._next_s is None else self._next_s

    @property
    def rules(self) -> Px4Rules | None:
        """The release's rules once AUTOPILOT_VERSION came (a non-PX4 version: v1.14's)."""
        if self.version is None:
            return None
        major, minor, _, _ = px4_version(self.version.flight_sw_version)
        return rules_for(major, minor)

    def wanted(self) -> tuple[str, ...]:
        """The parameters to read: the optional ones only once the version names them."""
        rules = self.rules
        return REQUIRED_PARAMS + (() if rules is None else rules.optional_params())

    def missing(self) -> tuple[str, ...]:
        return tuple(n for n in self.wanted() if n not in self.params)

    def reread_gate(self) -> None:
        """Read the gate's parameters again (an engage refused on them). PX4's broadcast of
        a GCS's change is best effort: on PX4 SIH main, v1.17.0 and v1.16.2 COM_OF_LOSS_T
        set back to 1.0 a second after 0.15 never reached the onboard link, in every run."""
        self._reread = self._warned

    def poll(self, now: float, target: Target) -> tuple[list[FcAction], list[str]]:
        """Requests due now, and warnings (e.g. a parameter that never came)."""
        self._last_poll_s = now
        actions, warnings = self._poll(now, target)
        if self._reread:
            self._reread = False
            actions.append(RequestParams(target, REQUIRED_PARAMS))
        return actions, warnings

    def _poll(self, now: float, target: Target) -> tuple[list[FcAction], list[str]]:
        if self._next_s is None or now < self._next_s:
            return [], []
        if not self.missing() and self.version is not None:
            return self._ask_limits(now, target), []
        actions: list[FcAction] = []
        warnings: list[str] = []
        missing = self.missing()
        if self._rounds > self.retries:
            self._next_s = None
            for name in missing:
                warnings.append(f"parameter {name} could not be read from the FC")
            if self.version is None:
                warnings.append("the FC never answered the AUTOPILOT_VERSION request")
            return actions, warnings + self._judge_once()
        if self._rounds == 0:
            actions.append(
                SetMessageInterval(target, CURRENT_MODE_ID, self.current_mode_interval_us)
            )
        if missing:
            actions.append(RequestParams(target, missing))
        if self.version is None:
            actions.append(RequestMessage(target, AUTOPILOT_VERSION_ID))
        self._rounds += 1
        self._next_s = now + self.retry_s if (missing or self.version is None) else None
        return actions, warnings

    def on_version(self, event: FcAutopilotVersion) -> list[str]:
        """Record the version; the release's own parameters are asked for at once."""
        first, self.version = self.version is None, event
        out = []
        if not event.capabilities & _CAP_SET_POSITION_TARGET_LOCAL_NED:
            out.append("the FC does not announce SET_POSITION_TARGET_LOCAL_NED support")
        major, minor, _, _ = px4_version(event.flight_sw_version)
        if (major, minor) != (0, 0) and (major, minor) < MIN_SUPPORTED:
            out.append(f"PX4 {format_version(event.flight_sw_version)} is older than "
                       f"v{MIN_SUPPORTED[0]}.{MIN_SUPPORTED[1]}, which offboardd needs")
        if first and self.missing():  # the release's parameters: due now, attempts their own
            self._rounds = min(self._rounds, 1)  # (a late version once left them none: review)
            self._next_s = self._last_poll_s
        return out + self._after_update()

    def _ask_limits(self, now: float, target: Target) -> list[FcAction]:
        """PX4's limits not read yet, at most `_LIMIT_ASKS` times, `retry_s` apart."""
        pending = self._limits_pending()
        if not pending or self._limit_asks >= _LIMIT_ASKS:
            self._next_s = None
            return []
        self._limit_asks += 1
        self._next_s = now + self.retry_s
        return [RequestParams(target, pending)]

    def _limits_pending(self) -> tuple[str, ...]:
        if self.envelope is None:
            return ()
        return tuple(n for n in PX4_LIMIT_PARAMS if n not in self.px4_limits)

    def settled(self) -> bool:
        """Nothing more to ask: everything read, or the asking given up."""
        return self._next_s is None

    def on_param(self, name: str, value: int | float) -> list[str]:
        """Record a parameter; once all are known, the settings users trip over."""
        if name in PX4_LIMIT_PARAMS:
            return self._on_limit(name, value)
        if name not in REQUIRED_PARAMS + OPTIONAL_PARAMS:
            return []
        if not math.isfinite(value) or (name == "COM_OF_LOSS_T" and not 0 <= value <= 60):
            # A corrupt or hostile PARAM_VALUE must not become a setting we act on (or a
            # NaN that every later int() of it raises on): what we knew stands.
            return [f"FC sent {name} = {value}, not a value PX4 allows: ignored"]
        changed = name in self.params and self.params[name] != value
        self.params[name] = value
        if changed and self._warned:
            return self._rejudge()
        return self._after_update()

    def _rejudge(self) -> list[str]:
        """A GCS changed a parameter after the first judgement (in flight too): judge
        again. Returns only the warnings that are new; `judgement` drops what no longer
        holds (a loss action fixed, MAV_FWDEXTSP set back to 1)."""
        before, self.judgement = self.judgement, tuple(self._surprises())
        return [w for w in self.judgement if w not in before]

    def _on_limit(self, name: str, value: float) -> list[str]:
        """A PX4 limit looser than the envelope's: when first read, and when PX4 says it
        changed (it sends PARAM_VALUE to every link when someone sets a parameter)."""
        if (self.envelope is None or not math.isfinite(value)
                or self.px4_limits.get(name) == value):
            return []
        self.px4_limits[name] = float(value)
        if not self._limits_pending() and not self.missing() and self.version is not None:
            self._next_s = None
        setting, unit, (what, instead) = PX4_LIMIT_PARAMS[name]
        ours = getattr(self.envelope, setting)  # None: that bound is off
        if ours is None or value <= float(ours) + 1e-6:
            return []
        return [f"{name}={value:g} {unit} is above [envelope] {setting}={float(ours):g}: "
                f"{what}; set {name} to at most {float(ours):g}, {instead}"]

    def _after_update(self) -> list[str]:
        if self.missing() or self.version is None:
            return []
        # PX4's limits next, at once (the next poll), if there are any to read
        self._next_s = self._last_poll_s if self._limits_pending() else None
        return self._judge_once()

    def _judge_once(self) -> list[str]:
        if self._warned or any(n not in self.params for n in REQUIRED_PARAMS):
            return []
        self._warned = True
        self.judgement = tuple(self._surprises())
        return list(self.judgement)

    def _surprises(self) -> list[str]:
        rules, out = self.rules, []
        override = None if rules is None else override_warning(rules, self.params)
        if override is not None:
            out.append(override)
        if int(self.params.get("COM_RCL_EXCEPT", 0)) & 4:
            out.append("COM_RCL_EXCEPT has bit 2 set: RC loss is ignored while in OFFBOARD")
        if self.stream_period_s is not None:  # (a motor-cutting loss action: loss_warnings)
            blocker = self.engage_blocker(self.stream_period_s, motor_cut_allowed=True)
            if blocker is not None:
                out.append(blocker[1])
        return out + loss_warnings(rules, self.params)

    # -- gate ------------------------------------------------------------------------------

    @property
    def loss_timeout_s(self) -> float | None:
        value = self.params.get("COM_OF_LOSS_T")
        return None if value is None else float(value)

    def loss_action_name(self) -> str | None:
        """What PX4 does on offboard loss, for this release and its parameters."""
        return loss_action(self.rules, self.params)

    def reading(self) -> bool:
        """Still asking for (or waiting on an answer to) what `wanted` names."""
        return self._next_s is not None and (self.version is None or bool(self.missing()))

    def motor_cut_pending(self) -> str | None:
        """What the motor-cut judgement (engage_blocker) still waits for while it is being
        read: the version, then NAV_RCL_ACT, asked for once the version came. OFFBOARD
        waits for it (the warm-up restarts); given up, the gate judges on what came."""
        return motor_cut_unread(self.rules, self.params) if self.reading() else None

    def engage_blocker(self, stream_period_s: float, *, motor_cut_allowed: bool
                       ) -> tuple[Reason, str] | None:
        """Why offboard cannot work with this FC, or None. `motor_cut_allowed`: the config
        lets it fly with a loss action that cuts the motors (EngineSettings)."""
        missing = [n for n in REQUIRED_PARAMS if n not in self.params]
        if missing:
            return (
                Reason.FC_PARAMS_UNKNOWN,
                f"FC parameters not read yet: {', '.join(missing)}",
            )
        if int(self.params["MAV_FWDEXTSP"]) == 0:
            # Set to 0 in OFFBOARD, PX4 falls back to its loss action COM_OF_LOSS_T after
            # the last setpoint it took (PX4 SIH main, v1.17.0, v1.16.2: 1.0-1.2 s).
            return (
                Reason.FWDEXTSP_DISABLED,
                "MAV_FWDEXTSP=0: PX4 ignores every setpoint from this link (in OFFBOARD its "
                "offboard-loss action follows within COM_OF_LOSS_T); set it to 1",
            )
        loss_t = float(self.params["COM_OF_LOSS_T"])
        if stream_period_s > loss_t / LOSS_TIMEOUT_MARGIN:
            return (
                Reason.STREAM_TOO_SLOW,
                f"stream period {stream_period_s:.3f} s exceeds COM_OF_LOSS_T/"
                f"{LOSS_TIMEOUT_MARGIN:g} = {loss_t / LOSS_TIMEOUT_MARGIN:.3f} s (a few "
                "late setpoints would trigger PX4's offboard-loss action): raise "
                "setpoint_rate_hz or COM_OF_LOSS_T",
            )
        cut = motor_cut(self.rules, self.params)
        if cut is not None and not motor_cut_allowed:
            return (
                Reason.LOSS_ACTION_CUTS_MOTORS,
                f"{cut}: PX4 would cut the motors in the air whenever the stream stops (the "
                "daemon stops it on purpose after a failed hand-over, on the px4 loss action, "
                "on the FC's silence); set COM_OBL_RC_ACT=5 (Hold) or 4 (Land), or "
                "allow_motor_cut_loss_action = true",
            )
        return None
