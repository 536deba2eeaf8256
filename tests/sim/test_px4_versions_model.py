"""What changes between PX4 releases, on the pure model with injected time (10 ms ticks).

One test per PX4 behaviour (px4-offboard.md §7, offboardd/sim/px4_versions.py), named
after the release that introduced it; the v1.16 tests say the old behaviour stays.
"""

from __future__ import annotations

import itertools
import math

import pytest

from offboardd.mavlink.codec import Message
from offboardd.sim import SimConfig
from offboardd.sim.current_mode_stream import CurrentModeStream
from offboardd.sim.outbox import TO_CURRENT_MODE, Outgoing
from offboardd.sim.vehicle import Vehicle
from tests.sim.client import OFFBOARD, d, position_sp
from tests.sim.test_model import TICK_S, Harness


def _fly_then_lose_the_stream(h: Harness) -> float:
    """Armed in OFFBOARD at 2 m, stream stopped: the time of the last setpoint."""
    h.offboard_armed(lambda: position_sp(down=-2.0))
    h.run(3.0)
    h.stream = None
    last = h.last_sent_s
    h.run(1.5)
    return last


@pytest.mark.parametrize("version", ["1.17", "1.18"])
def test_v1_17_offboard_loss_without_rc_takes_nav_rcl_act_return(version: str) -> None:
    """PX4-Autopilot#26391; [SITL main] COM_OBL_RC_ACT=0 -> AUTO.RTL 1.09-1.13 s after the
    last valid setpoint, OFFBOARD again 0.03 s after setpoints resume."""
    h = Harness(px4_version=version)
    last = _fly_then_lose_the_stream(h)
    fallback = h.v.record.changes_to("AUTO.RTL")
    assert [m.cause for m in fallback] == ["failsafe"]
    assert 1.0 <= fallback[0].time_s - last <= 1.2
    assert not h.v.record.changes_to("POSCTL")
    assert h.v.intended_mode_name == "OFFBOARD" and h.v.armed
    h.stream = lambda: position_sp(down=-2.0)
    start = h.t
    h.run(0.2)
    back = h.v.record.changes_to("OFFBOARD")[-1]
    assert back.cause == "offboard resumed"
    assert 0.02 <= back.time_s - start - TICK_S <= 0.04 + 1e-6


def test_v1_16_offboard_loss_without_rc_still_reports_position() -> None:
    """[SITL] v1.16.2: Position without RC, descends (the sim's old behaviour stays)."""
    h = Harness(px4_version="1.16")
    _fly_then_lose_the_stream(h)
    assert h.v.mode_name == "POSCTL" and not h.v.record.changes_to("AUTO.RTL")
    assert h.v.velocity_ned_m_s[2] > 0.4  # sinking


@pytest.mark.parametrize(
    ("version", "nav_rcl_act", "expect"),
    [("1.17", 1, "AUTO.LOITER"), ("1.17", 3, "AUTO.LAND"), ("1.17", 5, "terminated"),
     ("1.17", 6, None), ("1.18", 7, "OFFBOARD"), ("1.17", 7, "AUTO.LAND"),
     ("1.18", 0, "OFFBOARD"), ("1.17", 0, "OFFBOARD")],
)  # fmt: skip
def test_v1_17_offboard_loss_without_rc_follows_any_nav_rcl_act(
    version: str, nav_rcl_act: int, expect: str | None
) -> None:
    """1 Hold, 3 Land, 5 Terminate (armed, no motor, TERMINATION reported: modes.MotorCut)
    / 6 Disarm; 0 Disabled and v1.18's 7 "Hold mode (no failsafe)" (#27792): no failsafe,
    still OFFBOARD ([SITL v1.17.0, main]); a value the release does not know: Land
    (unmeasured)."""
    h = Harness(px4_version=version, params={"NAV_RCL_ACT": nav_rcl_act})
    _fly_then_lose_the_stream(h)
    if expect is None:
        assert not h.v.armed
    elif expect == "terminated":
        assert h.v.armed and h.v.commander.terminated and h.v.mode_name == "TERMINATION"
    else:
        assert h.v.armed and h.v.mode_name == expect


@pytest.mark.parametrize("action", [1, 2])
def test_v1_17_altitude_and_stabilized_loss_actions_without_rc_take_nav_rcl_act_too(
    action: int,
) -> None:
    h = Harness(px4_version="1.17", params={"COM_OBL_RC_ACT": action, "NAV_RCL_ACT": 1})
    _fly_then_lose_the_stream(h)
    assert h.v.mode_name == "AUTO.LOITER"


def test_v1_18_com_obl_rc_act_hold_is_still_hold_without_rc() -> None:
    """[SITL main] COM_OBL_RC_ACT=5 -> AUTO.LOITER (1.05 s): not a manual mode, untouched."""
    h = Harness(px4_version="1.18", params={"COM_OBL_RC_ACT": 5})
    last = _fly_then_lose_the_stream(h)
    hold = h.v.record.changes_to("AUTO.LOITER")
    assert len(hold) == 1 and 1.0 <= hold[0].time_s - last <= 1.2


def test_v1_17_offboard_loss_with_rc_present_keeps_position() -> None:
    """#26391 only applies without manual control: with RC (the pilot touched the sticks,
    COM_RC_OVERRIDE = 1 does not take over in offboard) Position is flown."""
    h = Harness(px4_version="1.17")
    h.offboard_armed(lambda: position_sp(down=-2.0))
    h.run(2.0)
    h.v.rc_takeover(h.t)
    assert h.v.mode_name == "OFFBOARD"
    h.stream = None
    h.run(1.5)
    assert h.v.mode_name == "POSCTL"
    assert abs(h.v.velocity_ned_m_s[2]) < 0.1  # RC there: Position holds


