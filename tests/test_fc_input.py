"""FcInput: what the telemetry cache takes once the engine follows an autopilot."""

from __future__ import annotations

from offboardd.fc_input import FcInput
from offboardd.mavlink.codec import MavlinkCodec, dialect


def test_telemetry_is_the_autopilots_not_another_components() -> None:
    """PX4 forwards its other components' traffic: a gimbal's ATTITUDE must not become the
    vehicle's attitude on MQTT (found with the review of the engine's component check)."""
    fc_input = FcInput(MavlinkCodec(255, 0), 0, None, lambda _msg: None, whole_frames=True)
    fc_input.fc_target = (1, 1)
    px4, gimbal = MavlinkCodec(1, 1), MavlinkCodec(1, 154)
    fc_input.decode(px4.encode(dialect.MAVLink_attitude_message(10, 0.1, 0.0, 0.5, 0, 0, 0)), 0.0)
    fc_input.decode(gimbal.encode(dialect.MAVLink_attitude_message(3, 0.0, 0.9, 2.0, 0, 0, 0)), 0.1)
    attitude = fc_input.telemetry.document("attitude")
    assert attitude is not None
    assert abs(attitude["roll_rad"] - 0.1) < 1e-6 and abs(attitude["yaw_rad"] - 0.5) < 1e-6


class _Relay:
    def __init__(self) -> None:
        self.sent: list[tuple[str, float]] = []

    def wants_mavlink(self, name: str) -> bool:
        return name == "ATTITUDE"

    def relay_mavlink(self, name: str, fields: dict[str, float]) -> None:
        self.sent.append((name, fields["yaw"]))


def test_the_mavlink_relay_is_the_followed_fcs_only() -> None:
    """A relayed document names no sender: a gimbal's ATTITUDE and another vehicle's were
    published at mavlink/ATTITUDE as the FC's (review, 2026-11-29)."""
    relay = _Relay()
    fc_input = FcInput(MavlinkCodec(255, 0), 0, relay,  # type: ignore[arg-type]
                       lambda _msg: None, whole_frames=True)
    fc_input.fc_target = (1, 1)
    for (system, component), yaw in (((1, 1), 0.1), ((1, 154), 2.0), ((2, 1), -3.0)):
        frame = MavlinkCodec(system, component).encode(
            dialect.MAVLink_attitude_message(10, 0.0, 0.0, yaw, 0, 0, 0))
        fc_input.decode(frame, 0.0)
    assert [(name, round(yaw, 3)) for name, yaw in relay.sent] == [("ATTITUDE", 0.1)]
