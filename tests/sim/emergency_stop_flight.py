"""`emergency_stop` in flight, judged the same way on real PX4 SIH
(tests/px4/test_px4_emergency_stop.py) and on the sim with the daemon and a real broker
(tests/sim/test_emergency_stop.py): a differential test, the sim held to what PX4 does.

The commander's client first sends a plain `disarm` at ALT_M over the vehicle's origin: the
daemon refuses it (`disarm_in_flight`: PX4 reports the vehicle in the air) and sends
nothing. Then `emergency_stop`. What must follow, on either vehicle: the reply ok
("disarmed"), one force-disarm (param1 0, param2 21196) ACKed ACCEPTED, the FC disarmed
(its HEARTBEAT), the vehicle on the ground about as soon as a fall from ALT_M allows, no
setpoint after the request, no OFFBOARD or arm request, and the daemon in `failsafe` for
`emergency_stop`, not streaming; PX4 stays in OFFBOARD, disarmed.

[SITL main 2026-11-29] four runs: replied 0.13-0.27 s, HEARTBEAT disarmed 0.10-0.25 s,
on the ground 1.29-1.33 s after the request (the climb stops ~0.1 s in, then ~1.16 s of
fall from 4.64 m, 6.5 m/s at the ground: gravity against SIH's linear drag of 1/s). The
sim: 0.19 s, 0.002 s, 1.18 s (1.00 s before its fall had the drag).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ALT_M = 5.0
FORCE_DISARM = (0.0, 21196.0)
MAV_RESULT_ACCEPTED = 0


@dataclass(frozen=True)
class StopSeen:
    """What a run saw, times in s from the request."""

    disarm_refused: str  # the plain disarm's reply: its reason
    reply_ok: bool
    reply_message: str
    replied_s: float
    disarm_params: list[tuple[float, float]]  # (param1, param2) of each ARM_DISARM sent
    # (from the plain disarm on)
    ack_results: list[int]
    disarmed_s: float | None  # the first HEARTBEAT disarmed
    fell_s: float  # below 0.3 m and still
    setpoints_after_s: list[float]  # any setpoint sent 0.1 s after the request or later
    offboard_requests_after: int
    arm_requests_after: int
    phase: str
    reason: str
    streaming: bool
    armed_state: bool  # the daemon's state
    modes_after: list[str]  # mode changes reported after the request

    def figures(self) -> dict[str, object]:
        out = asdict(self)
        for key in ("replied_s", "disarmed_s", "fell_s"):
            if out[key] is not None:
                out[key] = round(out[key], 3)
        return out


def check_stop(seen: StopSeen) -> None:
    figures = seen.figures()
    assert seen.disarm_refused == "disarm_in_flight", figures
    assert seen.reply_ok and "disarmed" in seen.reply_message, figures
    assert seen.disarm_params == [FORCE_DISARM], figures
    assert seen.ack_results == [MAV_RESULT_ACCEPTED], figures
    # the reply waits for the HEARTBEAT that shows it disarmed (1 Hz at most on PX4)
    assert seen.replied_s < 1.3, figures
    assert seen.disarmed_s is not None and seen.disarmed_s < 1.3, figures
    # From ~4.6 m, still climbing: SIH's drag (SIH_KDV / SIH_MASS, 1/s) holds the fall to
    # ~1.2 s, where a fall in vacuum takes 0.97 s (the sim's, before it had the drag: 1.00)
    assert 1.05 < seen.fell_s < 1.7, figures
    assert seen.setpoints_after_s == [], figures
    assert seen.offboard_requests_after == 0 and seen.arm_requests_after == 0, figures
    assert (seen.phase, seen.reason) == ("failsafe", "emergency_stop"), figures
    assert not seen.streaming and not seen.armed_state, figures
    assert seen.modes_after == [], figures  # disarmed in OFFBOARD, it stays there
