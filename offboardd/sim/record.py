"""What the sim saw and did, for tests to assert on (`sim.record`).

Times are the sim clock (the asyncio loop's `time()` when run by SimServer), so a test
can compare them with `loop.time()`. Plain append-only data: no logic beyond queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SetpointEvent:
    time_s: float
    msg_type: str  # SET_POSITION_TARGET_LOCAL_NED / _GLOBAL_INT / SET_ATTITUDE_TARGET
    verdict: str  # "valid" | "dropped" | "controller_failsafe"
    reason: str
    type_mask: int
    frame: int | None  # coordinate_frame (None for SET_ATTITUDE_TARGET)
    source_system: int
    source_component: int
    # SET_POSITION_TARGET_LOCAL_NED's fields as sent (x y z, vx vy vz, afx afy afz; the
    # type_mask says which count): what a benchmark compares the flight with
    local_ned: tuple[float, ...] | None = None


@dataclass(frozen=True)
class CommandEvent:
    time_s: float
    command: int
    params: tuple[float, ...]  # param1..param7 (COMMAND_INT x, y as given)
    source_system: int
    source_component: int
    target_system: int
    target_component: int
    ignored: str = ""  # why it was ignored without an ACK ("" = handled)


@dataclass(frozen=True)
class AckEvent:
    time_s: float
    command: int
    result: int


@dataclass(frozen=True)
class ModeChange:
    time_s: float
    old_mode: str
    new_mode: str
    cause: str  # "command", "failsafe", "offboard resumed", "gcs", "rc override"...


@dataclass(frozen=True)
class TextEvent:
    time_s: float
    severity: int
    text: str


@dataclass
class SimRecord:
    setpoints: list[SetpointEvent] = field(default_factory=list)
    commands: list[CommandEvent] = field(default_factory=list)
    acks: list[AckEvent] = field(default_factory=list)
    mode_changes: list[ModeChange] = field(default_factory=list)
    statustexts: list[TextEvent] = field(default_factory=list)
    armed_changes: list[tuple[float, bool, str]] = field(default_factory=list)
    offboard_requests: list[float] = field(default_factory=list)  # DO_SET_MODE to OFFBOARD
    first_valid_setpoint_s: float | None = None
    reboots: list[float] = field(default_factory=list)

    def valid_setpoints(self) -> list[SetpointEvent]:
        return [s for s in self.setpoints if s.verdict == "valid"]

    def last_valid_setpoint_s(self) -> float | None:
        valid = [s.time_s for s in self.setpoints if s.verdict != "dropped"]
        return valid[-1] if valid else None

    def changes_to(self, mode_name: str) -> list[ModeChange]:
        return [m for m in self.mode_changes if m.new_mode == mode_name]

    def acks_for(self, command: int) -> list[AckEvent]:
        return [a for a in self.acks if a.command == command]
