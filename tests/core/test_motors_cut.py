"""PX4 cut the motors: HEARTBEAT system_status FLIGHT_TERMINATION (a termination, a kill
switch, lockdown). PX4 goes on reporting the mode it had and the armed flag ([SITL v1.18]
COM_OBL_RC_ACT Terminate: OFFBOARD and armed for 20 s while the vehicle fell), so the
status is the only sign: the daemon stops, says why, and refuses to engage until it clears.
"""

from __future__ import annotations

from offboardd.core.actions import NoticeKind
from offboardd.core.commands import Engage, SetSetpoint
from offboardd.core.events import SystemStatus
from offboardd.core.reasons import Phase, Reason
from offboardd.core.setpoints import PositionVelocityNed, VelocityNed

from .bench import Bench
from .test_failsafe import UP, last_setpoint


def _cut(b: Bench, cut: bool = True) -> None:
    b.fc.system_status = SystemStatus.FLIGHT_TERMINATION if cut else SystemStatus.ACTIVE
    b.feed(b.fc.heartbeat())


def test_motors_cut_while_active_stops_the_stream_on_a_stop() -> None:
    b = Bench()
    b.engage(UP, arm=True)
    b.feed(SetSetpoint("v", VelocityNed(1.0, 0.0, 0.0)))
    b.fc.north_m = 3.0
    b.step(0.3)
    _cut(b)  # mode and armed flag unchanged: OFFBOARD, armed
    assert b.phase() is Phase.PREEMPTED and b.reason() is Reason.PREEMPTED_MOTORS_CUT
    assert not b.engine.stream.running
    # A kill switch released in OFFBOARD flies the last setpoint PX4 got: a stop, here.
    last = last_setpoint(b)
    assert isinstance(last, PositionVelocityNed) and last.north_m == 3.0
    assert (last.north_m_s, last.east_m_s, last.down_m_s) == (0, 0, 0)
    snapshot = b.engine.snapshot(b.now)
    assert snapshot.fc_status == "flight_termination" and snapshot.fc_mode == "OFFBOARD"
    assert snapshot.armed and not snapshot.in_control
    sent = len(b.setpoint_times())
    b.step(2.0)  # nothing more, though PX4 still says OFFBOARD and armed
    assert len(b.setpoint_times()) == sent and b.phase() is Phase.PREEMPTED


def test_the_warm_up_stops_too() -> None:
    b = Bench()
    b.connect()
    b.feed(Engage("e", UP))
    b.step(0.3)
    assert b.phase() is Phase.WARMUP
    _cut(b)
    assert b.phase() is Phase.PREEMPTED and not b.engine.stream.running
    assert b.reply("e").reason is Reason.PREEMPTED_MOTORS_CUT


def test_engage_is_refused_while_cut_and_allowed_once_it_clears() -> None:
    b = Bench()
    b.connect()
    _cut(b)
    assert b.phase() is Phase.IDLE
    (notice,) = b.notices(NoticeKind.FAILSAFE)
    assert notice.reason is Reason.FC_MOTORS_CUT and "cut the motors" in notice.message
    b.feed(Engage("e", UP))
    reply = b.reply("e")
    assert not reply.ok and reply.reason is Reason.FC_MOTORS_CUT
    assert b.setpoint_times() == []
    _cut(b, False)  # a kill switch released
    assert any("no longer reports flight termination" in n.message
               for n in b.notices(NoticeKind.WARNING))
    assert b.engine.snapshot(b.now).fc_status == "active"
    b.feed(Engage("again", UP))
    assert b.phase() is Phase.WARMUP
