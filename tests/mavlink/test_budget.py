"""The FC link's budget (mavlink/budget.py), with injected time: setpoints never wait,
commands share a bucket, the overflow waits in order and repeats are dropped."""

from __future__ import annotations

import math

from offboardd.mavlink.budget import FcSendBudget
from offboardd.mavlink.codec import dialect as d


def mode(main: int) -> object:
    return d.MAVLink_command_long_message(1, 1, 176, 0, 1, main, 0, 0, 0, 0, 0)


SETPOINT = d.MAVLink_set_position_target_local_ned_message(
    0, 1, 1, 1, 0b110111111000, 0, 0, -5, 0, 0, 0, 0, 0, 0, 0, 0)
FORCE_DISARM = d.MAVLink_command_long_message(1, 1, 400, 0, 0, 21196, 0, 0, 0, 0, 0)


def test_setpoints_and_a_force_disarm_never_wait() -> None:
    b = FcSendBudget(rate_hz=1.0, burst=1)
    assert b.offer(mode(4), 0.0) and not b.offer(mode(3), 0.0)  # bucket empty now
    assert all(b.offer(SETPOINT, 0.0) for _ in range(100))
    assert b.offer(FORCE_DISARM, 0.0)


def test_a_command_flood_goes_out_at_the_budget_in_order_repeats_dropped() -> None:
    b = FcSendBudget(rate_hz=10.0, burst=2, queue_max=4)
    sent = [b.offer(mode(m), 0.0) for m in (1, 2, 3, 3, 3, 4, 5, 6, 7)]
    assert sent[:2] == [True, True] and not any(sent[2:])
    assert b.dropped == 2 + 1  # two repeats of mode 3, then mode 3 itself pushed out
    assert b.next_due_s() == 0.1
    out, t = [], 0.0
    while b.next_due_s() < math.inf:
        t = b.next_due_s()
        out += [m.param2 for m in b.due(t)]
    assert out == [4, 5, 6, 7] and math.isclose(t, 0.4)


def test_a_waiting_message_no_longer_wanted_is_dropped_and_costs_no_turn() -> None:
    b = FcSendBudget(rate_hz=10.0, burst=1)
    assert b.offer(mode(1), 0.0)
    assert not b.offer(mode(2), 0.0, "stale") and not b.offer(mode(3), 0.0, "current")
    out = [m.param2 for m in b.due(0.1, lambda tag: tag != "stale")]
    assert out == [3] and b.withdrawn == 1 and b.next_due_s() == math.inf
