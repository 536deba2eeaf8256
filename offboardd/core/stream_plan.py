"""The stream plan (issue 18): ask PX4 for only what the daemon needs on its own link.

PX4 streams ~400 messages/s on an onboard link whether anyone reads them or not; the daemon
reads a handful. After the FC is identified (and again after a reboot or a return) the
planner sets, one MAV_CMD_SET_MESSAGE_INTERVAL at a time, the rate of each message the
daemon, its telemetry and the relay need, and turns off the rest of PX4's onboard
streams. PX4 applies the command to the link instance it arrives on, so a GCS on another
link keeps what it has. Each command is answered by a COMMAND_ACK that does not say which
message it was for, hence one at a time: the ACK is the result of the one in flight.

`build_plan` turns the configuration into (name, message id, rate Hz; 0 = off) rows;
`StreamPlanner` carries them out and reports what PX4 refused. Pure: time comes in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from offboardd.core.actions import SetMessageInterval, Target
from offboardd.core.events import AckResult
from offboardd.core.settings_checks import coerce_choice
from offboardd.errors import ConfigError

# What the daemon itself reads, and how often it wants it (Hz):
DAEMON_NEEDS_HZ: dict[str, float] = {
    "LOCAL_POSITION_NED": 30.0,  # PX4's own rate: estimates, the envelope's shaping, holds
    "ATTITUDE": 10.0,  # the heading (hold, keep yaw, body-frame velocity)
    "GLOBAL_POSITION_INT": 5.0,  # the global estimate, telemetry/position
    "EXTENDED_SYS_STATE": 2.0,  # landed state
    "ESTIMATOR_STATUS": 2.0,  # estimate validity
    "HOME_POSITION": 0.5,  # the fence's home (also asked for on demand)
    "SYS_STATUS": 1.0,  # battery, sensor health
}
# What the engine reads from PX4's streams all along (HOME_POSITION it also asks for on
# demand; SYS_STATUS only telemetry reads): an override may slow these, never turn them off.
ENGINE_STREAMS = ("LOCAL_POSITION_NED", "GLOBAL_POSITION_INT", "ATTITUDE",
                  "EXTENDED_SYS_STATE", "ESTIMATOR_STATUS")
# The two estimates the engine flies on. It calls one stale after [engine]
# estimate_timeout_s without its message, so each is asked for at least this many times per
# timeout: GLOBAL_POSITION_INT at 5/s was stale after two lost in a row (0.6 s), and global
# setpoints were refused.
ESTIMATE_MESSAGES = ("LOCAL_POSITION_NED", "GLOBAL_POSITION_INT")
PER_ESTIMATE_TIMEOUT = 4
# telemetry/<kind> is built from these messages: each gets at least the kind's rate.
TELEMETRY_SOURCES: dict[str, tuple[str, ...]] = {
    "position": ("GLOBAL_POSITION_INT", "LOCAL_POSITION_NED"),
    "velocity": ("LOCAL_POSITION_NED",),
    "attitude": ("ATTITUDE",),
    "battery": ("BATTERY_STATUS", "SYS_STATUS"),
    "gps": ("GPS_RAW_INT",),
    "home": ("HOME_POSITION",),
}
# What PX4 streams by default on an onboard link (MAVLINK_MODE_ONBOARD, the link instance
# offboardd talks to), name -> message id: the mode's list in PX4 main's mavlink_main.cpp
# (`mavlink status streams` of an onboard instance on PX4 SIH main, Nov 2026), which v1.16
# and v1.17 hold too but for a few newer ones. Whatever of these the plan does not need is
# off. Every stream counts, sending or not: PX4 fits a serial link's streams into its data
# rate by their configured rates and sizes (mavlink_main.cpp, update_rate_mult), so a stream
# left on that sends little still slows what the daemon asked for (a 57,600-baud line: the
# plan's LOCAL_POSITION_NED came at 9/s instead of 30 with ESC_INFO, ESC_STATUS and
# POSITION_TARGET_GLOBAL_INT left on; tests/px4/test_px4_slow_link.py). The ids are fixed by
# MAVLink; five pymavlink 2.4.50 does not know were read off PX4 main's wire, each set to
# 10/s and seen at that rate (290, 291, 514) or seen at its default rate (8, 380). Left out:
# ESC_EEPROM, FIGURE_EIGHT_EXECUTION_STATUS and FUEL_STATUS, silent on SIH, ids not seen.
# A release without a stream answers "failed" (v1.16.2: GNSS_INTEGRITY), reported in
# `refused`. (CURRENT_EVENT_SEQUENCE, sent on v1.16, and MISSION_CURRENT, ~1/s, are refused
# "failed" by main: left alone.)
PX4_ONBOARD_STREAMS: dict[str, int] = {
    "SYS_STATUS": 1, "SYSTEM_TIME": 2, "PING": 4, "LINK_NODE_STATUS": 8, "GPS_RAW_INT": 24,
    "GPS_STATUS": 25, "SCALED_PRESSURE": 29, "ATTITUDE": 30, "ATTITUDE_QUATERNION": 31,
    "LOCAL_POSITION_NED": 32, "GLOBAL_POSITION_INT": 33, "SERVO_OUTPUT_RAW": 36,
    "GPS_GLOBAL_ORIGIN": 49, "NAV_CONTROLLER_OUTPUT": 62, "RC_CHANNELS": 65, "VFR_HUD": 74,
    "ATTITUDE_TARGET": 83, "POSITION_TARGET_LOCAL_NED": 85, "POSITION_TARGET_GLOBAL_INT": 87,
    "HIGHRES_IMU": 105, "OPTICAL_FLOW_RAD": 106, "TIMESYNC": 111, "CAMERA_TRIGGER": 112,
    "GPS2_RAW": 124, "DISTANCE_SENSOR": 132, "ALTITUDE": 141, "BATTERY_STATUS": 147,
    "EFI_STATUS": 225, "ESTIMATOR_STATUS": 230, "WIND_COV": 231, "VIBRATION": 241,
    "HOME_POSITION": 242, "EXTENDED_SYS_STATE": 245, "ADSB_VEHICLE": 246, "DEBUG_VECT": 250,
    "NAMED_VALUE_FLOAT": 251, "DEBUG": 254, "CAMERA_IMAGE_CAPTURED": 263,
    "MOUNT_ORIENTATION": 265, "GIMBAL_MANAGER_STATUS": 281, "GIMBAL_DEVICE_SET_ATTITUDE": 284,
    "GIMBAL_DEVICE_ATTITUDE_STATUS": 285, "ESC_INFO": 290, "ESC_STATUS": 291,
    "OBSTACLE_DISTANCE": 330, "ODOMETRY": 331, "RAW_RPM": 339, "DEBUG_FLOAT_ARRAY": 350,
    "ORBIT_EXECUTION_STATUS": 360, "TIME_ESTIMATE_TO_TARGET": 380, "AVAILABLE_MODES": 435,
    "GNSS_INTEGRITY": 441, "ESTIMATOR_SENSOR_FUSION_STATUS": 514,
    "OPEN_DRONE_ID_LOCATION": 12901, "OPEN_DRONE_ID_SYSTEM": 12904,
    "OPEN_DRONE_ID_ARM_STATUS": 12918, "HYGROMETER_SENSOR": 12920,
}  # fmt: skip
# The rows go one per ACK, one a tick (~6 s for 57 at 10 Hz): PX4's heaviest streams
# first, so that what it sends drops within the first rows (these eight are ~330 of PX4
# SIH's ~430 messages and ~80 % of its bytes a second; ESC_INFO/ESC_STATUS are short on the
# wire but take 381 B of a serial link's budget at each send), the rest by name.
HEAVIEST = ("ATTITUDE", "ATTITUDE_QUATERNION", "GLOBAL_POSITION_INT", "HIGHRES_IMU",
            "ODOMETRY", "ESC_STATUS", "ESC_INFO", "LOCAL_POSITION_NED")
# Looked up here before the codec: a name beyond the slim dialect would load the full one.
_KNOWN_IDS = {**PX4_ONBOARD_STREAMS, "CURRENT_EVENT_SEQUENCE": 411}
# Never touched: HEARTBEAT is PX4's own 1 Hz; CURRENT_MODE is set by the connect checks.
# STATUSTEXT and COMMAND_LONG are streams PX4 adds to every link at start-up (20 Hz and
# unlimited), outside the modes' default lists: slowed, texts queue and drop (a relayed
# STATUSTEXT once asked for the relay's 5/s), and "default" (interval 0), which a restore
# sends, turns them off on that link until PX4 reboots (mavlink_main.cpp).
UNTOUCHED = frozenset({"HEARTBEAT", "CURRENT_MODE", "STATUSTEXT", "COMMAND_LONG"})
ACK_TIMEOUT_S = 0.5
RETRIES = 2
START_DELAY_S = 0.3  # after the version: the connect checks' own ACKs are in by then


class PlanKind(StrEnum):
    MINIMAL = "minimal"  # what the daemon needs, the rest of PX4's onboard streams off
    PX4 = "px4"  # leave PX4's streams as they are (a shared link: mavlink-router)


@dataclass(frozen=True)
class StreamPlanSettings:
    """`[mavlink.streams]`: `plan`, per-message `rates_hz` (0 = off), `restore_on_exit`."""

    plan: PlanKind = PlanKind.MINIMAL
    rates_hz: Mapping[str, float] = None  # type: ignore[assignment]  # set in __post_init__
    restore_on_exit: bool = False

    def __post_init__(self) -> None:
        if self.rates_hz is None:
            object.__setattr__(self, "rates_hz", {})
        coerce_choice(self, "plan", PlanKind)
        for name, hz in dict(self.rates_hz).items():
            if (isinstance(hz, bool) or not isinstance(hz, int | float) or not math.isfinite(hz)
                    or not 0 <= hz <= 500):
                raise ConfigError(f"rates_hz.{name} must be 0 (off) to 500 Hz, got {hz!r}")
            if name in UNTOUCHED:
                raise ConfigError(f"rates_hz.{name}: {name} is not the stream plan's to set")
            if hz == 0 and name in ENGINE_STREAMS:
                raise ConfigError(f"rates_hz.{name} = 0: the engine reads {name} all along; "
                                  "it may be slower, not off")


@dataclass(frozen=True)
class PlanRow:
    name: str
    message_id: int
    rate_hz: float  # 0: off (interval -1 on the wire)

    @property
    def interval_us(self) -> int:
        return -1 if self.rate_hz <= 0 else max(1, round(1e6 / self.rate_hz))


def build_plan(settings: StreamPlanSettings, telemetry_rates_hz: Mapping[str, float],
               relay: frozenset[str], relay_rate_hz: float, message_id: Any,
               *, estimate_timeout_s: float = 0.5) -> tuple[PlanRow, ...]:
    """The rows to set: needs (the estimates at least PER_ESTIMATE_TIMEOUT per
    `estimate_timeout_s`), raised to the telemetry and relay rates, then the overrides; the
    rest of PX4's onboard streams off. `message_id(name)` resolves names (the codec's).
    Empty for plan "px4" without overrides."""
    estimate_floor_hz = PER_ESTIMATE_TIMEOUT / estimate_timeout_s
    wanted: dict[str, float] = {}
    if settings.plan is PlanKind.MINIMAL:
        wanted = {name: 0.0 for name in PX4_ONBOARD_STREAMS}
        for name, hz in DAEMON_NEEDS_HZ.items():
            floor_hz = estimate_floor_hz if name in ESTIMATE_MESSAGES else 0.0
            wanted[name] = max(wanted.get(name, 0.0), hz, floor_hz)
        for kind, hz in telemetry_rates_hz.items():
            for name in TELEMETRY_SOURCES.get(kind, ()):
                wanted[name] = max(wanted.get(name, 0.0), float(hz))
        for name in relay:
            wanted[name] = max(wanted.get(name, 0.0), relay_rate_hz)
    wanted.update({name: float(hz) for name, hz in settings.rates_hz.items()})
    for name in ESTIMATE_MESSAGES:
        override_hz = settings.rates_hz.get(name)
        if override_hz is not None and override_hz < estimate_floor_hz:
            # the whole key, as the section's own checks say it: config.py adds the section
            # to those, not to this one (raised later, while the plan is built)
            raise ConfigError(
                f"mavlink.streams.rates_hz.{name} = {override_hz:g}: the engine calls the "
                f"estimate stale after [engine] estimate_timeout_s = {estimate_timeout_s:g} s "
                f"without it; ask for at least {estimate_floor_hz:g}/s, or raise the timeout")
    rows = []
    for name in sorted(wanted, key=lambda n: (HEAVIEST.index(n) if n in HEAVIEST
                                              else len(HEAVIEST), n)):
        if name in UNTOUCHED:
            continue
        msg_id = _KNOWN_IDS.get(name) or message_id(name)
        if msg_id is None:  # named where the user wrote it (the relay's once read as ours)
            where = ("[mavlink.streams] rates_hz" if name in settings.rates_hz
                     else "[mqtt] mavlink_relay")
            raise ConfigError(f"{where}: {name} is not a MAVLink message name")
        rows.append(PlanRow(name, int(msg_id), wanted[name]))
    return tuple(rows)


class StreamPlanner:
    """Carries the plan out on each (re)appearance of the FC: one command in flight."""

    def __init__(self, rows: tuple[PlanRow, ...]) -> None:
        self.rows = rows
        self._queue: list[PlanRow] = []
        self._in_flight: PlanRow | None = None
        self._tries = 0
        self._next_s: float | None = None
        # After a row sent more than once, or never answered, a late ACK of an earlier copy
        # may still come: until then ACKs are swallowed and the next row waits, or that ACK
        # would be taken for the next row's and every result after it shifted by one.
        self._late_acks_until_s = -math.inf
        # Rows unanswered once go again after the rest: a radio gap of 1.5-3 s (shorter than
        # fc_timeout_s, so the FC is not lost and the plan not restarted) would otherwise
        # leave them unset until the next reconnect.
        self._second_round: set[str] = set()
        self.applied: list[str] = []
        self.refused: dict[str, str] = {}  # name -> MAV_RESULT name, or "no answer" (twice)

    def start(self, now: float) -> None:
        """The FC was identified (its version is in): carry the plan out from the top."""
        if not self.rows:
            return
        self._queue = list(self.rows)
        self._in_flight = None
        self._late_acks_until_s = -math.inf
        self._second_round = set()
        self.applied, self.refused = [], {}
        self._next_s = now + START_DELAY_S

    def stop(self) -> None:
        """The FC is gone: what was not done is done again on its return."""
        self._queue, self._in_flight, self._next_s = [], None, None

    def deadline(self) -> float:
        return math.inf if self._next_s is None else self._next_s

    def poll(self, now: float, target: Target) -> list[SetMessageInterval]:
        if self._next_s is None or now < self._next_s:
            return []
        if self._in_flight is not None:  # no ACK in time
            if self._tries <= RETRIES:
                return self._send(self._in_flight, now, target)
            row, self._in_flight = self._in_flight, None
            if row.name in self._second_round:
                self.refused[row.name] = "no answer"
            else:
                self._second_round.add(row.name)
                self._queue.append(row)
            self._wait_for_late_acks(now)
            return []
        if not self._queue:
            self._next_s = None
            return []
        self._tries = 0
        return self._send(self._queue.pop(0), now, target)

    def _send(self, row: PlanRow, now: float, target: Target) -> list[SetMessageInterval]:
        self._in_flight, self._tries = row, self._tries + 1
        self._next_s = now + ACK_TIMEOUT_S
        return [SetMessageInterval(target, row.message_id, row.interval_us)]

    def on_ack(self, result: int, now: float) -> bool:
        """A COMMAND_ACK for SET_MESSAGE_INTERVAL: the one in flight's. True if it was ours."""
        row = self._in_flight
        if row is None:
            return now <= self._late_acks_until_s  # a late copy's: ours, and no news
        self._in_flight = None
        if result == AckResult.ACCEPTED:
            self.applied.append(row.name)
        else:
            try:
                self.refused[row.name] = AckResult(result).name.lower()
            except ValueError:
                self.refused[row.name] = f"result {result}"
        if self._tries > 1:  # an earlier copy's ACK may still be on its way
            self._wait_for_late_acks(now)
        else:
            self._next_s = now  # the next one at once
        return True

    def _wait_for_late_acks(self, now: float) -> None:
        """After `_tries` copies of a row: if the ACK just in (or the first, late) answered the
        first copy, the last copy's comes (tries - 1) send intervals later."""
        self._late_acks_until_s = self._next_s = (
            now + (self._tries - 1) * ACK_TIMEOUT_S + ACK_TIMEOUT_S / 2)

    def restore(self, target: Target) -> list[SetMessageInterval]:
        """Back to PX4's defaults (interval 0) for what the plan may have set: a clean stop.
        The unanswered rows too (the command may have landed and only its ACK been lost);
        not the refused ones, which PX4 said it did not apply."""
        unanswered = {name for name in self._second_round  # (refused later: PX4 said no)
                      if self.refused.get(name, "no answer") == "no answer"}
        if self._in_flight is not None:
            unanswered.add(self._in_flight.name)
        return [SetMessageInterval(target, row.message_id, 0) for row in self.rows
                if row.name in self.applied or row.name in unanswered]

    def snapshot(self) -> dict[str, Any] | None:
        if not self.rows:
            return None
        return {"rows": len(self.rows), "applied": len(self.applied),
                "pending": len(self.rows) - len(self.applied) - len(self.refused),
                "refused": dict(self.refused)}
