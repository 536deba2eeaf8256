"""Telemetry profiles (rates per message type) and the per-link stream scheduler.

"px4" copies what PX4 SIH main sends on its onboard link :14580 -> :14540, counted by
message id on the wire (Nov 2026, ~430 msg/s of 35 types: ATTITUDE 100/s,
ATTITUDE_QUATERNION, GLOBAL_POSITION_INT and HIGHRES_IMU 50/s, LOCAL_POSITION_NED and
ODOMETRY 30/s, nine at ~10/s, ESC_INFO and ESC_STATUS among them, the rest at 0.5-8/s;
px4-offboard.md §5; v1.16.2 and v1.17.0 send the same set less ESC_INFO, ESC_STATUS and
ESTIMATOR_SENSOR_FUSION_STATUS, and v1.16.2 less GNSS_INTEGRITY: ~407 msg/s, which the sim
plays by release, px4_versions.py), the messages the sim does not model replayed as PX4
sent them (telemetry.REPLAYED); "gcs" is PX4's normal-mode GCS link;
"light" suits a slow serial link; "heavy" adds ~1,600 msg/s of filler sent from
pre-encoded frames so a benchmark load costs almost nothing to generate.
SET_MESSAGE_INTERVAL changes one link's rates. `SimLink` holds one link's codec, streams
and pending frames. No I/O, no clock: `now_s` comes in; encoding is done with the link's
own codec.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from offboardd.mavlink.codec import MavlinkCodec, Message, dialect
from offboardd.sim.current_mode_stream import CurrentModeStream
from offboardd.sim.transports import FrameSender

PROFILES: dict[str, dict[str, float]] = {
    "px4": {
        "HEARTBEAT": 1.0, "ATTITUDE": 100.0, "ATTITUDE_QUATERNION": 50.0,
        "GLOBAL_POSITION_INT": 50.0, "HIGHRES_IMU": 50.0, "LOCAL_POSITION_NED": 30.0,
        "ODOMETRY": 30.0, "TIMESYNC": 10.0, "ALTITUDE": 10.0, "VFR_HUD": 10.0,
        "SERVO_OUTPUT_RAW": 10.0, "POSITION_TARGET_LOCAL_NED": 10.0,
        "ATTITUDE_TARGET": 10.0, "DISTANCE_SENSOR": 10.0, "ESC_INFO": 10.0,
        "ESC_STATUS": 10.0, "GPS_RAW_INT": 8.0, "SYS_STATUS": 5.0, "EXTENDED_SYS_STATE": 5.0,
        "ESTIMATOR_STATUS": 1.0, "ESTIMATOR_SENSOR_FUSION_STATUS": 1.0, "GNSS_INTEGRITY": 1.0,
        "LINK_NODE_STATUS": 1.0, "MISSION_CURRENT": 1.0, "OPEN_DRONE_ID_LOCATION": 1.0,
        "OPEN_DRONE_ID_SYSTEM": 1.0, "PING": 1.0, "SCALED_PRESSURE": 1.0, "SYSTEM_TIME": 1.0,
        "BATTERY_STATUS": 0.5, "HOME_POSITION": 0.5, "VIBRATION": 0.5,
        "TIME_ESTIMATE_TO_TARGET": 0.5, "CURRENT_EVENT_SEQUENCE": 1.0,
    },
    "gcs": {
        "HEARTBEAT": 1.0, "ATTITUDE": 20.0, "GLOBAL_POSITION_INT": 5.0,
        "LOCAL_POSITION_NED": 5.0, "VFR_HUD": 4.0, "SYS_STATUS": 1.0,
        "EXTENDED_SYS_STATE": 1.0, "BATTERY_STATUS": 0.5, "HOME_POSITION": 0.5,
        "GPS_RAW_INT": 1.0, "ESTIMATOR_STATUS": 1.0,
    },
    "light": {
        "HEARTBEAT": 1.0, "ATTITUDE": 5.0, "LOCAL_POSITION_NED": 5.0,
        "GLOBAL_POSITION_INT": 2.0, "EXTENDED_SYS_STATE": 2.0, "SYS_STATUS": 1.0,
        "ESTIMATOR_STATUS": 1.0, "GPS_RAW_INT": 1.0, "BATTERY_STATUS": 0.5,
        "HOME_POSITION": 0.5,
    },
}  # fmt: skip
PROFILES["heavy"] = dict(PROFILES["px4"])
# What PX4's onboard mode configures at "unlimited" rate among the streams it sends (the
# profile's rate is what SIH produces): GET_MESSAGE_INTERVAL answers -1 for it.
UNLIMITED_STREAMS = frozenset({"GPS_RAW_INT"})
# Filler for "heavy": (message, rate_hz); sent pre-encoded, content static.
HEAVY_FILLER_HZ: dict[str, float] = {
    "SCALED_IMU": 400.0, "SCALED_IMU2": 400.0, "RAW_IMU": 400.0, "SCALED_PRESSURE": 400.0,
}  # fmt: skip
# PX4 v1.16 [SITL]: ~1.5-2 Hz at rest, plus one per mode change (v1.17+:
# current_mode_stream.py)
CURRENT_MODE_MIN_PERIOD_S = 0.55
_MAX_LATE_S = 0.25  # further behind than this (a pause, a stall): restart, do not flood
# PX4 fits its streams to a serial link's data rate (mavlink_main.cpp, update_rate_mult):
# the configured rate is baud/20 bytes/s (half the line: the rest is for parameters,
# commands, acks) unless MAV_x_RATE says otherwise; every stream but the constant-rate
# ones is slowed by one multiplier (at most 1 without flow control, at least 0.05) so the
# streams' bytes fit. Sizes are whole MAVLink 2 frames with full payloads, as PX4 counts.
CONST_RATE_STREAMS = frozenset({"HEARTBEAT", "ADSB_VEHICLE"})
# What PX4 main's onboard mode also counts against a serial link's data rate, though
# neither PX4 SIH nor the sim sends it: update_rate_mult sums every stream's configured
# rate x frame size, sending or not (`mavlink status streams` of an onboard instance of PX4
# SIH main at 57,600 baud). STATUSTEXT is budgeted at 20/s whether texts come or not;
# ADSB_VEHICLE from v1.18 only (px4_versions.py, silent_ids).
# name -> (message id, Hz, frame bytes); SET_MESSAGE_INTERVAL changes them.
PX4_UNSENT_STREAMS: dict[str, tuple[int, float, int]] = {
    "STATUSTEXT": (253, 20.0, 66), "POSITION_TARGET_GLOBAL_INT": (87, 10.0, 63),
    "ADSB_VEHICLE": (246, 5.0, 50), "GPS_GLOBAL_ORIGIN": (49, 1.0, 32),
}  # fmt: skip
# PX4's own size of a stream where it is not one full frame of pymavlink's: ESC_INFO and
# ESC_STATUS budget three frames (PX4 main's status table), and the messages pymavlink lacks.
# MISSION_CURRENT comes from PX4's mission manager, not a stream: never budgeted.
PX4_FRAME_BYTES: dict[str, int] = {
    "ESC_INFO": 174, "ESC_STATUS": 207, "LINK_NODE_STATUS": 48, "TIME_ESTIMATE_TO_TARGET": 32,
    "ESTIMATOR_SENSOR_FUSION_STATUS": 66, "MISSION_CURRENT": 0,
}  # fmt: skip
UNSENT_STREAM_IDS: dict[int, str] = {mid: n for n, (mid, _, _) in PX4_UNSENT_STREAMS.items()}
_MIN_RATE_MULT = 0.05
_NON_PAYLOAD_BYTES = 12  # MAVLink 2 header (10) and checksum (2)


def frame_bytes(name: str) -> int:
    if name in PX4_FRAME_BYTES:
        return PX4_FRAME_BYTES[name]
    cls = getattr(dialect, f"MAVLink_{name.lower()}_message", None)
    return _NON_PAYLOAD_BYTES + (cls.unpacker.size if cls is not None else 32)


def _filler_message(name: str) -> Message:
    d = dialect
    if name == "SCALED_IMU":
        return d.MAVLink_scaled_imu_message(0, 0, 0, -1000, 0, 0, 0, 200, 0, 400, 2500)
    if name == "SCALED_IMU2":
        return d.MAVLink_scaled_imu2_message(0, 0, 0, -1000, 0, 0, 0, 200, 0, 400, 2500)
    if name == "RAW_IMU":
        return d.MAVLink_raw_imu_message(0, 0, 0, -1000, 0, 0, 0, 200, 0, 400, 0, 2500)
    return d.MAVLink_scaled_pressure_message(0, 955.0, 0.0, 2500, 0)


class PrebuiltFrames:
    """One frame per sequence number for each filler message, built once per link."""

    def __init__(self, system_id: int, component_id: int) -> None:
        mav = dialect.MAVLink(None, srcSystem=system_id, srcComponent=component_id)
        self.frames: dict[str, list[bytes]] = {}
        for name in HEAVY_FILLER_HZ:
            msg = _filler_message(name)
            table = []
            for seq in range(256):
                mav.seq = seq
                table.append(bytes(msg.pack(mav)))
            self.frames[name] = table

    def take(self, name: str, codec: MavlinkCodec) -> bytes:
        """The frame carrying the codec's next sequence number; advances it like encode()."""
        if codec.signing:  # a signed frame carries a fresh timestamp: nothing to prebuild
            return codec.encode(_filler_message(name))
        seq = codec.mav.seq
        codec.mav.seq = (seq + 1) % 256
        codec.stats.frames_sent += 1
        frame: bytes = self.frames[name][seq]
        return frame


