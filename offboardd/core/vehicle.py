"""VehicleState: what we know about the flight controller, folded from its events.

Staleness is judged with the `now` the caller passes; nothing here reads a clock. It
owns estimate validity (px4-offboard.md §1: LOCAL_POSITION_NED fresh, and the last
ESTIMATOR_STATUS's flags agreeing) and "in control" (mode, armed and landed state
together, §3). It does not decide anything: offboard.py does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from offboardd.core.actions import Target
from offboardd.core.events import (
    MAV_AUTOPILOT_INVALID,
    MAV_AUTOPILOT_PX4,
    FcAttitude,
    FcCurrentMode,
    FcEstimatorStatus,
    FcExtendedSysState,
    FcGlobalPosition,
    FcHeartbeat,
    FcLocalPosition,
    FcMessageEvent,
    LandedState,
    SystemStatus,
)
from offboardd.core.modes import Px4Mode, mode_from_custom
from offboardd.core.motion_path import Vec3
from offboardd.core.setpoints import (
    AccelerationNed,
    Attitude,
    BodyRates,
    EstimateNeed,
    PositionVelocityNed,
    Setpoint,
    VelocityBody,
    VelocityNed,
)
from offboardd.errors import SetpointError

# ESTIMATOR_STATUS_FLAGS (common.xml) that must be set for each estimate to count.
_VEL_HORIZ, _VEL_VERT = 2, 4
_POS_HORIZ_REL, _POS_HORIZ_ABS, _POS_VERT_ABS, _POS_VERT_AGL = 8, 16, 32, 64
_NEEDED_FLAGS = {
    EstimateNeed.LOCAL_POSITION: _POS_HORIZ_REL | _POS_VERT_ABS,
    EstimateNeed.LOCAL_VELOCITY: _VEL_HORIZ | _VEL_VERT,
    EstimateNeed.GLOBAL_POSITION: _POS_HORIZ_ABS | _POS_VERT_ABS,
    # PX4 sets POS_VERT_AGL exactly when its terrain estimate is valid (EKF2
    # isTerrainEstimateValid), the condition its GLOBAL_INT receiver checks
    EstimateNeed.TERRAIN: _POS_HORIZ_ABS | _POS_VERT_ABS | _POS_VERT_AGL,
}
# The last ESTIMATOR_STATUS decides, however old: PX4 streams LOCAL_POSITION_NED and
# GLOBAL_POSITION_INT whether its estimate is valid or not (since v1.14, PX4 #20389:
# [SITL main 2026-11-29] GPS cut in flight, both went on at their rates through the
# failsafe, dead-reckoned and drifting ~2 m, while ESTIMATOR_STATUS dropped the horizontal
# flags), and on a 57,600-baud line with PX4's streams left alone ESTIMATOR_STATUS comes
# every ~12 s. (Only a recent one vetoed before: for 9 s of each 12 the drifting position
# counted as valid again.) The stream plan never turns it off.
# ...except while PX4 is booting: it streams LOCAL_POSITION_NED from its start and its
# estimator's horizontal position comes ~3 s later ([SITL main 2026-11-29]: position
# messages from 0.5 s of uptime, HEARTBEAT (UNINIT) and ESTIMATOR_STATUS from 1.4 s, the
# position in it at 3.4 s, STANDBY at 4.4 s). An FC up for less than this that says
# UNINIT counts no estimate before an ESTIMATOR_STATUS says so. (Later, UNINIT only means
# "disarmed where arming would be refused": a trimmed link's estimate counts then.)
_BOOT_FLAGS_NEEDED_MS = 10_000
_EXTRAPOLATE_MAX_S = 0.25  # an older estimate is moved on no further: its velocity may be stale too
# Levelling a tilted setpoint keeps the vertical share of its thrust; beyond this tilt the
# commander's thrust says little about what hovers, and half of it is the bound we keep.
_MIN_LEVEL_THRUST_SHARE = 0.5
# time_boot_ms going back by more than this means the FC rebooted (not reordering).
_REBOOT_BACKSTEP_MS = 2000
# time_boot_ms is a uint32 (PX4 truncates its 64-bit µs clock): it wraps to 0 after 49.7
# days of FC uptime. A step back that is a step of at most this forward modulo 2^32 is
# that wrap, not a reboot (read as one, it stopped the stream mid-flight: review).
_BOOT_MS_MODULUS = 1 << 32
_WRAP_WINDOW_MS = 60_000


@dataclass
class _Stamped:
    received_s: float = -1.0e18


def _went_back(time_boot_ms: int, previous_ms: int) -> bool:
    """Behind `previous_ms`, and not the uint32 wrap."""
    return (time_boot_ms - previous_ms) % _BOOT_MS_MODULUS > _WRAP_WINDOW_MS


class VehicleState:
    def __init__(self, estimate_timeout_s: float) -> None:
        self.estimate_timeout_s = estimate_timeout_s
        self.target: Target | None = None  # the autopilot we follow (first one heard)
        # The first PX4 autopilot followed, kept for the run: after an FC loss only it is
        # adopted again, never another vehicle on a shared radio (found by review).
        self.px4: Target | None = None
        self.foreign_px4_systems: set[int] = set()  # other PX4s heard (warned of, once)
        self.autopilot: int | None = None
        self.custom_mode: int | None = None  # latest of HEARTBEAT / CURRENT_MODE
        self.intended_custom_mode: int | None = None
        self.armed = False
        self.system_status: int | None = None  # HEARTBEAT's MAV_STATE
        self.landed_state = LandedState.UNDEFINED
        self.last_heartbeat_s: float | None = None
        self.last_heard_s: float | None = None  # any message from our autopilot
        self.mode_heard_s: float | None = None  # the last HEARTBEAT or CURRENT_MODE
        self.local_position: FcLocalPosition | None = None
        self.global_position: FcGlobalPosition | None = None
        self.attitude: FcAttitude | None = None
        self.estimator_flags: int | None = None
        self._local_s = _Stamped()
        self._global_s = _Stamped()
        self._attitude_s = _Stamped()
        self._boot_ms: int | None = None
        # the last uptime before reports were lost, and when it came
        self._boot_before_loss: tuple[int, float] | None = None
        # Set when the FC came back from a loss with its uptime restarted (the engine says
        # so, then clears it): its uptime in s
        self.rebooted_unheard_s: float | None = None

    # -- folding ---------------------------------------------------------------------------

    @property
    def px4_system(self) -> int | None:
        return None if self.px4 is None else self.px4.system_id

    def accepts(self, event: FcMessageEvent) -> bool:
        """Is this event from our autopilot (its system and component)? A first autopilot
        heartbeat adopts its sender; GCS and companion heartbeats (autopilot INVALID) never
        count."""
        if isinstance(event, FcHeartbeat):
            if event.autopilot == MAV_AUTOPILOT_INVALID:
                return False
            source = Target(event.source_system, event.source_component)
            if self.px4 is not None and event.source_system != self.px4.system_id:
                if event.autopilot == MAV_AUTOPILOT_PX4:
                    self.foreign_px4_systems.add(event.source_system)
                return False
            if self.target is None or (
                # a PX4 autopilot wins over whatever non-PX4 component spoke first
                event.autopilot == MAV_AUTOPILOT_PX4
                and self.autopilot != MAV_AUTOPILOT_PX4
                and source != self.target
            ):
                if self.target is not None:  # the other one's flags do not age out (review)
                    self.estimator_flags = None
                self.target = source
            if event.autopilot == MAV_AUTOPILOT_PX4 and source == self.target:
                self.px4 = source
            return (event.source_system, event.source_component) == (
                self.target.system_id,
                self.target.component_id,
            )
        # The autopilot's own messages only: PX4 forwards its other components' traffic
        # (a gimbal's ATTITUDE with its own boot clock read as an FC reboot, a camera's
        # COMMAND_ACK as a refusal of our mode change, another component's position as
        # the hold point: found by review).
        target = self.target
        return (target is not None and event.source_system == target.system_id
                and event.source_component == target.component_id)

    def fold(self, event: FcMessageEvent, now: float) -> bool:
        """Update from an accepted event; True if it shows the FC rebooted."""
        self.last_heard_s = now
        if isinstance(event, FcHeartbeat):
            self.autopilot = event.autopilot
            self.custom_mode = event.custom_mode
            self.armed = event.armed
            self.system_status = event.system_status
            self.last_heartbeat_s = self.mode_heard_s = now
        elif isinstance(event, FcCurrentMode):
            self.mode_heard_s = now
            self.custom_mode = event.custom_mode
            self.intended_custom_mode = event.intended_custom_mode
        elif isinstance(event, FcExtendedSysState):
            try:
                self.landed_state = LandedState(event.landed_state)
            except ValueError:
                self.landed_state = LandedState.UNDEFINED
        elif isinstance(event, FcLocalPosition):
            self.local_position, self._local_s.received_s = event, now
            return self._boot_time(event.time_boot_ms, now)
        elif isinstance(event, FcGlobalPosition):
            self.global_position, self._global_s.received_s = event, now
            return self._boot_time(event.time_boot_ms, now)
        elif isinstance(event, FcAttitude):
            self.attitude, self._attitude_s.received_s = event, now
            return self._boot_time(event.time_boot_ms, now)
        elif isinstance(event, FcEstimatorStatus):
            self.estimator_flags = event.flags
        return False

    def _boot_time(self, time_boot_ms: int, now: float) -> bool:
        previous, self._boot_ms = self._boot_ms, time_boot_ms
        if previous is None:
            self._judge_return(time_boot_ms, now)
        if previous is None or time_boot_ms >= previous - _REBOOT_BACKSTEP_MS:
            return False
        return _went_back(time_boot_ms, previous)

    def _judge_return(self, time_boot_ms: int, now: float) -> None:
        """The first uptime heard after a loss: behind where the uptime before it would be
        now, the FC rebooted while unheard (a link loss alone read the same: review)."""
        before, self._boot_before_loss = self._boot_before_loss, None
        if before is None:
            return
        expected_ms = before[0] + int((now - before[1]) * 1000.0)
        if time_boot_ms < expected_ms - _REBOOT_BACKSTEP_MS and _went_back(time_boot_ms,
                                                                            expected_ms):
            self.rebooted_unheard_s = time_boot_ms / 1000.0

    def forget_reports(self) -> None:
        """After a reboot or link loss, nothing we knew about the estimate or the landing
        holds. (The returning FC's first HEARTBEAT brings its mode and arming with it, but
        its EXTENDED_SYS_STATE comes later: until then `landed_state` is undefined, not
        the "in air" of before a reboot on the ground: found by a review.)"""
        if self._boot_ms is not None:  # (it came with one of these three)
            heard_s = max(self._local_s.received_s, self._global_s.received_s,
                          self._attitude_s.received_s)
            self._boot_before_loss = (self._boot_ms, heard_s)
        self.landed_state = LandedState.UNDEFINED
        self.local_position = self.global_position = self.attitude = None
        self.estimator_flags = None
        self._local_s, self._global_s, self._attitude_s = _Stamped(), _Stamped(), _Stamped()
        self._boot_ms = None

    # -- judgements ------------------------------------------------------------------------

    @property
    def is_px4(self) -> bool:
        return self.autopilot == MAV_AUTOPILOT_PX4

    @property
    def mode(self) -> Px4Mode | None:
        return None if self.custom_mode is None else mode_from_custom(self.custom_mode)

    @property
    def motors_cut(self) -> bool:
        """PX4 reports flight termination, a kill switch or lockdown: no motor runs. After
        a termination it stays armed until it reboots, reporting TERMINATION ([SITL v1.16.2,
        v1.17.0] a geofence Terminate) or the mode it had ([SITL v1.18]: OFFBOARD, 20 s
        after an offboard-loss Terminate): HEARTBEAT system_status is the sign in common,
        the mode may come first (CURRENT_MODE)."""
        return (self.system_status == SystemStatus.FLIGHT_TERMINATION
                or self.mode is Px4Mode.TERMINATION)

    @property
    def status_name(self) -> str:
        """HEARTBEAT's system_status as a name: "active", "critical", "flight_termination"."""
        if self.system_status is None:
            return "unknown"
        try:
            return SystemStatus(self.system_status).name.lower()
        except ValueError:
            return f"mav_state_{self.system_status}"

    @property
    def in_offboard(self) -> bool:
        return self.mode is Px4Mode.OFFBOARD

    def heartbeat_age_s(self, now: float) -> float | None:
        return None if self.last_heartbeat_s is None else now - self.last_heartbeat_s

    def silence_s(self, now: float) -> float | None:
        """How long nothing has come from our autopilot (None: never heard)."""
        return None if self.last_heard_s is None else now - self.last_heard_s

    def in_control(self) -> bool:
        """Flying under offboard: OFFBOARD *and* armed *and* not on the ground, the motors
        not cut. PX4 reports OFFBOARD again while disarmed on the ground after an AUTO.LAND
        (§3), and OFFBOARD and armed after a flight termination (v1.18+: motors_cut)."""
        return (self.in_offboard and self.armed and not self.motors_cut
                and self.landed_state != LandedState.ON_GROUND)

    def estimate_valid(self, need: EstimateNeed, now: float) -> bool:
        if need is EstimateNeed.NONE:
            return True
        is_global = need in (EstimateNeed.GLOBAL_POSITION, EstimateNeed.TERRAIN)
        return self._judged(need, self._global_s if is_global else self._local_s, now)

    def velocity_valid(self, *, global_frame: bool, now: float) -> bool:
        """The velocity of GLOBAL_POSITION_INT (`global_frame`) or LOCAL_POSITION_NED:
        fresh, and the estimator's velocity flags set."""
        return self._judged(EstimateNeed.LOCAL_VELOCITY,
                            self._global_s if global_frame else self._local_s, now)

    def _judged(self, need: EstimateNeed, stamp: _Stamped, now: float) -> bool:
        if now - stamp.received_s > self.estimate_timeout_s:
            return False
        if self.estimator_flags is not None:
            needed = _NEEDED_FLAGS[need]
            return self.estimator_flags & needed == needed
        if (self.system_status == SystemStatus.UNINIT and self._boot_ms is not None
                and self._boot_ms < _BOOT_FLAGS_NEEDED_MS):
            return False  # booting: its estimate counts once PX4 says it converged
        # Only ESTIMATOR_STATUS says whether PX4 has a terrain estimate: no news, no terrain.
        return need is not EstimateNeed.TERRAIN

    def estimates(self, now: float) -> dict[str, bool]:
        return {
            need.value: self.estimate_valid(need, now)
            for need in EstimateNeed
            if need is not EstimateNeed.NONE
        }

    def local_velocity_ned(self) -> tuple[float, float, float]:
        """The estimated velocity (m/s NED); zero when unknown or not finite."""
        pos = self.local_position
        if pos is None:
            return 0.0, 0.0, 0.0
        v = (pos.north_m_s, pos.east_m_s, pos.down_m_s)
        return v if all(math.isfinite(x) for x in v) else (0.0, 0.0, 0.0)

    def local_position_now_ned(self, now: float) -> tuple[Vec3, Vec3] | None:
        """Where the vehicle is now and how it moves (m and m/s, local NED): the last valid
        estimate moved on by its velocity for the time since it came (at most
        _EXTRAPOLATE_MAX_S; LOCAL_POSITION_NED comes at 30/s: at 12 m/s it is up to 0.4 m
        old on arrival); None without one."""
        pos = self.local_position
        if pos is None or not self.estimate_valid(EstimateNeed.LOCAL_POSITION, now):
            return None
        age_s = min(max(0.0, now - self._local_s.received_s), _EXTRAPOLATE_MAX_S)
        vn, ve, vd = self.local_velocity_ned()
        here = (pos.north_m + vn * age_s, pos.east_m + ve * age_s, pos.down_m + vd * age_s)
        return (here, (vn, ve, vd)) if all(math.isfinite(x) for x in here) else None

    def heading_rad(self, now: float) -> float | None:
        """The vehicle's yaw from an ATTITUDE no older than the estimate timeout, finite;
        else None. A minute-old heading turned a body-frame velocity the wrong way at a
        fence: 97 m east with the fence at 25 m (review)."""
        att = self.attitude
        if att is None or now - self._attitude_s.received_s > self.estimate_timeout_s:
            return None
        return att.yaw_rad if math.isfinite(att.yaw_rad) else None

    def hold_setpoint(self, now: float) -> PositionVelocityNed | None:
        """Stay where the vehicle is, at zero velocity, facing where it faces; None without
        a valid local position (then no "here" can be flown)."""
        pos = self.local_position
        if pos is None or not self.estimate_valid(EstimateNeed.LOCAL_POSITION, now):
            return None
        yaw = self.heading_rad(now)
        try:
            return PositionVelocityNed(
                pos.north_m, pos.east_m, pos.down_m, 0.0, 0.0, 0.0, yaw_rad=yaw
            )
        except SetpointError:  # a NaN in telemetry: no flyable "here"
            return None

    def stop_setpoint(self, last: Setpoint | None, now: float, *,
                      moving: bool = False) -> VelocityNed | None:
        """No "here" to hold (no position estimate), and the commander flew a velocity, a
        body velocity or an acceleration, or a planned motion is `moving`: zero velocity
        (NED), so that what nobody commands any more stops instead of flying on (zero
        acceleration would let the vehicle coast). It faces where the vehicle faces, else
        the yaw the setpoint asked for, else turns at no rate. None for every other
        setpoint: a position is a fixed point already, attitude and rates level
        (`level_setpoint`). PX4 flies it with a local velocity alone (§1)."""
        if not (moving or isinstance(last, VelocityNed | VelocityBody | AccelerationNed)):
            return None
        asked: float | None = getattr(last, "yaw_rad", None)  # (a body velocity has none)
        yaw = self.heading_rad(now)
        if yaw is None:
            yaw = asked
        if yaw is None:
            return VelocityNed(0.0, 0.0, 0.0, yaw_rate_rad_s=0.0)
        return VelocityNed(0.0, 0.0, 0.0, yaw_rad=yaw)

    def level_setpoint(self, last: Setpoint | None) -> Attitude | BodyRates | None:
        """No "here" to hold (no position estimate), and the commander flew attitude or
        body rates: stay level, facing where the vehicle faces, on the vertical share of
        the commander's last thrust (what kept it up, if it was holding height), as PX4's
        own Descend does without a position. None for every other setpoint: those need an
        estimate of their own. Without a known heading, rates stop at zero instead."""
        if not isinstance(last, Attitude | BodyRates):
            return None
        att = self.attitude
        finite = att is not None and all(
            math.isfinite(a) for a in (att.roll_rad, att.pitch_rad, att.yaw_rad))
        if isinstance(last, Attitude):  # the tilt it asked for; its heading if none is known
            w, x, y, z = last.quaternion
            cos_tilt = 1.0 - 2.0 * (x * x + y * y)
            yaw = (att.yaw_rad if att is not None and finite
                   else math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)))
        elif att is not None and finite:  # rates: the tilt the vehicle has
            cos_tilt, yaw = math.cos(att.roll_rad) * math.cos(att.pitch_rad), att.yaw_rad
        else:
            return BodyRates(0.0, 0.0, 0.0, last.thrust)
        thrust = last.thrust * max(cos_tilt, _MIN_LEVEL_THRUST_SHARE)
        return Attitude(math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0), thrust)
