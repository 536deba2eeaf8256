"""Commands, parameters and small protocol replies, with PX4's ACK semantics (§4).

COMMAND_LONG / COMMAND_INT must target our sysid exactly (0 is ignored silently, as in
PX4 v1.14+) and our compid or 0. DO_SET_MODE is ACKed twice on v1.16 (v1.16.2: the
first always ACCEPTED, the real result a few ms later), once on v1.17+; the reason for a
refusal goes out as STATUSTEXT only to GCS links. The request commands v1.18 removed
are UNSUPPORTED there. PARAM_* per the MAVLink parameter protocol with byte-wise
integers; an unknown name gets PARAM_ERROR where the release sends it
(`Px4Version`). Pure: returns messages; the vehicle owns the state it changes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from offboardd.mavlink.codec import Message, dialect
from offboardd.mavlink.params import decode_param_value, param_id_str
from offboardd.sim import modes
from offboardd.sim.outbox import TO_ALL, TO_GCS, LinkRequest, Outgoing
from offboardd.sim.record import AckEvent, CommandEvent
from offboardd.sim.telemetry import BUILDER_IDS, BUILDERS, STREAM_IDS

if TYPE_CHECKING:
    from offboardd.sim.vehicle import Vehicle

d = dialect
ACCEPTED = d.MAV_RESULT_ACCEPTED
TEMPORARILY_REJECTED = d.MAV_RESULT_TEMPORARILY_REJECTED
DENIED = d.MAV_RESULT_DENIED
UNSUPPORTED = d.MAV_RESULT_UNSUPPORTED
FAILED = d.MAV_RESULT_FAILED
SECOND_ACK_DELAY_S = 0.004  # the v1.16.2 second DO_SET_MODE ACK follows within ms
_PROTOCOL_VERSION_ID = 300
FORCE_DISARM_MAGIC = 21196  # MAV_CMD_COMPONENT_ARM_DISARM param2: force
MAV_TYPE_GCS = 6
# COMMAND_INT's x/y are latitude/longitude in degE7 for these (PX4: command_has_location,
# global frames; INT32_MAX in both means "not given")
_LOCATION_COMMANDS = frozenset({d.MAV_CMD_DO_SET_HOME})
_INT32_MAX = 2**31 - 1
PARAM_ERROR_TYPE_MISMATCH = 7  # MAV_PARAM_ERROR_TYPE_MISMATCH (newer than pymavlink 2.4.50)


def handle(v: Vehicle, msg: Message, now_s: float, link_id: int) -> list[Outgoing]:
    kind = msg.get_type()
    if kind in ("COMMAND_LONG", "COMMAND_INT"):
        return _command(v, msg, now_s, link_id)
    if kind in ("PARAM_REQUEST_READ", "PARAM_REQUEST_LIST", "PARAM_SET"):
        if msg.target_system != v.system_id or msg.target_component not in (0, v.component_id):
            return []
        return _param(v, kind, msg, now_s, link_id)
    if kind in ("MISSION_REQUEST_LIST", "MISSION_COUNT", "MISSION_CLEAR_ALL"):
        if msg.target_system != v.system_id:
            return []
        return [Outgoing(_mission_reply(kind, msg), link_id)]
    if kind == "TIMESYNC" and msg.tc1 == 0:  # a request: answer with our time in ns
        return [Outgoing(d.MAVLink_timesync_message(v.boot_us(now_s) * 1000, msg.ts1), link_id)]
    return []  # HEARTBEAT, SYSTEM_TIME, anything else: nothing to answer


def _command(v: Vehicle, msg: Message, now_s: float, link_id: int) -> list[Outgoing]:
    if msg.get_type() == "COMMAND_INT":
        x, y = float(msg.x), float(msg.y)
        if int(msg.command) in _LOCATION_COMMANDS:  # degE7, or "none" (mavlink_receiver)
            x, y = ((math.nan, math.nan) if msg.x == msg.y == _INT32_MAX
                    else (x * 1e-7, y * 1e-7))  # fmt: skip
        params = (msg.param1, msg.param2, msg.param3, msg.param4, x, y, msg.z)
    else:
        params = (msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6,
                  msg.param7)  # fmt: skip
    ignored = ""
    if msg.target_system != v.system_id:
        ignored = f"target_system {msg.target_system} is not {v.system_id}"
    elif msg.target_component not in (0, v.component_id):
        ignored = f"target_component {msg.target_component} is not {v.component_id}"
    v.record.commands.append(CommandEvent(
        now_s, int(msg.command), tuple(float(p) for p in params), msg.get_srcSystem(),
        msg.get_srcComponent(), int(msg.target_system), int(msg.target_component), ignored,
    ))  # fmt: skip
    if ignored:
        return []
    cmd = int(msg.command)
    out: list[Outgoing] = []
    result, text = _execute(v, cmd, params, now_s, link_id=link_id, out=out)

    def ack(res: int) -> Outgoing:
        v.record.acks.append(AckEvent(now_s, cmd, res))
        return Outgoing(
            d.MAVLink_command_ack_message(cmd, res, 0, 0, msg.get_srcSystem(),
                                          msg.get_srcComponent()), link_id,
        )  # fmt: skip

    if _interval_asked(v, cmd, params) is not None:  # PX4 answers before it acknowledges
        return [*out, ack(result)]
    if cmd == d.MAV_CMD_DO_SET_MODE and v.double_ack:
        first = ack(ACCEPTED)
        v.later.append((now_s + SECOND_ACK_DELAY_S, ack(result)))
        v.record.acks[-1] = AckEvent(now_s + SECOND_ACK_DELAY_S, cmd, result)
        replies = [first]
    else:
        replies = [ack(result)]
    if text:
        replies.extend(v.statustext(d.MAV_SEVERITY_CRITICAL, text, now_s, TO_GCS))
    # The mode change itself (CURRENT_MODE) goes out after the ACK, as on PX4.
    return replies + out + v.drain(now_s)


def _execute(v: Vehicle, cmd: int, p: tuple[float, ...], now_s: float, *, link_id: int,
             out: list[Outgoing]) -> tuple[int, str]:  # fmt: skip
    """(MAV_RESULT, refusal text for GCS links) for one command; side effects on `v`."""
    c = v.commander
    if cmd in v.px4.removed_commands:  # v1.18 (#27251, #27252): MAV_CMD_REQUEST_MESSAGE
        return UNSUPPORTED, ""
    if cmd == d.MAV_CMD_DO_SET_MODE:
        mode = modes.mode_from_main_sub(int(p[1]), int(p[2])) if int(p[0]) & 1 else None
        if mode is None:
            return TEMPORARILY_REJECTED, "Mode not supported"
        if mode is modes.OFFBOARD:
            v.record.offboard_requests.append(now_s)
        if c.request_mode(mode, now_s, "command"):
            return ACCEPTED, ""
        return TEMPORARILY_REJECTED, f"Switching to {mode.name} is currently not possible"
    if cmd == d.MAV_CMD_COMPONENT_ARM_DISARM:
        if p[0] >= 0.5:
            # [SITL main] TEMPORARILY_REJECTED until the boot's checks pass (~3 s); a mode
            # change is accepted meanwhile (OFFBOARD too, with a stream)
            if v.booting(now_s):
                return TEMPORARILY_REJECTED, "Arming denied: system not ready (booting)"
            return (ACCEPTED, "") if c.arm(now_s) else (
                TEMPORARILY_REJECTED, f"Arming denied: {c.intent.name} not ready")  # fmt: skip
        forced = int(p[1]) == FORCE_DISARM_MAGIC
        if c.disarm(now_s, "command", forced=forced):
            return ACCEPTED, ""
        return TEMPORARILY_REJECTED, "Disarming denied: not landed"
    if cmd == d.MAV_CMD_INJECT_FAILURE:
        return _inject_failure(v, p, now_s, out)
    if cmd == d.MAV_CMD_DO_FLIGHTTERMINATION:  # Commander::handle_command
        if p[0] <= 0.5 or not c.armed:
            return DENIED, ""
        return (ACCEPTED, "") if c.terminate(now_s, "command") else (TEMPORARILY_REJECTED, "")
    if cmd in (d.MAV_CMD_NAV_TAKEOFF, d.MAV_CMD_NAV_LAND, d.MAV_CMD_NAV_RETURN_TO_LAUNCH):
        target = {d.MAV_CMD_NAV_TAKEOFF: modes.TAKEOFF, d.MAV_CMD_NAV_LAND: modes.LAND,
                  d.MAV_CMD_NAV_RETURN_TO_LAUNCH: modes.RTL}[cmd]  # fmt: skip
        if cmd == d.MAV_CMD_NAV_TAKEOFF:
            alt_amsl = p[6]  # PX4 takes param7 as the AMSL takeoff altitude if given
            takeoff = v.params.get_float("MIS_TAKEOFF_ALT")
            if math.isfinite(alt_amsl) and alt_amsl > v.origin.alt_m:
                takeoff = alt_amsl - v.origin.alt_m
            v.takeoff_alt_m = takeoff
        if c.request_mode(target, now_s, "command"):
            return ACCEPTED, ""
        return TEMPORARILY_REJECTED, f"{target.name} is currently not possible"
    if cmd == d.MAV_CMD_SET_MESSAGE_INTERVAL:
        msg_id = int(p[0])
        name = STREAM_IDS.get(msg_id)
        if name == "AUTOPILOT_VERSION":
            return DENIED, ""
        if name == "HEARTBEAT":  # [SITL main, v1.16.2] FAILED: it stays at 1 Hz
            return FAILED, ""
        if msg_id in v.px4.streamless_ids:  # (v1.16.2: GNSS_INTEGRITY; v1.16-17: #514)
            return FAILED, ""
        if msg_id in v.px4.silent_ids:  # the stream is there, with nothing to send
            return ACCEPTED, ""
        if name == "MISSION_CURRENT":  # the mission manager's, not a stream: main says FAILED
            return FAILED, ""
        if name is None:
            # PX4 main: stopping a stream it has but is not sending is accepted (nothing to
            # stop here either); one it has no stream for fails (measured: CURRENT_EVENT_
            # SEQUENCE -> FAILED; tests/px4/test_px4_stream_plan.py)
            return (ACCEPTED if p[1] < 0 else FAILED), ""
        v.link_requests.append(LinkRequest(link_id, name, p[1]))
        return ACCEPTED, ""
    interval_of = _interval_asked(v, cmd, p)
    if interval_of is not None:
        # [SITL main] ACCEPTED, MESSAGE_INTERVAL first (the handler sends it): the stream's
        # configured interval on this link, -1 where there is none (handle()'s order)
        out.append(Outgoing(d.MAVLink_message_interval_message(
            interval_of, v.stream_interval_us(link_id, interval_of)), link_id))  # fmt: skip
        return ACCEPTED, ""
    if cmd in (d.MAV_CMD_REQUEST_MESSAGE, d.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES,
               d.MAV_CMD_GET_HOME_POSITION):  # fmt: skip
        msg_id = {d.MAV_CMD_REQUEST_MESSAGE: int(p[0]),
                  d.MAV_CMD_REQUEST_AUTOPILOT_CAPABILITIES: d.MAVLINK_MSG_ID_AUTOPILOT_VERSION,
                  d.MAV_CMD_GET_HOME_POSITION: d.MAVLINK_MSG_ID_HOME_POSITION}[cmd]  # fmt: skip
        name = BUILDER_IDS.get(msg_id)
        if msg_id == _PROTOCOL_VERSION_ID and cmd == d.MAV_CMD_REQUEST_MESSAGE:
            # [SITL main, v1.16.2] ACCEPTED, and no PROTOCOL_VERSION decoded on the link
            return ACCEPTED, ""
        if name is None:  # COMPONENT_METADATA...: not served
            # [SITL main, v1.16.2] REQUEST_MESSAGE of a message PX4 cannot build (id
            # 9999): DENIED (it has no stream to create for it), not UNSUPPORTED.
            return DENIED, ""
        built = BUILDERS[name](v, now_s)
        if built is None:
            return TEMPORARILY_REJECTED, ""
        out.append(Outgoing(built, link_id))
        return ACCEPTED, ""
    if cmd == d.MAV_CMD_DO_SET_HOME:
        return _set_home(v, p, now_s)
    if cmd == d.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN and int(p[0]) == 1:
        if c.armed:
            return DENIED, ""
        v.reboot_requested = True  # the server runs the reboot after the ACK is out
        return ACCEPTED, ""
    if cmd == d.MAV_CMD_PREFLIGHT_REBOOT_SHUTDOWN and int(p[0]) == 0 and int(p[1]) == 0:
        return ACCEPTED, ""  # "do nothing": [SITL main, v1.16.2] ACCEPTED
    return UNSUPPORTED, ""


def _inject_failure(v: Vehicle, p: tuple[float, ...], now_s: float,
                    out: list[Outgoing]) -> tuple[int, str]:  # fmt: skip
    """MAV_CMD_INJECT_FAILURE as PX4 main answered it ([SITL main 2026-11-29]: GPS off and
    GPS ok ACCEPTED, SYS_FAILURE_EN 0 or 1); the GNSS cut is gnss.py's. The sim plays no
    other failure: UNSUPPORTED."""
    unit, kind = round(p[0]), round(p[1])
    if unit != d.FAILURE_UNIT_SENSOR_GPS or kind not in (d.FAILURE_TYPE_OK, d.FAILURE_TYPE_OFF):
        return UNSUPPORTED, "Failure injection: the sim plays GPS off and ok only"
    out.extend(v.set_gnss(kind == d.FAILURE_TYPE_OK, now_s))
    return ACCEPTED, ""


def _interval_asked(v: Vehicle, cmd: int, p: tuple[float, ...]) -> int | None:
    """The message id MAV_CMD_GET_MESSAGE_INTERVAL, or REQUEST_MESSAGE of
    MESSAGE_INTERVAL (param2) where the release takes it, asks about; None for any other
    command."""
    if cmd == d.MAV_CMD_GET_MESSAGE_INTERVAL:
        return int(p[0])
    if (cmd == d.MAV_CMD_REQUEST_MESSAGE and v.px4.interval_by_request
            and int(p[0]) == d.MAVLINK_MSG_ID_MESSAGE_INTERVAL):  # fmt: skip
        return int(p[1])
    return None


def _set_home(v: Vehicle, p: tuple[float, ...], now_s: float) -> tuple[int, str]:
    """MAV_CMD_DO_SET_HOME as Commander::handle_command does: DENIED with COM_HOME_EN 0;
    param1 1: here, an automatic home again (HomePosition::setHomePosition(force));
    param1 0: at param5-7 (lat, lon, AMSL; DENIED unless all finite) with the attitude of
    param2-4 in degrees (roll and pitch NaN read as 0), a manual home arming will not move
    (setManually). Both need a position estimate, else TEMPORARILY_REJECTED."""
    if v.params.get_int("COM_HOME_EN") == 0:
        return DENIED, ""
    c = v.commander
    if p[0] > 0.5:
        if not c.estimator_valid:
            return TEMPORARILY_REJECTED, ""
        v.home.set_here(v.position_ned_m, v.attitude_rad, landed=c.landed,
                        now_us=v.boot_us(now_s), force=True)  # fmt: skip
        return ACCEPTED, ""
    lat, lon, alt = p[4], p[5], p[6]
    if not all(math.isfinite(x) for x in (lat, lon, alt)):
        return DENIED, ""
    if not c.estimator_valid:
        return TEMPORARILY_REJECTED, ""
    roll, pitch = (math.radians(x) if math.isfinite(x) else 0.0 for x in (p[1], p[2]))
    v.home.set_manually(lat, lon, alt, (roll, pitch, math.radians(p[3])), v.boot_us(now_s))
    return ACCEPTED, ""


def _param(v: Vehicle, kind: str, msg: Message, now_s: float, link_id: int) -> list[Outgoing]:
    table = v.params
    if kind == "PARAM_REQUEST_LIST":
        return [Outgoing(table.param_value_msg(n), link_id) for n in table.names()]
    if kind == "PARAM_REQUEST_READ":
        name = table.name_at(msg.param_index) if msg.param_index >= 0 else None
        name = name or param_id_str(msg.param_id)
        if name not in table:
            return [Outgoing(_param_error(msg), link_id)] if v.px4.param_error else []
        return [Outgoing(table.param_value_msg(name), link_id)]
    name = param_id_str(msg.param_id)
    if name not in table:
        if v.px4.param_error:
            return [Outgoing(_param_error(msg), link_id)]
        # to GCS links only, as every PX4 STATUSTEXT: [SITL v1.16.2, v1.17.0] nothing came
        # back on the companion link
        return v.statustext(d.MAV_SEVERITY_ERROR, f"[pm] unknown param: {name}", now_s)
    if int(msg.param_type) != table.param_type(name):
        # The value is kept. [SITL main] COM_OBL_RC_ACT (INT32) set as REAL32 5.0 (what
        # pymavlink's param_set_send sends by default): PARAM_ERROR, error 7, read back
        # unchanged; [SITL v1.16.2, v1.17.0] no answer, unchanged ("param types mismatch"
        # on PX4's console only).
        if v.px4.param_error:
            return [Outgoing(_param_error(msg, PARAM_ERROR_TYPE_MISMATCH), link_id)]
        return []
    value = decode_param_value(msg.param_value, table.param_type(name))
    if isinstance(value, float) and not math.isfinite(value):
        return []
    table.set(name, value)
    return [Outgoing(table.param_value_msg(name), TO_ALL)]  # PX4 broadcasts the change


def _param_error(msg: Message, error: int = d.MAV_PARAM_ERROR_DOES_NOT_EXIST) -> Message:
    """PARAM_ERROR (PX4-Autopilot#25699), DOES_NOT_EXIST unless told, to the requester,
    naming the parameter as asked: its id, and the index it was asked by (-1 for a read
    by name, always for a PARAM_SET, which has no index)."""
    index = int(msg.param_index) if msg.get_type() == "PARAM_REQUEST_READ" else -1
    return d.MAVLink_param_error_message(
        msg.get_srcSystem(), msg.get_srcComponent(), param_id_str(msg.param_id).encode(),
        index, error,
    )  # fmt: skip


def _mission_reply(kind: str, msg: Message) -> Message:
    """No missions here: an empty list to download, uploads refused, clearing is a no-op.

    Enough for QGroundControl's connect-time mission, fence and rally downloads to finish.
    """
    src = (msg.get_srcSystem(), msg.get_srcComponent())
    if kind == "MISSION_REQUEST_LIST":
        return d.MAVLink_mission_count_message(*src, 0, msg.mission_type)
    result = d.MAV_MISSION_UNSUPPORTED if kind == "MISSION_COUNT" else d.MAV_MISSION_ACCEPTED
    return d.MAVLink_mission_ack_message(*src, result, msg.mission_type)


def is_gcs_heartbeat(msg: Message) -> bool:
    return bool(msg.get_type() == "HEARTBEAT" and msg.type == MAV_TYPE_GCS)
