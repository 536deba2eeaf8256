"""Every phase move of the offboard engine, one row each: the table a safety review reads.

Read a row as: in PHASES, on TRIGGER [when FACTS], go TO with REASON, doing DOES. A
(phase, trigger) pair without a row falls to DEFAULTS: a command is refused with
`phase_not_allowed`, an FC event or timer is ignored. `offboardd engine-table` prints
this table; `--mermaid` draws it (docs/engine.md, checked by tests/core/test_machine.py).

The rules of px4-offboard.md it encodes: OFFBOARD is asked for only after warmup_s of
streaming (§1) and counts only when HEARTBEAT / CURRENT_MODE report it, never on an ACK
(§4); PREEMPTED and FAILSAFE are left only by a new engage, since PX4 re-enters
OFFBOARD by itself when setpoints resume (§3); every way out of ACTIVE stops the stream
or hands the vehicle to another mode first (§6).

Owns: the rows (RULES, DEFAULTS) and MACHINE built from them. Must not: compute
anything; the engine (offboard.py) asks MACHINE where to go.
"""

from __future__ import annotations

from offboardd.core.machine import Do, Fact, Machine, Outcome, Rule, Source, Trigger, no, yes
from offboardd.core.reasons import STREAMING_PHASES, Phase, Reason

P, T, R = Phase, Trigger, Reason
STAY, IGNORE, REFUSE, BACK = Outcome.STAY, Outcome.IGNORE, Outcome.REFUSE, Outcome.BACK
ALL = frozenset(Phase)
NOT_ENGAGED = frozenset({P.IDLE, P.FAILSAFE, P.PREEMPTED})  # nothing of ours in control
TAKEN = frozenset({P.FAILSAFE, P.PREEMPTED})  # ...because someone or something took it
LEASED = frozenset({P.WARMUP, P.ENGAGING, P.ARMING, P.ACTIVE})  # a commander holds the lease
ENGAGE_STEPS = frozenset({P.WARMUP, P.ENGAGING})  # streaming, OFFBOARD not reported yet
IN_OFFBOARD = frozenset({P.ARMING, P.ACTIVE, P.HOLDING})  # OFFBOARD reported, streaming
STREAMING = STREAMING_PHASES  # ENGAGE_STEPS | IN_OFFBOARD
HANDING_BACK = frozenset({P.ENGAGING, P.ARMING, P.ACTIVE, P.HOLDING})  # OFFBOARD asked


def row(
    phases: Phase | frozenset[Phase],
    trigger: Trigger,
    to: Phase | Outcome,
    reasons: Reason | tuple[Reason, ...] | None = None,
    *does: Do,
    when: tuple[Fact | tuple[Fact, bool], ...] = (),
    why: str = "",
) -> Rule:
    """One row; `when` lists a Fact for "it holds" and (Fact, False) for "it does not"."""
    conds = tuple(yes(w) if isinstance(w, Fact) else (yes if w[1] else no)(w[0]) for w in when)
    return Rule(
        phases=frozenset({phases}) if isinstance(phases, Phase) else phases,
        trigger=trigger,
        to=to,
        reasons=reasons if isinstance(reasons, tuple) else (reasons,),
        does=does,
        when=conds,
        why=why,
    )


D = Do
NOT_STREAMING = (Fact.STREAMING, False)
FLOWN, NOT_FLOWN = yes(Fact.FC_FLIES_STREAM), no(Fact.FC_FLIES_STREAM)
# After a failsafe that kept OFFBOARD as PX4's intended mode (the px4 loss action, FC
# silence, an escalation's end, a PX4 failsafe), PX4 re-enters OFFBOARD 20-40 ms after our
# first setpoint (§3): the warm-up's "OFFBOARD never requested" is no "nothing to hand
# back" then, and stopping left an armed vehicle to the loss action (found by review).
_FLOWN_IN_WARMUP = "PX4 took OFFBOARD by itself and flies the stream (§3): "
NOT_FINISHING = (Fact.MOTION_FINISHING, False)
# Why HOLDING asks for the token: what a bridged broker or a stalled network held back
# arrives after its commander died, same session, seq growing, and once resumed flight at
# 2.9 m/s for a dead commander (found by review). A token made at the lapse can only be
# quoted by a commander that read something the daemon said after it: a live one. (In the
# leased phases the same token lets a non-holder take over: engine_commands.on_command.)
# After a pilot, a GCS or a failsafe took the vehicle, an engage written before (delivered
# late by a stalled network) would ask for OFFBOARD over the pilot (found by review): a new
# engage quotes the token made as the phase was entered, which no earlier message holds.
_BLOCKED = (R.FWDEXTSP_DISABLED, R.STREAM_TOO_SLOW, R.LOSS_ACTION_CUTS_MOTORS,
            R.FC_PARAMS_UNKNOWN)  # the gate, again
