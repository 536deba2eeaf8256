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
