"""FC events, the engine's side: fold each report into the vehicle state, then say what
it means for the offboard session as a trigger the table (machine_table) resolves.

A HEARTBEAT or CURRENT_MODE is read against what we expect in the phase: during the
engage a mode other than OFFBOARD or the one the vehicle had is a takeover; once in
OFFBOARD, leaving it or a disarm nobody asked for is one; during a hand-over the
hand-over judges (engine_failsafe.handover_progress). ACKs only ever count as refusals:
an ACCEPTED proves nothing (PX4 v1.16 ACKs DO_SET_MODE twice, §4). Pure.

Must not: name a next phase; the table does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from offboardd.core.actions import NoticeKind
from offboardd.core.diagnosis import ack_name
from offboardd.core.engine_engage import engaged, offboard_confirmed
from offboardd.core.engine_failsafe import (
    abandon,
    check_breach,
    handover_progress,
    preempt,
    stop_on_a_stop,
)
from offboardd.core.events import (
    MAV_CMD_COMPONENT_ARM_DISARM,
    MAV_CMD_DO_SET_MODE,
    MAV_CMD_SET_MESSAGE_INTERVAL,
    AckResult,
    FcAutopilotVersion,
    FcCommandAck,
    FcCurrentMode,
    FcEstimatorStatus,
    FcHeartbeat,
    FcHomePosition,
    FcLocalPosition,
    FcMessageEvent,
    FcParamValue,
    FcStatusText,
    LandedState,
)
from offboardd.core.machine import Do, Outcome, Trigger
from offboardd.core.machine_table import ENGAGE_STEPS, IN_OFFBOARD
from offboardd.core.modes import Px4Mode, mode_name
from offboardd.core.reasons import Phase, Reason

if TYPE_CHECKING:
    from offboardd.core.offboard import OffboardEngine
    from offboardd.core.vehicle import VehicleState


# PX4 streams its position whether its estimate is valid or not (since v1.14, #20389): only
# ESTIMATOR_STATUS tells a dead-reckoned one from a valid one. It comes at least every ~12 s
# (a 57,600-baud line with PX4's streams left alone); heard from this FC for longer without
# one, the link does not carry it.
NO_ESTIMATOR_STATUS_AFTER_S = 15.0
NO_ESTIMATOR_STATUS = (
    "PX4 sends no ESTIMATOR_STATUS on this link: its position comes whether its estimate is "
    "valid or not, so a dead-reckoned one (a GNSS loss) counts as valid here; let the "
    "stream plan ask for it, or have PX4 stream it on this link")


def on_fc_event(eng: OffboardEngine, event: FcMessageEvent, now: float) -> None:
    v = eng.vehicle
    target_before = v.target
    foreign_before = len(v.foreign_px4_systems)
    if not v.accepts(event):
        if len(v.foreign_px4_systems) != foreign_before:
            eng.out.warn([f"another PX4 autopilot (system {event.source_system}) on the link: "
                          f"following system {v.px4_system} only; set mavlink.fc_system_id "
                          "to choose"], about_link=True)
        return
    armed_before, on_ground_before = v.armed, v.landed_state is LandedState.ON_GROUND
    # (only a HEARTBEAT or CURRENT_MODE can change it: the other ~55 messages a second skip it)
    cut_before = isinstance(event, FcHeartbeat | FcCurrentMode) and v.motors_cut
    rebooted = v.fold(event, now)
    if v.rebooted_unheard_s is not None:  # back from a loss, its uptime restarted
        eng.out.notice(NoticeKind.WARNING, "the FC rebooted while unheard (up "
                       f"{v.rebooted_unheard_s:.0f} s now): a reboot, not only a link loss")
        v.rebooted_unheard_s = None
    if (v.armed and not armed_before) or (
            on_ground_before and v.landed_state is not LandedState.ON_GROUND and v.armed):
        eng.guard.home_moved(now)  # PX4 sets home where it arms, and where it takes off
    if isinstance(event, FcHeartbeat) and (not eng.fc_up or v.target != target_before):
        _fc_appeared(eng, now)
    if rebooted:
        fc_rebooted(eng, now)
        return
    if isinstance(event, FcHeartbeat | FcCurrentMode):
        if v.motors_cut != cut_before:
            _motors_cut_changed(eng, now)
        _on_fc_state(eng, event, now, armed_before)
    elif isinstance(event, FcCommandAck):
        _on_ack(eng, event, now)
    elif isinstance(event, FcParamValue):
        before = eng.checks.judgement  # PX4 broadcasts a GCS's PARAM_SET: judged again
        eng.out.warn(eng.checks.on_param(event.name, event.value))
        eng.out.retract(w for w in before if w not in eng.checks.judgement)
    elif isinstance(event, FcAutopilotVersion):
        first = eng.checks.version is None
        eng.out.warn(eng.checks.on_version(event))
        if first:  # identified: ask for only what we need (again after a reboot)
            eng.streams.start(now)
    elif isinstance(event, FcStatusText):
        eng.out.notice(NoticeKind.FC_STATUSTEXT, event.text, severity=event.severity)
    elif isinstance(event, FcHomePosition):
        eng.guard.set_home(event)
    elif isinstance(event, FcLocalPosition):
        check_breach(eng, now)
        if (v.estimator_flags is None and not eng.warned_no_estimator_status and v.is_px4
                and now - eng.fc_up_since_s > NO_ESTIMATOR_STATUS_AFTER_S):
            eng.warned_no_estimator_status = True
            eng.out.warn([NO_ESTIMATOR_STATUS])
    elif isinstance(event, FcEstimatorStatus) and eng.warned_no_estimator_status:
        eng.warned_no_estimator_status = False
        eng.out.retract([NO_ESTIMATOR_STATUS])


def _fc_appeared(eng: OffboardEngine, now: float) -> None:
    v = eng.vehicle
    assert v.target is not None
    eng.fc_up = True
    eng.fc_ever_seen = True
    eng.fc_up_since_s = now
    eng.warned_no_estimator_status = False  # (its warnings are forgotten just below)
    eng.out.forget_fc_warnings()  # its checks below judge it afresh
    eng.next_companion_hb_s = now
    eng.guard.ask_home_from(now)
    eng.checks.start(now)
    # (another autopilot may have spoken first): the plan waits for this one's version, and
    # no ACK of the checks' own commands is taken for a row of the one in flight
    eng.streams.stop()
    who = "PX4" if v.is_px4 else f"autopilot {v.autopilot} (not PX4)"
    eng.out.notice(
        NoticeKind.FC_LINK,
        f"FC up: {who}, system {v.target.system_id} component {v.target.component_id}",
    )
    if not v.is_px4:
        eng.out.warn([f"autopilot type {v.autopilot} is not PX4: engage will be refused"])
    if v.armed:  # after a restart of ours in flight, say so: nothing else would (review)
        eng.out.notice(NoticeKind.WARNING,
                       f"FC found armed in {mode_name(v.custom_mode)}: left to PX4 and its "
                       "pilot; only a new engage takes it")


def fc_lost(eng: OffboardEngine, now: float, detail: str) -> None:
    eng.fc_up = False
    eng.checks.stop()
    eng.streams.stop()
    eng.vehicle.forget_reports()  # (so the stop below is no hold at a stale "here")
    eng.envelope.forget_home()
    eng.out.notice(NoticeKind.FC_LINK, f"FC lost ({detail})")
    # Unheard is not deaf: the stream's last frame is a stop, sent to the FC we had. With
    # the target forgotten first none went out, and an FC that still heard us flew the
    # commander's last velocity on (review, 2026-11-29).
    abandon(eng, Trigger.FC_LOST, now, f"FC lost ({detail}); stopped streaming")
    eng.vehicle.target = None


# Streaming, nothing heard from the FC for this share of its COM_OF_LOSS_T: stop (FC_SILENT).
# Below 1 so that we stop before PX4 judges our stream lost, never after: a link that comes
# back between the two would let our stream take the vehicle back from PX4's loss action
# (px4-offboard.md §3; seen on real PX4 after a 1.5 s blackout, found by review).
FC_SILENCE_SHARE = 0.9


def fc_silence_limit_s(eng: OffboardEngine) -> float:
    return FC_SILENCE_SHARE * (eng.checks.loss_timeout_s or 1.0)


def fc_silent(eng: OffboardEngine, now: float) -> None:
    silence_s = eng.vehicle.silence_s(now) or 0.0
    message = (f"nothing heard from the FC for {silence_s:.2f} s while streaming: stopped, "
               "so that a link coming back cannot take the vehicle back from PX4's "
               "offboard-loss action; a new engage is needed")
    abandon(eng, Trigger.FC_SILENT, now, message)
    eng.out.notice(NoticeKind.FAILSAFE, message, Reason.FC_SILENT)


def fc_rebooted(eng: OffboardEngine, now: float) -> None:
    eng.out.forget_fc_warnings()  # its parameters are read and judged afresh
    eng.fc_up_since_s = now  # (its ESTIMATOR_STATUS awaited afresh too)
    eng.warned_no_estimator_status = False
    eng.vehicle.forget_reports()
    eng.envelope.forget_home()
    eng.guard.ask_home_from(now)
    eng.checks.start(now)
    eng.streams.stop()  # its streams are PX4's defaults again: re-planned with the version
    eng.out.notice(NoticeKind.FC_LINK, "FC rebooted: re-reading its parameters")
    abandon(eng, Trigger.FC_REBOOTED, now, "FC rebooted; stopped streaming")


def _disarm_refusal(v: VehicleState, result: int) -> str:
    return (f"PX4 answered {ack_name(result)} to the disarm (it refuses one while it "
            f"judges the vehicle flying; landed state: {v.landed_state.name.lower()}): "
            "land first, or send force=true")


def _motors_cut_changed(eng: OffboardEngine, now: float) -> None:
    """PX4 cut the motors (VehicleState.motors_cut: an offboard-loss or other failsafe's
    Terminate, MAV_CMD_DO_FLIGHTTERMINATION, a kill switch, lockdown), or no longer does.
    v1.18 and main go on reporting the mode they had: [SITL v1.18] after a COM_OBL_RC_ACT
    or geofence Terminate, OFFBOARD and armed for 20 s as the vehicle fell. Without the
    status the daemon streamed on into a falling vehicle, and called it engaged."""
    v = eng.vehicle
    if not v.motors_cut:
        eng.out.notice(NoticeKind.WARNING, "PX4 no longer reports flight termination (a "
                       "kill switch released?): its motors may run again")
        return
    message = (f"PX4 cut the motors (flight termination, a kill switch or lockdown); it "
               f"reports {mode_name(v.custom_mode)}{', armed' if v.armed else ''}")
    rule = eng.rule(Trigger.FC_MOTORS_CUT, now)
    if rule.to is Outcome.IGNORE:
        eng.out.notice(NoticeKind.FAILSAFE, message, Reason.FC_MOTORS_CUT)
        return
    # The last frame a stop: a kill switch released in OFFBOARD flies what it got last.
    stop_on_a_stop(eng, now)
    preempt(eng, rule, message)


def _report(eng: OffboardEngine, armed_before: bool, disarm_expected: bool,
            now: float, heartbeat: bool) -> Trigger | None:  # fmt: skip
    """What a HEARTBEAT / CURRENT_MODE means for the session in this phase, if anything."""
    v, phase = eng.vehicle, eng.phase
    if phase in ENGAGE_STEPS:
        if v.custom_mode not in (eng.engage.harmless(now), Px4Mode.OFFBOARD.custom_mode):
            return Trigger.FC_MODE_TAKEN
        return Trigger.FC_OFFBOARD if v.in_offboard else None
    if phase in IN_OFFBOARD:
        if not v.in_offboard:
            return Trigger.FC_MODE_TAKEN
        if v.armed:
            return Trigger.FC_ARMED
        # (the armed flag comes with HEARTBEAT only: CURRENT_MODE leaves the last one's)
        taken_back = heartbeat and phase is Phase.ARMING and eng.engage.arm_taken_back(now)
        if armed_before or taken_back:
            return Trigger.FC_DISARMED_ON_COMMAND if disarm_expected else Trigger.FC_DISARMED
    return None


def _on_fc_state(eng: OffboardEngine, event: FcHeartbeat | FcCurrentMode, now: float,
                 armed_before: bool) -> None:
    """A HEARTBEAT or CURRENT_MODE: confirm what we asked for, or notice a takeover."""
    v = eng.vehicle
    disarm_expected = eng.arms.disarm_expected
    pending = eng.arms.pending
    if pending is not None and v.armed == pending.arm:
        eng.arms.take()
        eng.out.reply_ok(pending.command_id, "armed" if pending.arm else "disarmed",
                         resume=eng.reply_token())
    if eng.phase is Phase.RELEASING:
        if eng.handover.current is not None:
            handover_progress(eng, now, reported=True)
        return
    if eng.phase in ENGAGE_STEPS and v.in_offboard:
        eng.engage.offboard_seen()
    if eng.phase is Phase.PREEMPTED:  # the takeover came by HEARTBEAT: its intent now
        _name_px4_failsafe(eng, event)
    trigger = _report(eng, armed_before, disarm_expected, now,
                      isinstance(event, FcHeartbeat))
    if trigger is None:
        return
    rule = eng.rule(trigger, now)
    if rule.to is Outcome.IGNORE:
        return
    mode = mode_name(v.custom_mode)
    if trigger is Trigger.FC_MODE_TAKEN:
        during = "during the engage" if eng.phase in ENGAGE_STEPS else None
        never = v.custom_mode == eng.engage.harmless_mode  # a lapse while ENGAGING: held
        preempt(eng, rule, f"FC switched to {mode} {during}" if during
                else f"FC reports {mode}, its mode at the engage: OFFBOARD never reported"
                if never else f"FC left OFFBOARD for {mode} without being asked")  # fmt: skip
        eng.px4_failsafe_named = False
        _name_px4_failsafe(eng, event)
    elif trigger is Trigger.FC_OFFBOARD and rule.to is Outcome.STAY:
        _tell_offboard_by_px4(eng)  # in the warm-up
    elif trigger is Trigger.FC_OFFBOARD:
        offboard_confirmed(eng, rule, now)
    elif trigger is Trigger.FC_ARMED:
        engaged(eng, rule, "engaged in OFFBOARD and armed")
    elif trigger is Trigger.FC_DISARMED_ON_COMMAND:
        # The operator ended control: streaming on would let a later arm fly off to the
        # old setpoint. A new engage starts over.
        eng.stop_stream()
        eng.move(rule, "disarmed on command; stopped streaming")
    else:
        # Landed in OFFBOARD, PX4 disarms by itself COM_DISARM_LAND (2 s) after it detects
        # the landing, and stays in OFFBOARD (measured on PX4 SIH main: a 0.7 m/s descent
        # from 2 m disarmed 6.1-7.5 s after it began): say so, it is no pilot's doing
        landed = v.landed_state is LandedState.ON_GROUND
        preempt(eng, rule, "FC disarmed without being asked" + (
            " on the ground (PX4's auto-disarm after landing, COM_DISARM_LAND, or a GCS)"
            if landed else ""))


def _tell_offboard_by_px4(eng: OffboardEngine) -> None:
    """Once per engage: PX4 took OFFBOARD by itself in the warm-up (its intended mode
    after a failsafe, px4-offboard.md §3) and flies the engage's setpoint now, a second or
    more before the commander expects it. A release, a lapse or a failed warm-up hand the
    vehicle over from here, as from `engaging` (machine_table)."""
    if eng.engage.told_offboard_by_px4:
        return
    eng.engage.told_offboard_by_px4 = True
    eng.out.notice(
        NoticeKind.WARNING,
        "PX4 switched to OFFBOARD by itself during the warm-up (OFFBOARD was still its "
        "intended mode): the vehicle flies the engage's setpoint from now on",
        Reason.OFFBOARD_BY_PX4,
    )


def _name_px4_failsafe(eng: OffboardEngine, event: FcHeartbeat | FcCurrentMode) -> None:
    """Say once per takeover when it was PX4's own failsafe. A pilot's or a GCS's mode
    change replaces the intended mode; PX4's failsafes (geofence, battery...) keep OFFBOARD
    as the intended one (CURRENT_MODE; px4-offboard.md §3). With our stream stopped, PX4
    then adds its offboard-loss failsafe and flies the more severe of the two: on PX4 SIH
    main and v1.17.0 a geofence Hold (GF_ACTION=2) became AUTO.RTL 1.1 s after our last
    setpoint. A HEARTBEAT carries no intent: the next CURRENT_MODE (≤ 0.5 s) decides."""
    if (eng.px4_failsafe_named or eng.reason is not Reason.PREEMPTED_MODE
            or not isinstance(event, FcCurrentMode)
            or event.intended_custom_mode != Px4Mode.OFFBOARD.custom_mode
            or event.custom_mode == Px4Mode.OFFBOARD.custom_mode):
        return
    eng.px4_failsafe_named = True
    action = eng.checks.loss_action_name() or "unknown"
    eng.out.notice(
        NoticeKind.FAILSAFE,
        f"{mode_name(event.custom_mode)} is a PX4 failsafe: OFFBOARD is still PX4's intended "
        f"mode, so about COM_OF_LOSS_T after our last setpoint PX4 also takes its "
        f"offboard-loss action ({action}) if that is more severe",
        Reason.PREEMPTED_MODE,
    )


def _ours(eng: OffboardEngine, ack: FcCommandAck) -> bool:
    """Is this ACK an answer to us? PX4 addresses it to the command's sender and sends it on
    every link that sender was seen on: behind mavlink-router a ground station's refused
    arm would otherwise fail our pending arm, and another client's SET_MESSAGE_INTERVAL
    would be taken for the stream plan's. Our frames carry the vehicle's system id and
    our component id; an ACK that names no target (0: MAVLink 1, older firmware) counts."""
    target = eng.vehicle.target
    return (ack.target_system in (0, target.system_id if target is not None else 0)
            and ack.target_component in (0, eng.settings.companion_component_id))


def _on_accepted(eng: OffboardEngine, command: int, now: float) -> None:
    """An engage request the FC accepted is not sent again: what the FC reports after it
    is what the vehicle does, whoever made it so (review: a GCS's disarm in the second
    before HEARTBEAT showed the arm was answered by a second arm)."""
    if eng.phase is Phase.ARMING and command == MAV_CMD_COMPONENT_ARM_DISARM:
        eng.engage.arm_accepted(now)
    elif eng.phase is Phase.ENGAGING and command == MAV_CMD_DO_SET_MODE and eng.vehicle.armed:
        eng.engage.offboard_accepted(now)


def _on_ack(eng: OffboardEngine, ack: FcCommandAck, now: float) -> None:
    if not _ours(eng, ack):
        return
    if ack.command == MAV_CMD_SET_MESSAGE_INTERVAL and eng.streams.on_ack(ack.result, now):
        return  # the stream plan's (one in flight at a time: stream_plan.py)
    if ack.result == AckResult.ACCEPTED:
        _on_accepted(eng, ack.command, now)
    if ack.result in (AckResult.ACCEPTED, AckResult.IN_PROGRESS):
        return  # never confirmed by an ACK alone: PX4 v1.16 sends ACCEPTED first (§4)
    eng.last_ack = ack.result
    if ack.command == MAV_CMD_DO_SET_MODE:
        if Do.RETRY_LATER in eng.rule(Trigger.FC_MODE_REFUSED, now).does:
            if eng.phase is Phase.ENGAGING:
                eng.engage.offboard_refused(now)
            else:
                eng.handover.refused(now)
    elif ack.command == MAV_CMD_COMPONENT_ARM_DISARM:
        if Do.RETRY_LATER in eng.rule(Trigger.FC_ARM_REFUSED, now).does:
            eng.engage.arm_refused(now)
        pending = eng.arms.take()
        if pending is not None:
            if pending.arm:
                reason, why = Reason.ARM_REFUSED, eng.diagnosis(now)
            else:  # the arming diagnosis (stream, estimate) says nothing of a disarm
                reason, why = Reason.DISARM_REFUSED, _disarm_refusal(eng.vehicle, ack.result)
            eng.out.reply_fail(pending.command_id, reason, why, resume=eng.reply_token())