_LATE_ENGAGE = ("taken by a pilot, a GCS or a failsafe: an engage without this phase's "
                "token may be one written before, delivered late; never over the pilot")
_LATE_REQUEST = ("taken by a pilot, a GCS or a failsafe: a mode request without the token may "
                 "be one written before, delivered late (a dead commander's backlog); never "
                 "switch a pilot's vehicle or undo a failsafe's choice (review)")
_STALE_BACKLOG = ("without the engine's token it may be a stale backlog (a bridge, a stalled "
                  "network) from a commander that died: refused, the token in the reply")

COMMANDS = [
    row(P.IDLE, T.ENGAGE, P.WARMUP, None, D.GRANT_LEASE, D.START_STREAM,
        why="the engage gate passed (PX4, parameters, estimate, envelope); OFFBOARD waits"),
    row(TAKEN, T.ENGAGE, P.WARMUP, None, D.GRANT_LEASE, D.START_STREAM,
        when=(Fact.RESUME_QUOTED,), why="a new engage, written after the vehicle was taken: "
                                        "it quotes this phase's token; then as from idle"),
    row(TAKEN, T.ENGAGE, REFUSE, R.NOT_IN_CONTROL, when=(no(Fact.RESUME_QUOTED),),
        why=_LATE_ENGAGE),
    row(STREAMING - {P.HOLDING}, T.SETPOINT, STAY, None, D.SEND_NOW, D.REPLY_OK,
        why="what the envelope admits replaces the setpoint"),
    row(P.HOLDING, T.SETPOINT, P.ACTIVE, R.RESUMED, D.SEND_NOW, D.GRANT_LEASE, D.REPLY_OK,
        when=(Fact.RESUME_QUOTED,),
        why="a live commander resumes: it quotes the token published after the lapse; a "
            "heartbeat never resumes"),
    row(P.HOLDING, T.SETPOINT, REFUSE, R.NOT_IN_CONTROL, when=(no(Fact.RESUME_QUOTED),),
        why=_STALE_BACKLOG),
    row(P.WARMUP, T.RELEASE, BACK, R.RELEASED, D.STOP_STREAM, D.REPLY_OK,
        when=(NOT_FLOWN,), why="OFFBOARD was never requested: nothing to hand back"),
    row(P.WARMUP, T.RELEASE, P.RELEASING, R.RELEASED, D.HAND_OVER, when=(FLOWN,),
        why=_FLOWN_IN_WARMUP + "release_mode, as from engaging"),
    row(HANDING_BACK, T.RELEASE, P.RELEASING, R.RELEASED, D.HAND_OVER,
        why="release_mode; a waiting engage is cancelled"),
]
for _trigger, _reason in ((T.HOLD, R.COMMANDED_HOLD), (T.LAND, R.COMMANDED_LAND),
                          (T.RTL, R.COMMANDED_RTL)):  # fmt: skip
    COMMANDS += [
        row(P.WARMUP, _trigger, P.RELEASING, _reason, D.STOP_STREAM, D.HAND_OVER,
            when=(NOT_FLOWN,), why="OFFBOARD never requested: stop, then a plain mode request"),
        row(P.WARMUP, _trigger, P.RELEASING, _reason, D.HAND_OVER, when=(FLOWN,),
            why=_FLOWN_IN_WARMUP + "a hand-over with escalation, as from engaging"),
        row(HANDING_BACK, _trigger, P.RELEASING, _reason, D.HAND_OVER,
            why="a hand-over with escalation; a waiting engage is cancelled"),
        row(P.RELEASING, _trigger, P.RELEASING, _reason, D.HAND_OVER,
            when=(no(Fact.SAME_ASK_PENDING), no(Fact.TAKEN_HANDOVER)),
            why="supersedes the hand-over in progress"),
        row(P.RELEASING, _trigger, P.RELEASING, _reason, D.HAND_OVER,
            when=(no(Fact.SAME_ASK_PENDING), Fact.TAKEN_HANDOVER, Fact.RESUME_QUOTED),
            why="supersedes a taken vehicle's hand-over: it quotes the token (written after "
                "the takeover or the failsafe)"),
        row(P.RELEASING, _trigger, REFUSE, R.NOT_IN_CONTROL,
            when=(no(Fact.SAME_ASK_PENDING), Fact.TAKEN_HANDOVER, no(Fact.RESUME_QUOTED)),
            why=_LATE_REQUEST),
        row(P.RELEASING, _trigger, STAY, None, D.JOIN_HANDOVER,
            when=(yes(Fact.SAME_ASK_PENDING),),
            why="a repeat: answered with the pending one (a flood of holds sent 1,200 "
                "DO_SET_MODEs before)"),
        row(P.IDLE, _trigger, P.RELEASING, _reason, D.HAND_OVER,
            when=(no(Fact.FC_IN_ASKED_MODE),),
            why="a plain mode request: the vehicle is not ours, no escalation"),
        row(TAKEN, _trigger, P.RELEASING, _reason, D.HAND_OVER,
            when=(no(Fact.FC_IN_ASKED_MODE), Fact.RESUME_QUOTED),
            why="a plain mode request written after the vehicle was taken (it quotes this "
                "phase's token), as from idle"),
        row(TAKEN, _trigger, REFUSE, R.NOT_IN_CONTROL,
            when=(no(Fact.FC_IN_ASKED_MODE), no(Fact.RESUME_QUOTED)), why=_LATE_REQUEST),
        row(NOT_ENGAGED, _trigger, STAY, None, D.REPLY_OK, when=(yes(Fact.FC_IN_ASKED_MODE),),
            why="already there: answered at once, nothing to the FC (a flood of holds "
                "asked for AUTO.LOITER again and again)"),
    ]