class StreamScheduler:
    """Which stream messages are due on one link; rates changeable per message."""

    def __init__(self, rates_hz: Mapping[str, float], now_s: float,
                 datarate_b_s: float | None = None, *, unsent: Collection[str] = (),
                 unlimited: Collection[str] = ()) -> None:  # fmt: skip
        """`unsent`: which of PX4_UNSENT_STREAMS to count in the fitting, as PX4's onboard
        mode does (all of them on main; before v1.18 not ADSB_VEHICLE). `unlimited`: the
        streams PX4 configures at "unlimited" rate (every update), whose interval it
        reports as -1 until one is set."""
        self._defaults = dict(rates_hz)
        self._default_unlimited = frozenset(unlimited)
        self._unlimited = set(unlimited)
        self._period_s: dict[str, float] = {n: 1.0 / r for n, r in rates_hz.items() if r > 0}
        self._unsent_hz = {n: hz for n, (_, hz, _) in PX4_UNSENT_STREAMS.items() if n in unsent}
        self._next_s: dict[str, float] = {}
        self.datarate_b_s = datarate_b_s  # a serial link's: streams fit into it (PX4's rule)
        self.rate_mult = 1.0
        self._fit_to_datarate()
        # Spread first sends over a period so streams do not all fire in one tick.
        for i, name in enumerate(sorted(self._period_s)):
            self._next_s[name] = now_s + (i * 0.0037) % self._period_s[name]

    def _fit_to_datarate(self) -> None:
        if self.datarate_b_s is None:
            return
        const_b_s = scaled_b_s = 0.0
        budgeted = [(n, frame_bytes(n) / p) for n, p in self._period_s.items()]
        budgeted += [(n, PX4_UNSENT_STREAMS[n][2] * hz) for n, hz in self._unsent_hz.items()]
        for name, b_s in budgeted:
            if name in CONST_RATE_STREAMS:
                const_b_s += b_s
            else:
                scaled_b_s += b_s
        mult = (self.datarate_b_s - const_b_s) / scaled_b_s if scaled_b_s else 1.0
        self.rate_mult = max(_MIN_RATE_MULT, min(1.0, mult))

    def _period(self, name: str) -> float:
        period_s = self._period_s[name]
        return period_s if name in CONST_RATE_STREAMS else period_s / self.rate_mult

    @property
    def rates_hz(self) -> dict[str, float]:
        return {n: 1.0 / p for n, p in self._period_s.items()}

    def set_interval(self, name: str, interval_us: float, now_s: float) -> None:
        """MAV_CMD_SET_MESSAGE_INTERVAL: -1 stops, 0 restores the default, >0 sets it."""
        if name in PX4_UNSENT_STREAMS and name not in self._period_s:
            self._set_unsent(name, interval_us)
            return
        # 0 for a message outside the profile: PX4 "assumes it is disabled by default" and
        # stops it (mavlink_main.cpp, configure_streams_to_default)
        if interval_us < 0 or (interval_us == 0 and name != "CURRENT_MODE"
                               and name not in self._defaults):
            self._period_s.pop(name, None)
            self._next_s.pop(name, None)
            self._fit_to_datarate()
            return
        if interval_us > 0:
            period_s = interval_us / 1e6
            self._unlimited.discard(name)
        elif name == "CURRENT_MODE":  # 0: PX4's own rate for it, ~1.5-2 Hz at rest [SITL]
            period_s = CURRENT_MODE_MIN_PERIOD_S
        else:  # 0: the default rate (PX4's "unlimited" again where that is its default)
            period_s = 1.0 / self._defaults[name]
            if name in self._default_unlimited:
                self._unlimited.add(name)
        if name == "CURRENT_MODE":
            period_s = max(period_s, CURRENT_MODE_MIN_PERIOD_S)
        self._period_s[name] = period_s
        self._next_s[name] = now_s
        self._fit_to_datarate()

    def interval_us(self, name: str) -> int | None:
        """What PX4 answers MAV_CMD_GET_MESSAGE_INTERVAL with: the configured interval in
        µs (not slowed by a serial link's multiplier), -1 for a stream sent at
        "unlimited" rate, None for one the link does not have or has stopped
        (mavlink_receiver.cpp, get_message_interval: [SITL main] LOCAL_POSITION_NED
        33333, GPS_RAW_INT -1)."""
        if name in self._period_s:
            return -1 if name in self._unlimited else int(self._period_s[name] * 1e6)
        if name in self._unsent_hz:
            return int(1e6 / self._unsent_hz[name])
        return None

    def _set_unsent(self, name: str, interval_us: float) -> None:
        if interval_us < 0:
            self._unsent_hz.pop(name, None)
        elif interval_us == 0:
            self._unsent_hz[name] = PX4_UNSENT_STREAMS[name][1]
        else:
            self._unsent_hz[name] = 1e6 / interval_us
        self._fit_to_datarate()

    def enabled(self, name: str) -> bool:
        return name in self._period_s

    def due(self, now_s: float) -> list[str]:
        out: list[str] = []
        for name, next_s in self._next_s.items():
            if next_s > now_s:
                continue
            period = self._period(name)
            count = int((now_s - next_s) / period) + 1
            if now_s - next_s > _MAX_LATE_S:
                self._next_s[name] = now_s + period
                count = 1
            else:
                self._next_s[name] = next_s + count * period
            out.extend([name] * count)
        return out

    def restart(self, now_s: float) -> None:
        for name in self._next_s:
            self._next_s[name] = now_s


@dataclass
class SimLink:
    """One served link: name ("udp", "gcs", "tcp", "pty"), codec, streams, pending frames."""

    link_id: int
    name: str
    profile: str
    codec: MavlinkCodec
    streams: StreamScheduler
    sender: FrameSender | None = None
    prebuilt: PrebuiltFrames | None = None
    filler: StreamScheduler | None = None
    is_gcs: bool = False  # a GCS heartbeat was seen on it
    current_mode: CurrentModeStream | None = None  # v1.17+ CURRENT_MODE, once requested
    paused_until_s: float = -math.inf  # link pause / drop fault (inf = dropped)
    loss_fraction: float = 0.0  # packet loss fault: this share of frames lost each way
    rng: random.Random = field(default_factory=lambda: random.Random(4))  # reproducible
    received_msgs: int = 0
    pending: list[bytes] = field(default_factory=list)

    def paused(self, now_s: float) -> bool:
        return now_s < self.paused_until_s

    def wants_current_mode(self) -> bool:
        return self.current_mode is not None or self.streams.enabled("CURRENT_MODE")
