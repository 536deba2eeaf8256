"""A tiny aioquic-style test bench for the pure engine: float time stepped by hand.

`Bench.step(dt)` advances `now` to every engine deadline, scheduled event and periodic
telemetry in order (no sleeps), recording every action with its time. A fake FC keeps
mode / armed / landed state and, while `fc_alive`, sends HEARTBEAT at 1 Hz and
LOCAL_POSITION_NED at 10 Hz; a fake commander sends lease heartbeats while
`commander_alive`. FC answers to requests are scheduled by the tests (or by `auto_fc`);
`follow_setpoints` makes the fake FC fly where it is told.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from offboardd.core.actions import (
    Action,
    ArmDisarm,
    Notice,
    NoticeKind,
    Reply,
    RequestMode,
    RequestParams,
    SendSetpoint,
)
from offboardd.core.commands import CommanderHeartbeat, Engage
from offboardd.core.events import (
    MAV_AUTOPILOT_PX4,
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    AckResult,
    Event,
    FcAttitude,
    FcAutopilotVersion,
    FcCommandAck,
    FcCurrentMode,
    FcHeartbeat,
    FcLocalPosition,
    FcParamValue,
    SystemStatus,
)
from offboardd.core.modes import Px4Mode
from offboardd.core.offboard import OffboardEngine
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionNed, PositionVelocityNed, Setpoint
from offboardd.core.settings import EngineSettings

A = TypeVar("A", bound=Action)

_UINT32 = 1 << 32  # time_boot_ms on the wire
FC = {"source_system": 1, "source_component": 1}
PX4_PARAMS: dict[str, int | float] = {
    "COM_OF_LOSS_T": 1.0,
    "COM_OBL_RC_ACT": 5,
    "MAV_FWDEXTSP": 1,
    "COM_RC_OVERRIDE": 1,
    "COM_RCL_EXCEPT": 0,
}


@dataclass
class FakeFc:
    custom_mode: int = Px4Mode.POSCTL.custom_mode
    armed: bool = False
    autopilot: int = MAV_AUTOPILOT_PX4
    north_m: float = 0.0
    east_m: float = 0.0
    down_m: float = -5.0
    boot_ms: int = 10_000
    params: dict[str, int | float] = field(default_factory=lambda: dict(PX4_PARAMS))
    attitude_rad: tuple[float, float, float] = (0.0, 0.0, 0.0)  # roll, pitch, yaw
    velocity_m_s: tuple[float, float, float] = (0.0, 0.0, 0.0)  # north, east, down
    system_status: int = SystemStatus.ACTIVE

    def heartbeat(self) -> FcHeartbeat:
        base_mode = 1 | (128 if self.armed else 0)
        return FcHeartbeat(self.autopilot, 2, base_mode, self.custom_mode, self.system_status,
                           **FC)

    def position(self) -> FcLocalPosition:
        return FcLocalPosition(self.boot_ms % _UINT32, self.north_m, self.east_m, self.down_m,
                               *self.velocity_m_s, **FC)

    def attitude(self) -> FcAttitude:
        return FcAttitude(self.boot_ms % _UINT32, *self.attitude_rad, **FC)


class Bench:
    def __init__(self, settings: EngineSettings | None = None, now: float = 100.0, *,
                 follow: bool = False) -> None:
        self.now = now
        self.settings = settings or EngineSettings()
        self.engine = OffboardEngine(self.settings, now)
        self.fc = FakeFc()
        self.fc_alive = True
        self.heartbeat_alive = True  # (False: HEARTBEATs lost, the rest flows)
        self.position_alive = True
        self.commander_alive = False
        self.commander_period_s = 0.25
        self.log: list[tuple[float, Action]] = []
        self.hooks: list[Callable[[Action], None]] = []
        self._queue: list[tuple[float, int, Event | Callable[[], None]]] = []
        self._seq = itertools.count()
        self._next_hb = now
        self._next_pos = now
        self._next_cmd_hb = now
        self._follows = follow

    # -- feeding -----------------------------------------------------------------------------

    def feed(self, event: Event, commander: str | None = None) -> list[Action]:
        actions = self.engine.handle(event, self.now, commander=commander)
        self._record(actions)
        return actions

    def later(self, delay_s: float, event: Event | Callable[[], None]) -> None:
        heapq.heappush(self._queue, (self.now + delay_s, next(self._seq), event))

    def _record(self, actions: list[Action]) -> None:
        for a in actions:
            self.log.append((self.now, a))
            if self._follows:
                self._fly(a)
            for hook in list(self.hooks):
                hook(a)

    def step(self, dt: float) -> None:
        end = self.now + dt
        for _ in range(1_000_000):
            periodic = min(self._next_hb, self._next_pos, self._next_cmd_hb)
            queued = self._queue[0][0] if self._queue else float("inf")
            t = min(self.engine.next_deadline(), periodic, queued, end)
            self.now = max(self.now, t)
            if self._queue and self._queue[0][0] <= self.now:
                _, _, item = heapq.heappop(self._queue)
                if callable(item):
                    item()
                else:
                    self.feed(item)
                continue
            if self._next_hb <= self.now:
                self._next_hb = self.now + 1.0
                if self.fc_alive and self.heartbeat_alive:
                    self.feed(self.fc.heartbeat())
                continue
            if self._next_pos <= self.now:
                self._next_pos = self.now + 0.1
                self.fc.boot_ms += 100
                if self.fc_alive and self.position_alive:
                    self.feed(self.fc.position())
                elif self.fc_alive:  # no estimate: PX4's other streams go on (ATTITUDE...)
                    self.feed(self.fc.attitude())
                continue
            if self._next_cmd_hb <= self.now:
                self._next_cmd_hb = self.now + self.commander_period_s
                if self.commander_alive:
                    self.feed(CommanderHeartbeat("hb"))
                continue
            self._record(self.engine.poll(self.now))
            if self.now >= end:
                return
        raise AssertionError("bench did not reach the end time: engine deadline stuck?")

    # -- the fake FC -------------------------------------------------------------------------

    def set_mode(self, mode: Px4Mode, *, current_mode: bool = True) -> None:
        """The FC changes mode; reported at once via CURRENT_MODE (else next HEARTBEAT)."""
        self.fc.custom_mode = mode.custom_mode
        if current_mode and self.fc_alive:
            self.feed(FcCurrentMode(mode.custom_mode, mode.custom_mode, **FC))

    def set_armed(self, armed: bool) -> None:
        """Armed state changes; only the next HEARTBEAT shows it (as on PX4)."""
        self.fc.armed = armed

    def ack(self, command: int, result: AckResult) -> None:
        self.feed(FcCommandAck(command, int(result), **FC))

    def connect(self, params: dict[str, int | float] | None = None) -> None:
        """FC heartbeat, its parameters and version; telemetry flowing."""
        self.step(0.0)  # first heartbeat and position
        for name, value in (params or self.fc.params).items():
            self.feed(FcParamValue(name, value, **FC))
        self.feed(FcAutopilotVersion(0x010F0200, 0xFFFF, **FC))
        self.step(0.2)

    def auto_fc(self, mode_delay_s: float = 0.02, arm_delay_s: float = 0.55) -> None:
        """A well-behaved PX4: accepts every mode and arm request (ACK at once, mode
        report after `mode_delay_s`, armed in the next heartbeat after `arm_delay_s`)."""

        def hook(a: Action) -> None:
            if isinstance(a, RequestMode):
                self.later(0.005, FcCommandAck(MAV_CMD_DO_SET_MODE, 0, **FC))
                self.later(mode_delay_s, lambda: self.set_mode(a.mode))
            elif isinstance(a, ArmDisarm):
                self.later(0.01, FcCommandAck(MAV_CMD_COMPONENT_ARM_DISARM, 0, **FC))
                self.later(arm_delay_s, lambda: self.set_armed(a.arm))

        self.hooks.append(hook)

    def follow_setpoints(self) -> None:
        """A vehicle that flies every position setpoint at once: the fake FC reports the
        last one streamed (a planned motion's clock waits for a vehicle that trails it:
        core/motion_clock.py). Not a hook: `engage` clears those."""
        self._follows = True

    def _fly(self, a: Action) -> None:
        if isinstance(a, SendSetpoint) and isinstance(
                sp := a.setpoint, PositionNed | PositionVelocityNed):
            self.fc.north_m, self.fc.east_m, self.fc.down_m = sp.north_m, sp.east_m, sp.down_m
            if isinstance(sp, PositionVelocityNed):
                self.fc.velocity_m_s = (sp.north_m_s, sp.east_m_s, sp.down_m_s)

    def engage(self, setpoint: Setpoint | None = None, *, arm: bool = False) -> None:
        """Connect, engage with a live commander and a well-behaved FC, reach ACTIVE."""
        self.connect()
        self.commander_alive = True
        self.auto_fc()
        self.feed(Engage("engage-1", setpoint, arm=arm))
        self.step(self.settings.warmup_s + 2.5)
        assert self.engine.phase is Phase.ACTIVE, self.engine.phase
        self.hooks.clear()

    # -- reading the log (methods, not attributes, so mypy does not narrow them) ----------

    def phase(self) -> Phase:
        return self.engine.phase

    def reason(self) -> Reason | None:
        return self.engine.reason

    # -- ------------------------------------------------------------------

    def actions(self, kind: type[A], since: float = -1e18) -> list[tuple[float, A]]:
        return [(t, a) for t, a in self.log if isinstance(a, kind) and t >= since]

    def streamed_motion(self, since: float = -1e18) -> list[tuple[float, PositionVelocityNed]]:
        """The setpoints sent since `since`, each position + velocity (+ acceleration): a
        planned motion streams nothing else."""
        out = []
        for t, a in self.actions(SendSetpoint, since):
            assert isinstance(a.setpoint, PositionVelocityNed), a.setpoint
            out.append((t, a.setpoint))
        return out

    def setpoint_times(self, since: float = -1e18) -> list[float]:
        return [t for t, _ in self.actions(SendSetpoint, since)]

    def mode_requests(self, since: float = -1e18) -> list[tuple[float, Px4Mode]]:
        return [(t, a.mode) for t, a in self.actions(RequestMode, since)]

    def reply(self, command_id: str) -> Reply:
        found = [a for _, a in self.log if isinstance(a, Reply) and a.command_id == command_id]
        assert len(found) == 1, f"expected one reply to {command_id}, got {found}"
        return found[0]

    def no_reply(self, command_id: str) -> bool:
        return not any(isinstance(a, Reply) and a.command_id == command_id for _, a in self.log)

    def notices(self, kind: NoticeKind) -> list[Notice]:
        return [a for _, a in self.log if isinstance(a, Notice) and a.kind is kind]

    def param_requests(self) -> list[RequestParams]:
        return [a for _, a in self.log if isinstance(a, RequestParams)]


def speed_m_s(sp: PositionVelocityNed) -> float:
    return math.sqrt(sp.north_m_s**2 + sp.east_m_s**2 + sp.down_m_s**2)