COMMANDS += [
    row(frozenset({P.IDLE, P.ACTIVE}), T.ARM, STAY, None, D.ARM_DISARM,
        why="answered when HEARTBEAT shows it"),
    row(TAKEN, T.ARM, STAY, None, D.ARM_DISARM, D.SPEND_TOKEN, when=(Fact.RESUME_QUOTED,),
        why="an arm written after the vehicle was taken; answered when HEARTBEAT shows it, "
            "with the new token (a repeat re-armed after the pilot disarmed again: review)"),
    row(TAKEN, T.ARM, REFUSE, R.NOT_IN_CONTROL, when=(no(Fact.RESUME_QUOTED),),
        why="taken (or disarmed) by a pilot, a GCS or a failsafe: an arm without this phase's "
            "token may be one written before, delivered late; never re-arm over them"),
    row(NOT_ENGAGED | {P.ACTIVE}, T.DISARM, STAY, None, D.ARM_DISARM,
        why="answered when HEARTBEAT shows it; in ACTIVE, fc_disarmed_on_command follows"),
    row(STREAMING | {P.RELEASING}, T.EMERGENCY_STOP, P.FAILSAFE, R.EMERGENCY_STOP,
        D.REPLY_FAIL, D.STOP_STREAM, D.FORCE_DISARM, D.NOTICE, why="needs confirm=true"),
    row(NOT_ENGAGED, T.EMERGENCY_STOP, STAY, R.EMERGENCY_STOP, D.REPLY_FAIL, D.FORCE_DISARM,
        D.NOTICE,
        why="needs confirm=true; not ours in flight, so the phase stays"),
    row(LEASED, T.HEARTBEAT, STAY, None, D.RENEW_LEASE, D.REPLY_OK,
        why="keeps the commander's lease"),
    row(ALL - LEASED, T.HEARTBEAT, REFUSE, R.NOT_IN_CONTROL,
        why="tells a commander it lost control (or never had it), with phase and reason; "
            "never resumes from HOLDING"),
    row(ALL - STREAMING, T.SETPOINT, REFUSE, R.NOT_IN_CONTROL,
        why="a setpoint while nobody flies it: the commander lost control (engage first)"),
]

