"""The simulated PX4 vehicle: the pure model the server feeds (`sim.vehicle`).

Ties together the commander rules, setpoint judging, flight tasks and dynamics; takes
decoded MAVLink messages with `now_s` and returns the messages to send, each with a
destination (a link id, every link, GCS links only, or links that asked for
CURRENT_MODE). Commands and parameters are handled in `commands.py`. It must not do I/O,
read a clock or encode bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from offboardd.mavlink.codec import Message, dialect
from offboardd.sim import commands, modes
from offboardd.sim.commander import Commander
from offboardd.sim.config import SimConfig
from offboardd.sim.dynamics import BodyState, Dynamics
from offboardd.sim.flight import FlightTasks
from offboardd.sim.gnss import Gnss
from offboardd.sim.home import Home, Origin
from offboardd.sim.modes import FlightMode
from offboardd.sim.outbox import TO_CURRENT_MODE, TO_GCS, Dest, LinkRequest, Outgoing
from offboardd.sim.params import ParamTable
from offboardd.sim.px4_versions import version_by_name
from offboardd.sim.record import ModeChange, SetpointEvent, SimRecord, TextEvent
from offboardd.sim.setpoints import (
    JudgeContext,
    Target,
    Verdict,
    judge_attitude,
    judge_global_int,
    judge_local_ned,
)
from offboardd.sim.telemetry import current_mode

_MAX_SUBSTEP_S = 0.01
# [SITL main] CURRENT_MODE at ~2.4/s at rest with a short interval: vehicle_status is
# published that often (v1.17+ sends CURRENT_MODE only then, current_mode_stream.py).
STATUS_PUBLISH_PERIOD_S = 1 / 2.44
_STATUSTEXT_CHUNK = 50  # PX4 splits longer texts into chunks sharing an id


_JUDGES = {
    "SET_POSITION_TARGET_LOCAL_NED": judge_local_ned,
    "SET_POSITION_TARGET_GLOBAL_INT": judge_global_int,
    "SET_ATTITUDE_TARGET": judge_attitude,
}


_LOCAL_FIELDS = ("x", "y", "z", "vx", "vy", "vz", "afx", "afy", "afz")


class Vehicle:
    def __init__(self, config: SimConfig, now_s: float) -> None:
        self.system_id = config.system_id
        self.component_id = config.component_id
        # The config's home is where PX4 boots: its local origin and its first home.
        self.origin = Origin(config.home_lat_deg, config.home_lon_deg, config.home_alt_m)
        self.px4 = version_by_name(config.px4_version)
        self.double_ack = (self.px4.double_set_mode_ack if config.double_ack is None
                           else config.double_ack)  # fmt: skip
        self.params = ParamTable(config.params, self.px4)
        self.params.set("MAV_SYS_ID", config.system_id)
        self.record = SimRecord()
        self.boot_ready_s = config.boot_ready_s
        self.commander = Commander(self.params, modes.mode_by_name(config.boot_mode), now_s,
                                   self.px4)  # fmt: skip
        self.dynamics = Dynamics()
        self.tasks = FlightTasks()
        self.link_requests: list[LinkRequest] = []
        # (link id, message id) -> the stream's interval on that link, µs: the server's
        # (the vehicle knows no links); -1 where it has none
        self.stream_interval_us: Callable[[int, int], int] = lambda _link, _msg: -1
        self.later: list[tuple[float, Outgoing]] = []  # (due_s, message): the second ACK
        self._text_id = 0
        self.reboot_requested = False  # MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN, run by the server
        self.gnss = Gnss()  # (hardware: a cut outlasts a reboot)
        self._boot(now_s)

    def _boot(self, now_s: float) -> None:
        self.boot_s = now_s
        self._last_step_s = now_s
        self._next_status_s = now_s  # the next periodic vehicle_status publication
        self.offboard_target: Target | None = None
        self.offboard_failsafe = False
        self.flown_target: Target | None = None
        self.takeoff_alt_m = self.params.get_float("MIS_TAKEOFF_ALT")
        self.home = Home(self.origin)  # PX4's first fix: home at the origin, boot time
        self._home_seen = (False, True)  # (armed, landed) when home's rules last looked

    # ---- readable state (documented in offboardd/sim/__init__.py) ----------
    @property
    def state(self) -> BodyState:
        return self.dynamics.state

    @property
    def mode_name(self) -> str:
        return self.commander.mode.name

    @property
    def intended_mode_name(self) -> str:
        return self.commander.intent.name

    @property
    def armed(self) -> bool:
        return self.commander.armed

    @property
    def landed(self) -> bool:
        return self.commander.landed

    @property
    def position_ned_m(self) -> tuple[float, float, float]:
        n, e, d = self.state.pos_m
        return (n, e, d)

    @property
    def velocity_ned_m_s(self) -> tuple[float, float, float]:
        n, e, d = self.state.vel_m_s
        return (n, e, d)

    @property
    def attitude_rad(self) -> tuple[float, float, float]:
        """(roll, pitch, yaw)."""
        return (self.state.roll_rad, self.state.pitch_rad, self.state.yaw_rad)

    @property
    def landed_state(self) -> int:
        """EXTENDED_SYS_STATE.landed_state (MAV_LANDED_STATE)."""
        if self.commander.landed:
            return int(dialect.MAV_LANDED_STATE_ON_GROUND)
        mode = self.commander.mode
        if mode is modes.TAKEOFF:
            return int(dialect.MAV_LANDED_STATE_TAKEOFF)
        if mode is modes.LAND or (mode is modes.RTL and self.state.vel_m_s[2] > 0.3):
            return int(dialect.MAV_LANDED_STATE_LANDING)
        return int(dialect.MAV_LANDED_STATE_IN_AIR)

    def boot_ms(self, now_s: float) -> int:
        return int((now_s - self.boot_s) * 1000) & 0xFFFFFFFF

    def boot_us(self, now_s: float) -> int:
        return int((now_s - self.boot_s) * 1e6)

    def booting(self, now_s: float, part: float = 1.0) -> bool:
        """Before `part` of PX4's boot timeline has passed (SimConfig.boot_ready_s): the
        whole of it for arming, config.BOOT_ESTIMATE of it for the estimate,
        config.BOOT_GLOBAL for the global position."""
        return now_s - self.boot_s < part * self.boot_ready_s

    # ---- input --------------------------------------------------------------
    def handle(self, msg: Message, now_s: float, link_id: int) -> list[Outgoing]:
        if msg.get_srcSystem() == self.system_id and msg.get_srcComponent() == self.component_id:
            return []  # PX4 ignores its own identity (loopback)
        kind = msg.get_type()
        judge = _JUDGES.get(kind)
        if judge is not None:
            return self._setpoint(kind, judge(msg, self._judge_context()), msg, now_s)
        return commands.handle(self, msg, now_s, link_id)

    def _judge_context(self) -> JudgeContext:
        s = self.state
        return JudgeContext(
            self.system_id, self.component_id, self.params.get_int("MAV_FWDEXTSP") == 1,
            s.yaw_rad, s.roll_rad, s.pitch_rad,
            self.commander.estimator_valid and self.commander.global_valid,
            self.origin, self.home.point.alt_m, self.px4.throttle_ignore_refused,
            self.commander.estimator_valid and self.commander.terrain_valid,
        )  # fmt: skip

    def _setpoint(self, kind: str, v: Verdict, msg: Message, now_s: float) -> list[Outgoing]:
        frame = None if kind == "SET_ATTITUDE_TARGET" else int(msg.coordinate_frame)
        local = (tuple(float(getattr(msg, f)) for f in _LOCAL_FIELDS)
                 if kind == "SET_POSITION_TARGET_LOCAL_NED" else None)
        self.record.setpoints.append(SetpointEvent(
            now_s, kind, v.kind, v.reason, int(msg.type_mask), frame,
            msg.get_srcSystem(), msg.get_srcComponent(), local,
        ))  # fmt: skip
        if v.kind == "dropped":
            return self.statustext(2, v.statustext, now_s) if v.statustext else []
        if self.record.first_valid_setpoint_s is None:
            self.record.first_valid_setpoint_s = now_s
        self.offboard_target = v.target
        self.offboard_failsafe = v.kind == "controller_failsafe"
        self.commander.on_valid_setpoint(
            now_s, uses_position=v.uses_position, uses_velocity=v.uses_velocity
        )
        return self.drain(now_s)

    def statustext(self, severity: int, text: str, now_s: float, dest: Dest = TO_GCS
                   ) -> list[Outgoing]:  # fmt: skip
        """PX4's STATUSTEXT, split into 50-character chunks sharing an id when longer.

        Only to links where a GCS heartbeat was seen, unless told otherwise: [SITL main,
        v1.17.0, v1.16.2] a companion's link (ONBOARD_CONTROLLER heartbeat) got no
        STATUSTEXT at all: not "Failsafe activated", not one of the 20/s "..._LOCAL_NED
        invalid" / "coordinate frame 7 unsupported"; once a GCS heartbeat came on the
        same link, all of them, and "Armed by external command", "Takeoff detected"."""
        self.record.statustexts.append(TextEvent(now_s, severity, text))
        raw = text.encode("utf-8")
        if len(raw) <= _STATUSTEXT_CHUNK:
            return [Outgoing(dialect.MAVLink_statustext_message(severity, raw, 0, 0), dest)]
        self._text_id = self._text_id % 65535 + 1
        chunks = [raw[i : i + _STATUSTEXT_CHUNK] for i in range(0, len(raw), _STATUSTEXT_CHUNK)]
        if len(chunks[-1]) == _STATUSTEXT_CHUNK:
            chunks.append(b"")  # a NUL-only last chunk tells the receiver the text ended
        return [
            Outgoing(dialect.MAVLink_statustext_message(severity, c, self._text_id, i), dest)
            for i, c in enumerate(chunks)
        ]

    # ---- time ---------------------------------------------------------------
    def step(self, now_s: float) -> list[Outgoing]:
        """Advance physics and commander to `now_s`; return what must go out now."""
        dt_total = min(now_s - self._last_step_s, 1.0)
        self._last_step_s = now_s
        t = now_s - dt_total
        while dt_total > 1e-9:
            dt = min(dt_total, _MAX_SUBSTEP_S)
            dt_total -= dt
            t += dt
            self._physics(dt, t)
        noaid_s = self.params.get_int("EKF2_NOAID_TOUT") / 1e6
        if (estimate := self.gnss.estimate_change(now_s, noaid_s)) is not None:
            self.commander.estimator_valid = estimate
        self.commander.step(now_s)
        out = self.drain(now_s)
        if self.px4.current_mode_on_status and now_s >= self._next_status_s:
            self._next_status_s = max(self._next_status_s + STATUS_PUBLISH_PERIOD_S, now_s)
            out.append(Outgoing(current_mode(self, now_s), TO_CURRENT_MODE))
        due = [item for item in self.later if item[0] <= now_s]
        if due:
            self.later = [item for item in self.later if item[0] > now_s]
            out.extend(o for _, o in due)
        return out

    def _physics(self, dt_s: float, now_s: float) -> None:
        c = self.commander
        # OFFBOARD without a live stream and no failsafe taken (NAV_RCL_ACT 0 / 7 without
        # RC, v1.17+) flies the last setpoint on: nothing in PX4 ages it (control_mode.cpp
        # keeps the last offboard_control_mode, the position controller the last
        # trajectory_setpoint). [SITL main, v1.17.0] a position held 2 m for 8 s; a 1 m/s
        # velocity flew on at 0.8-0.94 m/s for 10 s (the sim held both before: review).
        # The plan goes through PX4's takeoff handling (takeoff.py): motors idle for
        # COM_SPOOLUP_TIME after arming, then the MPC_TKO_RAMP_T climb-rate ramp.
        motors_on = c.armed and not c.terminated  # a flight termination runs no motor
        plan = self.tasks.plan(
            c.mode, armed=motors_on, rc_present=c.rc_present, estimator_valid=c.position_valid,
            offboard=self.offboard_target, offboard_failsafe=self.offboard_failsafe,
            state=self.state, params=self.params, takeoff_alt_m=self.takeoff_alt_m,
            dt_s=dt_s, since_arming_s=now_s - c.armed_at_s, landed=c.landed,
            home_ned_m=self.home.point.ned_m,
        )  # fmt: skip
        self.flown_target = plan.target
        self.dynamics.step(dt_s, plan.target, plan.limits)
        if not c.terminated:  # [SITL v1.18] terminated: IN_AIR still 15 s after the impact
            c.set_landed(self.tasks.landed(self.state, armed=c.armed, was_landed=c.landed,
                                           now_s=now_s, params=self.params,
                                           settle_s=self.px4.touchdown_settle_s), now_s)
        self.update_home(now_s)
        if plan.takeoff_done and c.mode is modes.TAKEOFF:
            c.complete_auto_mode(modes.LOITER, now_s, "takeoff complete")

    def update_home(self, now_s: float) -> None:
        """PX4 commander's automatic home (home.py): where the vehicle is at the armed
        edge and at the take-off edge, and while disarmed and landed once it is away."""
        c = self.commander
        was_armed, was_landed = self._home_seen
        self._home_seen = (c.armed, c.landed)
        if self.params.get_int("COM_HOME_EN") == 0 or not c.estimator_valid:
            return
        armed_edge = c.armed and not was_armed
        takeoff_edge = c.armed and was_armed and was_landed and not c.landed
        carried = not c.armed and c.landed and self.home.moved_away(self.position_ned_m)
        if armed_edge or takeoff_edge or carried:
            self.home.set_here(self.position_ned_m, self.attitude_rad, landed=c.landed,
                               now_us=self.boot_us(now_s))  # fmt: skip

    def drain(self, now_s: float) -> list[Outgoing]:
        self.update_home(now_s)  # an arm command sets home at once, as Commander::arm does
        out: list[Outgoing] = []
        status_changed = False
        first_old_mode = first_old_intent = ""
        for n in self.commander.notices:
            if n.kind == "mode":
                self.record.mode_changes.append(ModeChange(n.time_s, n.old_mode, n.new_mode,
                                                           n.cause))  # fmt: skip
                status_changed = True
                first_old_mode = first_old_mode or n.old_mode
            elif n.kind == "intent":
                status_changed = True
                first_old_intent = first_old_intent or n.old_mode
            elif n.kind == "text":
                out.extend(self.statustext(n.severity, n.text, now_s))
            else:
                self.record.armed_changes.append((n.time_s, self.commander.armed, n.cause))
        self.commander.notices.clear()
        if status_changed:  # PX4 sends CURRENT_MODE at once when vehicle_status changes
            out.insert(0, Outgoing(current_mode(self, now_s), TO_CURRENT_MODE))
            if self.px4.current_mode_on_status and first_old_mode:
                # v1.17+: a mode change publishes vehicle_status twice, first as it was
                # (the old mode and the old intent), then with the new mode; with the
                # interval cap this reproduces the measured latencies ([SITL main]:
                # about one interval at 0.02-0.1 s). A fit, not read in PX4 source.
                # [SITL main, 0.05 s interval] DO_SET_MODE OFFBOARD from Hold: (LOITER,
                # LOITER) with the ACK, (OFFBOARD, OFFBOARD) 52 ms later; never the
                # (LOITER, OFFBOARD) the sim sent first.
                old = modes.mode_by_name(first_old_mode)
                old_intent = modes.mode_by_name(first_old_intent) if first_old_intent else None
                out.insert(0, Outgoing(current_mode(self, now_s, old, old_intent),
                                       TO_CURRENT_MODE))  # fmt: skip
        return out

    # ---- faults -------------------------------------------------------------
    def pilot_mode_switch(self, mode_name: str, now_s: float) -> list[Outgoing]:
        """A GCS or the pilot's mode switch: always obeyed; it replaces the user's intent."""
        mode = modes.mode_by_name(mode_name)
        self.commander.rc_present = self.commander.rc_present or mode.needs_manual_control
        self.commander.request_mode(mode, now_s, "gcs")
        return self.drain(now_s)

    def flight_termination(self, now_s: float) -> list[Outgoing]:
        """A PX4 failsafe terminates the flight (Commander.failsafe_terminate)."""
        self.commander.failsafe_terminate(now_s)
        return self.drain(now_s)

    def rc_takeover(self, now_s: float) -> list[Outgoing]:
        """Sticks moved: POSCTL if the release's override parameter allows it here."""
        c = self.commander
        c.rc_present = True
        if self.px4.rc_override_param == "MAN_OVERRIDE_SPD":
            # v1.18 (#27041): one rule for auto and offboard modes; negative disables.
            allowed = self.params.get_float("MAN_OVERRIDE_SPD") >= 0
        else:  # COM_RC_OVERRIDE bit 1: offboard, bit 0: auto modes (past COM_RC_STICK_OV)
            bit = 2 if c.mode is modes.OFFBOARD else 1
            allowed = bool(self.params.get_int("COM_RC_OVERRIDE") & bit)
        if c.armed and (c.mode is modes.OFFBOARD or c.mode.is_auto) and allowed:
            c.request_mode(modes.POSCTL, now_s, "rc override")
        return self.drain(now_s)

    def set_gnss(self, has_fix: bool, now_s: float) -> list[Outgoing]:
        """GNSS cut (or back): the estimate follows as PX4's does (gnss.py)."""
        if has_fix:
            self.gnss.restore(now_s)
        else:
            self.gnss.cut(now_s)
        return self.drain(now_s)

    def set_estimator_valid(self, valid: bool, now_s: float) -> list[Outgoing]:
        self.commander.estimator_valid = valid
        self.commander.step(now_s)
        return self.drain(now_s)

    @property
    def shown_mode(self) -> FlightMode:
        """The mode HEARTBEAT and CURRENT_MODE report: Land without a position estimate
        is Descend (modes.DESCEND), named per release."""
        c = self.commander
        if c.mode is modes.LAND and not c.position_valid:
            return modes.DESCEND if self.px4.descend_as_own_mode else modes.DESCEND_AS_LAND
        return c.mode

    def set_terrain_valid(self, valid: bool) -> None:
        """The range finder out of range (or back): only the terrain estimate changes."""
        self.commander.terrain_valid = valid

    def set_global_valid(self, valid: bool, now_s: float) -> list[Outgoing]:
        """No global position (or one again): the local estimate stays (Commander)."""
        self.commander.global_valid = valid
        self.commander.step(now_s)
        return self.drain(now_s)

    def reboot(self, now_s: float) -> None:
        """Power cycle: disarmed on the ground at home, boot time from 0, params kept."""
        self.record.reboots.append(now_s)
        if self.commander.armed:
            self.record.armed_changes.append((now_s, False, "reboot"))
        old = self.commander.mode.name
        self.commander.reset(now_s)
        self.dynamics.reset()
        self.tasks = FlightTasks()
        self.later.clear()
        self._boot(now_s)
        self.gnss.rebooted(now_s)
        if self.gnss.took_estimate:  # a PX4 booting without GNSS has no horizontal position
            self.commander.estimator_valid = False
        if old != self.commander.mode.name:
            self.record.mode_changes.append(ModeChange(now_s, old, self.mode_name, "reboot"))