@pytest.mark.parametrize(("man_override_spd", "expect"), [(1.0, "POSCTL"), (-1.0, "OFFBOARD")])
def test_v1_18_stick_override_follows_man_override_spd_in_offboard(
    man_override_spd: float, expect: str
) -> None:
    """#27041: one rule for auto and offboard modes; negative disables."""
    h = Harness(px4_version="1.18", params={"MAN_OVERRIDE_SPD": man_override_spd})
    h.offboard_armed(lambda: position_sp(down=-2.0))
    h.run(2.0)
    h.v.rc_takeover(h.t)
    assert h.v.mode_name == expect


def test_unknown_release_and_release_less_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="px4_version"):
        SimConfig(px4_version="1.19")
    with pytest.raises(ValueError, match="COM_RC_OVERRIDE"):
        Vehicle(SimConfig(px4_version="1.18", params={"COM_RC_OVERRIDE": 2}), 0.0)
    with pytest.raises(ValueError, match="MAN_OVERRIDE_SPD"):
        Vehicle(SimConfig(px4_version="1.17", params={"MAN_OVERRIDE_SPD": 1.0}), 0.0)


# ---- CURRENT_MODE: the vehicle's publications through one link's stream -------------


class _Link:
    """The vehicle plus one link's v1.17+ CURRENT_MODE stream, stepped by hand."""

    def __init__(self, version: str, interval_s: float) -> None:
        self.h = Harness(px4_version=version)
        self.stream = CurrentModeStream(interval_s * 1e6)
        self.sent: list[tuple[float, Message]] = []

    def _offer(self, out: list[Outgoing]) -> None:
        for o in out:
            if o.dest == TO_CURRENT_MODE:
                msg = self.stream.publish(o.msg, self.h.t)
                if msg is not None:
                    self.sent.append((self.h.t, msg))

    def run(self, duration_s: float) -> None:
        end = self.h.t + duration_s
        while self.h.t < end - 1e-9:
            self.h.t = round(self.h.t + TICK_S, 6)
            self._offer(self.h.v.step(self.h.t))
            held = self.stream.due(self.h.t)
            if held is not None:
                self.sent.append((self.h.t, held))

    def set_mode(self, main: int, sub: int = 0) -> None:
        msg = d.MAVLink_command_long_message(1, 1, d.MAV_CMD_DO_SET_MODE, 0, 1, main, sub,
                                             0, 0, 0, 0)  # fmt: skip
        self._offer(self.h.v.handle(msg, self.h.t, 0))


@pytest.mark.parametrize(
    ("interval_s", "latency_s", "rest_hz"),
    [(0.5, (0.0, 0.52), (1.6, 2.1)), (0.1, (0.0, 0.115), (2.2, 2.6)),
     (0.05, (0.0, 0.065), (2.2, 2.6)), (0.02, (0.0, 0.033), (2.2, 2.6)),
     (0.0, (0.0, 2.01), (0.4, 0.6))],
)  # fmt: skip
def test_v1_18_current_mode_on_change_capped_by_interval(
    interval_s: float, latency_s: tuple[float, float], rest_hz: tuple[float, float]
) -> None:
    """[SITL main]: only on a vehicle_status publication (~2.4/s at rest, and on a change),
    never sooner than the interval after the last one; interval 0 = 0.5 Hz only."""
    link = _Link("1.18", interval_s)
    link.run(5.0)
    at_rest = [t for t, _ in link.sent if t >= 1.0]
    assert rest_hz[0] <= len(at_rest) / 4.0 <= rest_hz[1], len(at_rest)
    gaps = [b - a for a, b in itertools.pairwise(at_rest)]
    assert min(gaps) >= (interval_s or 2.0) - 1e-6
    latencies = []
    for k, (main, sub) in enumerate([(4, 5), (4, 3), (4, 6), (4, 3)] * 3):
        link.run(0.137 * (k % 5) + 0.61)  # vary the phase against the rest publications
        changed_s = link.h.t
        link.set_mode(main, sub)
        custom = (main << 16) | (sub << 24)
        link.run(2.1)
        seen = next(t for t, m in link.sent if t >= changed_s and m.custom_mode == custom)
        latencies.append(seen - changed_s)
    assert latency_s[0] <= min(latencies) and max(latencies) <= latency_s[1], latencies
    if 0 < interval_s <= 0.1:  # [SITL main] about one interval after the change
        assert max(latencies) >= interval_s - 1e-6


def test_v1_16_current_mode_is_sent_at_once_on_every_change() -> None:
    """v1.16: the vehicle hands over one CURRENT_MODE per change, the server sends it at
    once (no cap), besides the periodic stream (streams.py)."""
    h = Harness(px4_version="1.16")
    out = h.v.handle(d.MAVLink_command_long_message(1, 1, d.MAV_CMD_DO_SET_MODE, 0, 1, 6,
                                                    0, 0, 0, 0, 0), 0.0, 0)  # fmt: skip
    modes_out = [o.msg.custom_mode for o in out if o.dest == TO_CURRENT_MODE]
    assert modes_out == [OFFBOARD]
    assert not [o for o in h.v.step(0.5) if o.dest == TO_CURRENT_MODE]  # no publications


def test_current_mode_stream_holds_back_and_sends_the_newest() -> None:
    s = CurrentModeStream(100_000)
    first = d.MAVLink_current_mode_message(0, 1, 1)
    assert s.publish(first, 0.0) is first
    assert s.publish(d.MAVLink_current_mode_message(0, 2, 2), 0.03) is None
    newest = d.MAVLink_current_mode_message(0, 3, 3)
    assert s.publish(newest, 0.06) is None
    assert s.due(0.09) is None
    assert s.due(0.1) is newest and s.due(0.5) is None
    assert math.isclose(s.last_sent_s, 0.1)