# Motions (motion_commands.py): allowed where a setpoint is; a goto or path with
# engage: true engages like an engage does. The motion itself starts in ACTIVE.
for _trigger in (T.GOTO, T.PATH):
    COMMANDS += [
        row(P.IDLE, _trigger, P.WARMUP, None, D.GRANT_LEASE, D.PLAN_MOTION, D.START_STREAM,
            when=(Fact.ENGAGE_ASKED,),
            why="an engage: the warm-up streams where the vehicle is; the motion starts once "
                "OFFBOARD is reported (and armed, if asked)"),
        row(TAKEN, _trigger, P.WARMUP, None, D.GRANT_LEASE, D.PLAN_MOTION, D.START_STREAM,
            when=(Fact.ENGAGE_ASKED, Fact.RESUME_QUOTED),
            why="an engage quoting this phase's token, as from idle"),
        row(TAKEN, _trigger, REFUSE, R.NOT_IN_CONTROL,
            when=(Fact.ENGAGE_ASKED, (Fact.RESUME_QUOTED, False)), why=_LATE_ENGAGE),
        row(NOT_ENGAGED, _trigger, REFUSE, R.NOT_IN_CONTROL, when=(no(Fact.ENGAGE_ASKED),),
            why="without engage: true a motion never takes the vehicle (it may be a pilot's)"),
    ]
for _trigger in (T.ORBIT, T.STOP):
    COMMANDS.append(row(ALL - STREAMING, _trigger, REFUSE, R.NOT_IN_CONTROL,
                        why="nobody flies it: engage first"))
for _trigger in (T.GOTO, T.PATH, T.ORBIT, T.STOP):
    COMMANDS += [
        row(STREAMING - {P.HOLDING}, _trigger, STAY, None, D.PLAN_MOTION, D.REPLY_OK,
            why="re-planned from where the running motion (or the vehicle) is: no step; "
                "the whole path inside the envelope, or refused as a whole"),
        row(P.HOLDING, _trigger, P.ACTIVE, R.RESUMED, D.PLAN_MOTION, D.GRANT_LEASE, D.REPLY_OK,
            when=(Fact.RESUME_QUOTED,),
            why="a live commander's motion resumes, like a setpoint (the token quoted)"),
        row(P.HOLDING, _trigger, REFUSE, R.NOT_IN_CONTROL, when=(no(Fact.RESUME_QUOTED),),
            why=_STALE_BACKLOG),
    ]

_HANDED_OVER = (R.RELEASED, R.COMMANDED_HOLD, R.COMMANDED_LAND, R.COMMANDED_RTL,
                R.MODE_TIMEOUT, R.ARM_TIMEOUT, R.ESTIMATE_MISSING, R.FC_SILENT, *_BLOCKED)
