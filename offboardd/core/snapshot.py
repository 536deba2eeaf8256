"""EngineSnapshot: the engine's state as the MQTT layer publishes it (retained `state`).

Frozen and JSON-friendly (`as_dict`): plain str / float / int / bool / None values,
durations in seconds, names from the public enums. Built by OffboardEngine.snapshot().
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class EngineSnapshot:
    phase: str
    reason: str | None
    fc_link: str  # "unknown" (never heard), "up", "lost"
    fc_system_id: int | None
    fc_is_px4: bool | None
    fc_version: str | None  # PX4's flight software version, "v1.16.2", once AUTOPILOT_VERSION came
    fc_heartbeat_age_s: float | None
    fc_mode: str
    fc_custom_mode: int | None
    armed: bool | None  # None (with fc_mode unknown...) while the FC is not heard
    # HEARTBEAT system_status: "standby", "active", "critical" (a PX4 failsafe),
    # "flight_termination" (no motor runs, whatever fc_mode and armed say)...
    fc_status: str
    landed_state: str
    in_control: bool  # OFFBOARD, armed, not on the ground, motors not cut, all at once
    lease_remaining_s: float | None
    estimates: dict[str, bool]
    streaming: bool
    setpoint_kind: str | None
    stream_rate_hz: float
    stream_worst_gap_s: float
    missed_ticks: int
    setpoints_sent: int
    hold_remaining_s: float | None
    resume_token: str | None  # quote it as "resume" to take control (None: engage instead)
    com_of_loss_t_s: float | None
    com_obl_rc_act: str | None
    mav_fwdextsp: int | None
    warnings: tuple[str, ...]
    # the safety envelope
    fence_enabled: bool = False
    home_known: bool = False  # PX4's HOME_POSITION heard (the fence is measured from it)
    fence_distance_m: float | None = None  # to the nearest fence face; negative = outside
    envelope_limiting: bool = False  # the streamed setpoint is slowed to stop at the fence
    motion: dict[str, Any] | None = None  # the running motion (Motion.progress), if any
    stream_plan: dict[str, Any] | None = None  # what PX4 was asked to stream, and refused

    def as_dict(self) -> dict[str, object]:
        # Shallow: every value is plain, and the dicts in it are built for this snapshot
        # (`asdict` deep-copied them, leaf by leaf: most of the 1 Hz state's own cost).
        out: dict[str, object] = {name: getattr(self, name) for name in _FIELD_NAMES}
        out["warnings"] = list(self.warnings)
        for name in _FLOAT_NAMES:  # ages and distances to the millisecond / millimetre, not
            value = getattr(self, name)  # 0.29989441000361694 (review)
            if value is not None:
                out[name] = round(value, 3) + 0.0  # (+ 0.0: never "-0.0")
        return out


_FIELD_NAMES = tuple(f.name for f in fields(EngineSnapshot))
_FLOAT_NAMES = tuple(f.name for f in fields(EngineSnapshot) if "float" in str(f.type))
