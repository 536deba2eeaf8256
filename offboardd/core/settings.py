"""EngineSettings: the offboard engine's tunables, frozen and validated on construction.

An invalid value raises `ConfigError` naming the field, its value and the allowed range
(config.py maps TOML keys onto these field names). Pure; no file reading here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from enum import StrEnum

from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.fc_link import LOSS_TIMEOUT_MARGIN
from offboardd.core.modes import Px4Mode
from offboardd.core.motion_settings import MotionSettings
from offboardd.core.stream_plan import PlanRow
from offboardd.errors import ConfigError

# PX4's docs ask for >= 1 s of setpoints before OFFBOARD; PX4's code does not enforce it
# (px4-offboard.md §1), so we do, and refuse to be configured below it.
MIN_WARMUP_S = 1.0
# MAV_COMP_ID_ONBOARD_COMPUTER (common.xml), the companion convention (§5).
DEFAULT_COMPANION_COMPONENT_ID = 191
MAV_COMP_ID_AUTOPILOT1 = 1  # the flight controller's own component id


class LossAction(StrEnum):
    """What to do when the commander lease lapsed and `hold_s` is over."""

    HOLD = "hold"
    LAND = "land"
    RTL = "rtl"
    PX4 = "px4"  # stop streaming and let PX4's COM_OBL_RC_ACT act (after COM_OF_LOSS_T)


class ReleaseMode(StrEnum):
    """The mode a `release` command asks the FC for."""

    HOLD = "hold"
    LAND = "land"
    RTL = "rtl"


# Mode chains tried in order when the FC refuses one: hold -> land -> (stop streaming).
ESCALATION: dict[str, tuple[Px4Mode, ...]] = {
    "hold": (Px4Mode.AUTO_LOITER, Px4Mode.AUTO_LAND),
    "land": (Px4Mode.AUTO_LAND,),
    "rtl": (Px4Mode.AUTO_RTL, Px4Mode.AUTO_LOITER, Px4Mode.AUTO_LAND),
}


@dataclass(frozen=True)
class EngineSettings:
    setpoint_rate_hz: float = 20.0
    warmup_s: float = 1.0
    command_timeout_s: float = 1.0  # the commander lease, mirroring COM_OF_LOSS_T
    hold_s: float = 5.0
    command_loss_action: LossAction = LossAction.HOLD
    release_mode: ReleaseMode = ReleaseMode.HOLD
    # Engage when PX4's offboard-loss action (COM_OBL_RC_ACT) is Terminate or Disarm: the
    # daemon stops its stream on purpose at times (an escalation's end, the px4 loss
    # action, the FC's silence), and each such stop would then cut the motors in the air.
    allow_motor_cut_loss_action: bool = False
    # HEARTBEAT is 1 Hz and CURRENT_MODE may be missing, so a mode can take > 1 s to show.
    mode_confirm_timeout_s: float = 1.5
    mode_retries: int = 2  # extra attempts after the first
    # the armed flag in HEARTBEAT lags the ACK by ~0.55 s and HEARTBEAT is 1 Hz (§4)
    arm_confirm_timeout_s: float = 2.0
    retry_backoff_s: float = 0.25
    fc_timeout_s: float = 3.0
    estimate_timeout_s: float = 0.5  # LOCAL_POSITION_NED is 30 Hz on PX4's onboard link
    companion_component_id: int = DEFAULT_COMPANION_COMPONENT_ID
    param_retry_s: float = 1.0
    param_retries: int = 5
    current_mode_interval_s: float = 0.05
    # the safety envelope (config file section [envelope], not [engine])
    envelope: EnvelopeSettings = field(default_factory=EnvelopeSettings)
    # the motions the daemon plans (config file section [motion])
    motion: MotionSettings = field(default_factory=MotionSettings)
    # the stream plan's rows (config.py builds them from [mavlink.streams] and [mqtt])
    stream_plan: tuple[PlanRow, ...] = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            number = isinstance(value, float | int) and not isinstance(value, bool)
            if number and not math.isfinite(value):
                raise ConfigError(f"{f.name} must be finite, got {value!r}")
        # its type first: the rule below compares it ("20" was said as "'<' not supported
        # between float and str", without the key; true was told to be above 2 Hz)
        _number("setpoint_rate_hz", self.setpoint_rate_hz)
        # one rule, one message either side (a range of [1, 250] was said above 250 Hz)
        if not PX4_MIN_RATE_HZ < self.setpoint_rate_hz <= MAX_SETPOINT_RATE_HZ:
            raise ConfigError(
                f"setpoint_rate_hz must be above {PX4_MIN_RATE_HZ:g} Hz (PX4 needs more) and "
                f"at most {MAX_SETPOINT_RATE_HZ:g} Hz, got {self.setpoint_rate_hz!r}; with "
                f"PX4's default COM_OF_LOSS_T of 1 s an engage needs "
                f"{LOSS_TIMEOUT_MARGIN / DEFAULT_COM_OF_LOSS_T_S:g} Hz at least (a period "
                f"<= COM_OF_LOSS_T / {LOSS_TIMEOUT_MARGIN:g}: the engage gate, fc_link)"
            )
        _range("warmup_s", self.warmup_s, MIN_WARMUP_S, 30.0)
        _range("command_timeout_s", self.command_timeout_s, 0.1, 60.0)
        _range("hold_s", self.hold_s, 0.0, 600.0)
        _range("mode_confirm_timeout_s", self.mode_confirm_timeout_s, 0.1, 30.0)
        _range("mode_retries", self.mode_retries, 0, 10)
        _range("arm_confirm_timeout_s", self.arm_confirm_timeout_s, 0.1, 30.0)
        _range("retry_backoff_s", self.retry_backoff_s, 0.0, 10.0)
        _range("fc_timeout_s", self.fc_timeout_s, 1.5, 60.0)  # > one 1 Hz heartbeat period
        _range("estimate_timeout_s", self.estimate_timeout_s, 0.05, 10.0)
        _range("companion_component_id", self.companion_component_id, 1, 255)
        if self.companion_component_id == MAV_COMP_ID_AUTOPILOT1:
            # We send as the FC's system: as its component too, PX4 takes our frames for its
            # own and ignores them (px4-offboard.md §4): no engage, no emergency stop (review).
            raise ConfigError("companion_component_id must not be 1, the autopilot's own "
                              "(MAV_COMP_ID_AUTOPILOT1); 191 is the onboard computer's")
        _range("param_retry_s", self.param_retry_s, 0.1, 60.0)
        _range("param_retries", self.param_retries, 0, 100)
        _range("current_mode_interval_s", self.current_mode_interval_s, 0.01, 10.0)
        if not isinstance(self.allow_motor_cut_loss_action, bool):
            raise ConfigError("allow_motor_cut_loss_action must be true or false, got "
                              f"{self.allow_motor_cut_loss_action!r}")
        if not isinstance(self.envelope, EnvelopeSettings):
            raise ConfigError(f"envelope must be an EnvelopeSettings, got {self.envelope!r}")
        if not isinstance(self.motion, MotionSettings):
            raise ConfigError(f"motion must be a MotionSettings, got {self.motion!r}")
        for name, enum in (("command_loss_action", LossAction), ("release_mode", ReleaseMode)):
            value = getattr(self, name)
            if not isinstance(value, enum):
                try:
                    object.__setattr__(self, name, enum(value))
                except ValueError:
                    allowed = ", ".join(e.value for e in enum)
                    raise ConfigError(f"{name} must be one of {allowed}, got {value!r}") from None

    @property
    def stream_period_s(self) -> float:
        return 1.0 / self.setpoint_rate_hz


PX4_MIN_RATE_HZ = 2.0  # PX4's docs: offboard setpoints "faster than 2 Hz"
MAX_SETPOINT_RATE_HZ = 250.0  # a tick every 4 ms: more than any PX4 control loop takes
DEFAULT_COM_OF_LOSS_T_S = 1.0  # PX4's default (px4-offboard.md §3)


def _number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} must be a number, got {value!r}")


def _range(name: str, value: float, low: float, high: float) -> None:
    _number(name, value)
    if isinstance(low, int) and isinstance(high, int) and not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be in [{low}, {high}], got {value!r}")