FC_EVENTS = [
    row(P.WARMUP, T.FC_OFFBOARD, IGNORE, when=(NOT_FLOWN,),
        why="PX4 may enter OFFBOARD by itself once setpoints flow (§3): judged at warm-up end"),
    row(P.WARMUP, T.FC_OFFBOARD, STAY, None, D.TELL_OFFBOARD_BY_PX4, when=(FLOWN,),
        why=_FLOWN_IN_WARMUP + "the commander is told it flies already; OFFBOARD is judged "
            "at warm-up end"),
    row(P.ENGAGING, T.FC_OFFBOARD, P.ARMING, None, D.REQUEST_ARM, when=(Fact.ARM_WANTED,),
        why="confirmed from telemetry, never from the ACK (§4)"),
    row(P.ENGAGING, T.FC_OFFBOARD, P.ACTIVE, R.ENGAGED, D.REPLY_OK,
        when=((Fact.ARM_WANTED, False),), why="confirmed from telemetry, never from the ACK"),
    row(P.ARMING, T.FC_ARMED, P.ACTIVE, R.ENGAGED, D.REPLY_OK, why="armed, from HEARTBEAT"),
    row(STREAMING, T.FC_MODE_TAKEN, P.PREEMPTED, R.PREEMPTED_MODE, D.STOP_STREAM, D.REPLY_FAIL,
        why="a pilot, a GCS or a PX4 failsafe took over: never take it back ourselves"),
    row(P.RELEASING, T.FC_MODE_TAKEN, P.PREEMPTED, R.PREEMPTED_MODE, D.STOP_STREAM,
        D.REPLY_FAIL, when=(Fact.STREAMING,), why="taken over during the hand-over"),
    row(P.RELEASING, T.FC_MODE_TAKEN, BACK, R.PREEMPTED_MODE, D.REPLY_FAIL,
        when=(NOT_STREAMING,), why="a plain mode request: someone else chose a mode "
        "meanwhile; asking on would pull the vehicle out of it"),
    row(IN_OFFBOARD, T.FC_DISARMED, P.PREEMPTED, R.PREEMPTED_DISARMED, D.STOP_STREAM,
        D.REPLY_FAIL, why="disarmed under us"),
    row(IN_OFFBOARD, T.FC_DISARMED_ON_COMMAND, P.IDLE, R.COMMANDED_DISARM, D.STOP_STREAM,
        why="streaming on would let a later arm fly off to the old setpoint"),
    row(STREAMING, T.FC_MOTORS_CUT, P.PREEMPTED, R.PREEMPTED_MOTORS_CUT, D.STOP_STREAM,
        D.REPLY_FAIL,
        why="PX4 cut the motors (flight termination, a kill switch or lockdown); from v1.18 "
            "it still reports the mode it had: stop; a kill switch released would fly our "
            "stream again"),
    row(P.RELEASING, T.FC_MOTORS_CUT, P.PREEMPTED, R.PREEMPTED_MOTORS_CUT, D.STOP_STREAM,
        D.REPLY_FAIL, when=(Fact.STREAMING,), why="the motors cut during the hand-over"),
    row(P.RELEASING, T.FC_MOTORS_CUT, IGNORE, when=(NOT_STREAMING,),
        why="a plain mode request: its retries answer it (after a termination PX4 refuses "
            "every mode)"),
    row(P.RELEASING, T.FC_MODE_HANDED_OVER, P.FAILSAFE, (R.LOSS_ACTION, R.FENCE_BREACH),
        D.STOP_STREAM, when=(Fact.FAILSAFE_HANDOVER,), why="the failsafe's mode took over"),
    row(P.RELEASING, T.FC_MODE_HANDED_OVER, P.IDLE, _HANDED_OVER, D.STOP_STREAM, D.REPLY_OK,
        when=((Fact.FAILSAFE_HANDOVER, False), no(Fact.TAKEN_HANDOVER)),
        why="the commanded mode took over (or release_mode, after an engage that failed)"),
    row(P.RELEASING, T.FC_MODE_HANDED_OVER, BACK, _HANDED_OVER, D.STOP_STREAM, D.REPLY_OK,
        when=((Fact.FAILSAFE_HANDOVER, False), Fact.TAKEN_HANDOVER),
        why="asked while the vehicle was taken: it stays taken, with a new token the reply "
            "names (idle let an engage or arm written before the takeover act: review)"),
    row(P.ENGAGING, T.FC_MODE_REFUSED, STAY, None, D.RETRY_LATER,
        why="one refusal per attempt (PX4 v1.16 ACKs twice, §4)"),
    row(P.RELEASING, T.FC_MODE_REFUSED, STAY, None, D.RETRY_LATER,
        why="one refusal per attempt"),
    row(P.ARMING, T.FC_ARM_REFUSED, STAY, None, D.RETRY_LATER, D.REPLY_FAIL,
        why="the engage's arming retries; a waiting operator arm / disarm fails"),
    row(ALL - {P.ARMING}, T.FC_ARM_REFUSED, STAY, None, D.REPLY_FAIL,
        why="a waiting operator arm / disarm fails"),
]
for _trigger, _reason in ((T.FC_LOST, R.FC_LINK_LOST), (T.FC_REBOOTED, R.FC_REBOOTED)):
    FC_EVENTS += [
        row(STREAMING, _trigger, P.FAILSAFE, _reason, D.FORGET_FC, D.REPLY_FAIL, D.STOP_STREAM,
            why="we were flying it: stop; a new engage is needed"),
        row(P.RELEASING, _trigger, P.FAILSAFE, _reason, D.FORGET_FC, D.REPLY_FAIL,
            D.STOP_STREAM, when=(Fact.STREAMING,), why="we were flying it: stop"),
        row(P.RELEASING, _trigger, BACK, _reason, D.FORGET_FC, D.REPLY_FAIL,
            when=(NOT_STREAMING,), why="a plain mode request that will not be answered"),
        row(NOT_ENGAGED, _trigger, STAY, _reason, D.FORGET_FC, D.REPLY_FAIL,
            why="nothing of ours to stop; waiting commands fail with the reason"),
    ]

