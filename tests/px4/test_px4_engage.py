"""Real PX4: offboard take-off (warm-up, OFFBOARD confirmed from PX4's reports, arming)."""

from __future__ import annotations

from pathlib import Path

from offboardd.core.setpoints import PositionNed
from tests.conftest import Broker
from tests.px4.px4_process import Px4Sitl
from tests.px4.stack import flying_stack
from tests.px4.tee import OFFBOARD


async def test_offboard_takeoff_streams_1_s_before_asking_and_px4_confirms(
    px4: Px4Sitl, mosquitto: Broker, tmp_path: Path, measured: dict[str, object]
) -> None:
    async with flying_stack(px4, mosquitto, tmp_path) as s:
        state = await s.fc_ready()
        assert state["fc_is_px4"] and state["fc_version"].startswith("v1.")
        reply = await s.client.engage(PositionNed(0.0, 0.0, -5.0), arm=True)
        assert reply.ok, reply
        r = s.record
        first_setpoint_t = r.setpoints[0].t
        (request,) = r.offboard_requests()
        offboard_t = next(t for t, mode in r.modes if mode == OFFBOARD)
        armed_t = next(t for t, armed in r.armed if armed)
        # our rule, PX4 does not enforce it: >= 1 s of valid stream before asking (timed on
        # the wire here, so 10 ms of slack for two datagrams' scheduling; the engine's own
        # >= 1.0 s on its clock is proven exactly in tests/core)
        assert request.t - first_setpoint_t >= 0.99
        assert offboard_t > request.t
        climbed_t = await s.at_altitude(5.0, timeout_s=20)
        now = s.client.state
        assert now is not None and now["phase"] == "active" and now["in_control"]
        # DO_SET_MODE's answers (v1.16.2 sent two, main one): the daemon confirms the mode
        # from telemetry either way; counted, never required
        mode_acks = [a for a in r.acks if a.fields["command"] == 176 and request.t <= a.t < armed_t]
        measured.update(
            px4_version=state["fc_version"],
            do_set_mode_acks=[int(a.fields["result"]) for a in mode_acks],
            warmup_to_request_s=round(request.t - first_setpoint_t, 3),
            request_to_offboard_s=round(offboard_t - request.t, 3),
            offboard_to_armed_s=round(armed_t - offboard_t, 3),
            engage_reply_after_first_setpoint_s=round(armed_t - first_setpoint_t, 3),
            climb_to_5m_s=round(climbed_t - armed_t, 2),
        )