FC_EVENTS += [
    row(HANDING_BACK | {P.RELEASING}, T.FC_SILENT, P.FAILSAFE, R.FC_SILENT, D.STOP_STREAM,
        D.REPLY_FAIL, D.NOTICE,
        why="streaming, nothing heard for 0.9 × COM_OF_LOSS_T: if the link is down both ways "
            "PX4 fails safe now, and a stream the link brought back would take the vehicle "
            "back (§3). Judged while streaming, once OFFBOARD was asked for (and in an "
            "armed warm-up, below)"),
    row(P.WARMUP, T.FC_SILENT, P.FAILSAFE, R.FC_SILENT, D.STOP_STREAM, D.REPLY_FAIL, D.NOTICE,
        when=(yes(Fact.FC_ARMED),),
        why="armed: PX4 may fly the stream, having re-entered OFFBOARD by itself (§3), "
            "unseen while the FC is silent; judged as once OFFBOARD was asked for (it was "
            "not: review)"),
    row(P.WARMUP, T.FC_SILENT, IGNORE, when=(no(Fact.FC_ARMED),),
        why="disarmed, nothing of ours flies: the warm-up's end judges an unheard FC (it "
            "waits, at most 3 ends in a row), fc_lost a lost one"),
]

TIMERS = [
    row(P.WARMUP, T.WARMUP_DONE, P.ENGAGING, None, D.REQUEST_OFFBOARD,
        when=((Fact.FC_IN_OFFBOARD, False),), why="warmup_s of steady streaming (§1)"),
    row(P.WARMUP, T.WARMUP_DONE, P.ARMING, None, D.REQUEST_ARM,
        when=(Fact.FC_IN_OFFBOARD, Fact.ARM_WANTED), why="PX4 took OFFBOARD by itself (§3)"),
    row(P.WARMUP, T.WARMUP_DONE, P.ACTIVE, R.ENGAGED, D.REPLY_OK,
        when=(Fact.FC_IN_OFFBOARD, (Fact.ARM_WANTED, False)),
        why="PX4 took OFFBOARD by itself (§3)"),
    row(P.WARMUP, T.WARMUP_STALLED, STAY, None, D.RESTART_WARMUP,
        why="a gap > COM_OF_LOSS_T / 2, or > 4 stream periods (0.25 s at least), was not "
            "warmup_s of steady streaming; an FC unheard for 0.45 × COM_OF_LOSS_T is not "
            "asked (it would be left as silent at once); nor one whose NAV_RCL_ACT (read "
            "after the version) may still say it cuts the motors"),
    row(P.WARMUP, T.WARMUP_ESTIMATE_LOST, BACK, R.ESTIMATE_MISSING, D.STOP_STREAM,
        D.REPLY_FAIL, when=(NOT_FLOWN,),
        why="the setpoint's estimate went invalid during the warm-up"),
    row(P.WARMUP, T.WARMUP_ESTIMATE_LOST, P.RELEASING, R.ESTIMATE_MISSING, D.REPLY_FAIL,
        D.NOTICE, D.HAND_OVER, when=(FLOWN,),
        why=_FLOWN_IN_WARMUP + "the engage fails, the vehicle goes to release_mode"),
    row(P.WARMUP, T.WARMUP_BLOCKED, BACK, _BLOCKED, D.STOP_STREAM, D.REPLY_FAIL,
        when=(NOT_FLOWN,),
        why="the engage gate, judged again: a GCS set MAV_FWDEXTSP=0, COM_OF_LOSS_T too "
            "short for the stream or COM_OBL_RC_ACT to cut the motors during the warm-up "
            "(PX4 broadcasts it); OFFBOARD is never asked for then"),
    row(P.WARMUP, T.WARMUP_BLOCKED, P.RELEASING, _BLOCKED, D.REPLY_FAIL, D.NOTICE,
        D.HAND_OVER, when=(FLOWN,),
        why=_FLOWN_IN_WARMUP + "the gate, judged again, fails the engage; the vehicle "
            "goes to release_mode (a mode request, which MAV_FWDEXTSP does not stop)"),
    row(P.WARMUP, T.WARMUP_UNHEARD, BACK, R.FC_SILENT, D.STOP_STREAM, D.REPLY_FAIL,
        when=(NOT_FLOWN,),
        why="the FC unheard for half the silence limit at 3 warm-up ends in a row: an FC "
            "heard only in bursts kept the warm-up restarting, the engage unanswered (review)"),
    row(P.WARMUP, T.WARMUP_UNHEARD, P.RELEASING, R.FC_SILENT, D.REPLY_FAIL, D.NOTICE,
        D.HAND_OVER, when=(FLOWN,),
        why=_FLOWN_IN_WARMUP + "the engage fails, the vehicle goes to release_mode"),
    row(P.WARMUP, T.LEASE_LAPSED, BACK, R.LEASE_LAPSED, D.STOP_STREAM, D.REPLY_FAIL,
        when=(NOT_FLOWN,), why="never ask for OFFBOARD for a commander that vanished"),
    row(P.ENGAGING, T.LEASE_LAPSED, BACK, R.LEASE_LAPSED, D.STOP_STREAM, D.REPLY_FAIL,
        when=(no(Fact.OFFBOARD_UNSEEN),),
        why="no more requests for a commander that vanished; disarmed, refused, or a report "
            "since the request showed the mode PX4 stayed in: nothing of ours flies (a "
            "hand-over would switch a pilot's vehicle: review)"),
]
# The engage's lapse once PX4 may fly the stream: OFFBOARD asked for (it may be in it, its
# reports late or lost, and may arm on a request already sent), or taken by PX4 itself in
# the warm-up. No more requests, and no vehicle left to the loss action (it was: review,
# mid-take-off, mid-engage, mid-warm-up).
for _phases, _flown in ((frozenset({P.ENGAGING}), (yes(Fact.OFFBOARD_UNSEEN),)),
                       (frozenset({P.ARMING}), ()), (frozenset({P.WARMUP}), (FLOWN,))):
    TIMERS += [
        row(_phases, T.LEASE_LAPSED, P.HOLDING, R.LEASE_LAPSED, D.HOLD_HERE, D.NOTICE,
            D.REPLY_FAIL, when=(*_flown, Fact.HOLD_POSSIBLE),
            why="PX4 may fly the stream (in OFFBOARD unseen, or taken by itself) and may "
                "arm on a request already sent: no more requests, and no vehicle left to "
                "the loss action (it was: review); hold"),
        row(_phases, T.LEASE_LAPSED, P.FAILSAFE, R.LOSS_ACTION, D.STOP_STREAM, D.NOTICE,
            D.REPLY_FAIL, when=(*_flown, (Fact.HOLD_POSSIBLE, False), Fact.PX4_LOSS_ACTION),
            why="no hold possible: PX4's offboard-loss action follows"),
        row(_phases, T.LEASE_LAPSED, P.RELEASING, R.LOSS_ACTION, D.NOTICE, D.HAND_OVER,
            D.REPLY_FAIL,
            when=(*_flown, (Fact.HOLD_POSSIBLE, False), (Fact.PX4_LOSS_ACTION, False)),
            why="no hold possible: command_loss_action"),
    ]
TIMERS += [
    row(P.ACTIVE, T.LEASE_LAPSED, STAY, None, D.LET_MOTION_FINISH, D.NOTICE,
        when=(Fact.MOTION_FINISHING,),
        why="motion.on_lease_lapse = finish: an accepted motion ends first (links with long "
            "drop-outs), at most motion.max_unleased_s; then the lapse below applies"),
    row(P.ACTIVE, T.LEASE_LAPSED, P.HOLDING, R.LEASE_LAPSED, D.HOLD_HERE, D.NOTICE,
        when=(Fact.HOLD_POSSIBLE, NOT_FINISHING),
        why="stop flying a stale setpoint (§6); a motion stops jerk-limited, then holds"),
    row(P.ACTIVE, T.LEASE_LAPSED, P.FAILSAFE, R.LOSS_ACTION, D.STOP_STREAM, D.NOTICE,
        when=((Fact.HOLD_POSSIBLE, False), Fact.PX4_LOSS_ACTION, NOT_FINISHING),
        why="no hold possible: PX4's offboard-loss action follows"),
    row(P.ACTIVE, T.LEASE_LAPSED, P.RELEASING, R.LOSS_ACTION, D.NOTICE, D.HAND_OVER,
        when=((Fact.HOLD_POSSIBLE, False), (Fact.PX4_LOSS_ACTION, False), NOT_FINISHING),
        why="no hold possible: command_loss_action"),
    row(P.HOLDING, T.HOLD_EXPIRED, P.FAILSAFE, R.LOSS_ACTION, D.STOP_STREAM, D.NOTICE,
        when=(Fact.PX4_LOSS_ACTION,), why="PX4's offboard-loss action follows"),
    row(P.HOLDING, T.HOLD_EXPIRED, P.RELEASING, R.LOSS_ACTION, D.NOTICE, D.HAND_OVER,
        when=((Fact.PX4_LOSS_ACTION, False),), why="command_loss_action"),
    row(P.ENGAGING, T.OFFBOARD_RETRIES_EXHAUSTED, BACK, R.MODE_REFUSED, D.STOP_STREAM,
        D.REPLY_FAIL, when=(Fact.OFFBOARD_REFUSED,),
        why="with a diagnosis; PX4 said no and still reports its mode: nothing to hand back"),
    row(P.ENGAGING, T.OFFBOARD_RETRIES_EXHAUSTED, P.RELEASING, R.MODE_TIMEOUT, D.REPLY_FAIL,
        D.NOTICE, D.HAND_OVER, when=((Fact.OFFBOARD_REFUSED, False), Fact.OFFBOARD_UNSEEN),
        why="with a diagnosis; no answer either way, armed: PX4 may have switched with its "
            "reports lost, so release_mode, streaming, rather than its offboard-loss action "
            "(review)"),
    row(P.ENGAGING, T.OFFBOARD_RETRIES_EXHAUSTED, BACK, R.MODE_TIMEOUT, D.STOP_STREAM,
        D.REPLY_FAIL, when=((Fact.OFFBOARD_REFUSED, False), no(Fact.OFFBOARD_UNSEEN)),
        why="with a diagnosis; disarmed, or a report since the request showed the mode PX4 "
            "stayed in: nothing of ours flies, and a hand-over would switch a pilot's "
            "vehicle (review)"),
    row(P.ARMING, T.ARM_RETRIES_EXHAUSTED, BACK, R.ARM_REFUSED, D.STOP_STREAM, D.REPLY_FAIL,
        when=(Fact.ARM_REFUSED,), why="with a diagnosis; PX4 said no: disarmed, nothing flies"),
    row(P.ARMING, T.ARM_RETRIES_EXHAUSTED, P.RELEASING, R.ARM_TIMEOUT, D.REPLY_FAIL,
        D.NOTICE, D.HAND_OVER, when=((Fact.ARM_REFUSED, False),),
        why="with a diagnosis; no report either way (or an arm PX4 accepted, never reported): "
            "it may be armed and climbing to our setpoint, so release_mode, streaming, rather "
            "than its offboard-loss action (review)"),
    row(P.RELEASING, T.HANDOVER_REFUSED, STAY, None, D.ESCALATE, D.NOTICE,
        why="hold -> land -> stop streaming"),
    row(P.RELEASING, T.HANDOVER_EXHAUSTED, P.FAILSAFE, R.ESCALATED, D.STOP_STREAM, D.NOTICE,
        D.REPLY_FAIL, when=(Fact.STREAMING,), why="PX4's offboard-loss action follows"),
    row(P.RELEASING, T.HANDOVER_EXHAUSTED, BACK, (R.MODE_REFUSED, R.MODE_TIMEOUT),
        D.REPLY_FAIL, when=(NOT_STREAMING,), why="a plain mode request the FC did not take"),
]

ENVELOPE = [
    row(frozenset({P.ACTIVE, P.HOLDING}), T.FENCE_BREACH, P.RELEASING, R.FENCE_BREACH,
        D.NOTICE, D.HOLD_HERE, D.HAND_OVER, why="outside the fence: breach_action"),
]

RULES: tuple[Rule, ...] = (*COMMANDS, *FC_EVENTS, *TIMERS, *ENVELOPE)

DEFAULTS: dict[Source, Rule] = {
    Source.COMMAND: Rule(ALL, Source.COMMAND, REFUSE, (R.PHASE_NOT_ALLOWED,),
                         why="answered with a refusal naming phase and command; the lease "
                         "is not renewed"),
    Source.FC: Rule(ALL, Source.FC, IGNORE, why="folded into the vehicle state only"),
    Source.TIMER: Rule(ALL, Source.TIMER, IGNORE, why="not armed in this phase"),
    Source.ENVELOPE: Rule(ALL, Source.ENVELOPE, IGNORE, why="not flying: nothing to breach"),
}

MACHINE = Machine(RULES, DEFAULTS)
