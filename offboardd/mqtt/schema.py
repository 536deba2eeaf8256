"""Command JSON (schema v1) <-> core commands, and the setpoint replay guard.

Command topic (`cmd`), one JSON object per command:

    {"v": 1, "id": "c1", "cmd": "engage", "arm": true,
     "setpoint": {"kind": "position_ned", "north_m": 0, "east_m": 0, "down_m": -5}}
    {"v": 1, "id": "c2", "cmd": "setpoint", "session": "s1", "seq": 3, "setpoint": {...}}
    {"v": 1, "id": "c3", "cmd": "release" | "hold" | "land" | "rtl" | "arm" | "heartbeat"}
    {"v": 1, "id": "c6", "cmd": "heartbeat", "ack": false}   (a reply only if refused)
    {"v": 1, "id": "c4", "cmd": "disarm", "force": false}
    {"v": 1, "id": "c5", "cmd": "emergency_stop", "confirm": true}
    {"v": 1, "id": "q1", "cmd": "flights", "limit": 20}   (queries.py: never for the engine)

Setpoint topic (`setpoint`), flat, high rate, `id` optional:

    {"v": 1, "session": "s1", "seq": 17, "kind": "velocity_ned", "north_m_s": 1, ...}

`CommandDecoder.decode` returns a core command or a coded `Rejection`; it never raises,
so nothing invalid ever reaches the engine. It holds the replay guard's state (one per
bridge, no module globals; a sequence per commander). Each object is declared below as
`schema_fields` specs whose field order is the order of the checks (so which error a reply
names). Pure: no I/O.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from offboardd.core.commands import (
    Arm,
    Command,
    CommanderHeartbeat,
    CommandKind,
    Disarm,
    EmergencyStop,
    Engage,
    Hold,
    Land,
    Release,
    Rtl,
    SetSetpoint,
)
from offboardd.core.motion_commands import MOTION_TYPES
from offboardd.core.setpoints import Setpoint
from offboardd.errors import OffboarddError, SetpointError
from offboardd.mqtt.queries import FLIGHTS_LIMIT_MAX, FlightsQuery, Query
from offboardd.mqtt.schema_fields import (
    FieldSpec,
    JsonType,
    ObjectSpec,
    Problem,
    choice,
    flag,
    integer,
    text,
)
from offboardd.mqtt.schema_motion import MOTION_FIELDS, decode_motion, encode_motion
from offboardd.mqtt.schema_setpoints import SETPOINT_TABLE, setpoint_from_wire, setpoint_to_wire
from offboardd.mqtt.wire import (
    SCHEMA_VERSION,
    MqttErrorCode,
    Rejection,
    echo,
    load_document,
    peek_id,
    stream_id,
)

_VERSION = choice("v", SCHEMA_VERSION, wrong=MqttErrorCode.UNSUPPORTED_VERSION)
_ID_CHARS, _SESSION_CHARS = 128, 64
_SEQ_MAX = 2**53  # JSON-safe integer range (IEEE double)
_SEQUENCE = (text("session", _SESSION_CHARS, None), integer("seq", 0, _SEQ_MAX, None))
# HOLDING's resume token, quoted by a live commander to resume (mqtt-api.md, the lease)
RESUME = text("resume", 64, None)


def _command(name: str, *fields: FieldSpec, sequenced: bool = False) -> ObjectSpec:
    """A `cmd` topic object; its fields are checked in this order (first error reported)."""
    return ObjectSpec(name, (_VERSION, text("id", _ID_CHARS), *(_SEQUENCE if sequenced else ()),
                             choice("cmd", name, wrong=MqttErrorCode.UNKNOWN_COMMAND), *fields))


_HANDOVERS: dict[str, type[Hold | Land | Rtl]] = {"hold": Hold, "land": Land, "rtl": Rtl}
_COMMAND_SPECS: dict[str, ObjectSpec] = {
    # "setpoint": null on engage means none: hold where the vehicle is
    "engage": _command("engage", flag("arm", False),
                       FieldSpec("setpoint", JsonType.OBJECT, default=None), RESUME,
                       sequenced=True),
    "setpoint": _command("setpoint", FieldSpec("setpoint", JsonType.OBJECT), RESUME,
                         sequenced=True),
    "arm": _command("arm", RESUME),
    "disarm": _command("disarm", flag("force", False)),
    "emergency_stop": _command("emergency_stop", flag("confirm", False)),
    "heartbeat": _command("heartbeat", flag("ack", True)),
    "release": _command("release"),
    **{name: _command(name, RESUME) for name in _HANDOVERS},
    **{name: _command(name, *fields, RESUME) for name, fields in MOTION_FIELDS.items()},
    "flights": _command("flights", integer("limit", 1, FLIGHTS_LIMIT_MAX, 20)),
}
# The setpoint topic: a flat object, its envelope checked before the setpoint's fields.
_STREAM_ENVELOPE = (_VERSION, text("session", _SESSION_CHARS), integer("seq", 0, _SEQ_MAX),
                    text("id", _ID_CHARS, None), RESUME)
_STREAM_HEAD = ObjectSpec("a stream setpoint", _STREAM_ENVELOPE)
_STREAM_SPECS: dict[str, ObjectSpec] = {
    kind: ObjectSpec(f"a {kind} stream setpoint", _STREAM_ENVELOPE + spec.fields)
    for kind, (spec, _) in SETPOINT_TABLE.items()
}
_KIND_NAMES = ", ".join(sorted(str(kind) for kind in SETPOINT_TABLE))


@dataclass(frozen=True)
class SeqRepeated(Rejection):
    """A `cmd` command refused as stale only because its session and seq are its
    commander's last: maybe a copy of the command that passed with them (a QoS-1
    redelivery, a retry). The runtime answers it as that command's repeat when it is one
    (replies.py), else refuses it with this. Without it a client's engage delivered twice
    got `setpoint_stale`, then `ok`: two contradicting replies to one id (review)."""

    command: Command | None = None


class ReplayGuard:
    """Drops setpoints that are not newer than the last one of their commander's session.

    Each commander (its reply route: who the engine's lease names) has its own current
    session and last `seq`; a new session id starts that commander over (a restarted
    commander), and the sessions replaced are remembered, for everyone, a bounded number,
    so their late or replayed setpoints are dropped too. One commander's message never
    touches another's sequence: with one guard for all, a single setpoint from a client
    that did not hold the lease (refused `not_in_control`) replaced the holder's session,
    and every later setpoint of the holder's was dropped as stale while its heartbeats
    kept the lease: the vehicle flew the last velocity on (review). A commander's live
    session replayed through another route is still dropped as not newer.

    A setpoint that passes is its commander's last even when the engine then refuses it
    (`not_in_control`): a copy of it delivered late, after that commander took control with
    an engage of no `seq`, would otherwise fly. Delivered once, it never acts later.
    """

    def __init__(self, retired_sessions: int = 4096, commanders: int = 1024) -> None:
        # 4,096 sessions (at most 64 characters each): a commander restarted every minute
        # for three days. 32 were kept once, and a replay of the 33rd-newest was accepted
        # (found by review) while the docs promised "until the daemon restarts".
        self._current: dict[str, tuple[str, int]] = {}  # commander -> (session, last seq)
        self._owner: dict[str, str] = {}  # session -> the commander it is current for
        self._commanders_max = commanders
        self._retired: deque[str] = deque()
        self._retired_set: set[str] = set()
        self._retired_max = retired_sessions
        # Sessions of commanders forgotten beyond `commanders` (least recent first), with
        # their last seq: one that comes back goes on above it, a replay of it stays stale.
        # Forgotten outright, a one-shot client's session (one per OffboardClient run, never
        # replaced, so never retired) was accepted again from seq 0 after 1,024 later runs
        # (review), well short of the 4,096 sessions the docs promise.
        self._forgotten: OrderedDict[str, int] = OrderedDict()

    def check(self, session: str, seq: int, commander: str = "") -> str | None:
        """None when fresh (and remembered); else why it is dropped."""
        owner = self._owner.get(session)
        if owner is not None and owner != commander:  # another's live session, replayed
            last_seq = self._current[owner][1]
            if seq <= last_seq:
                return f"seq {seq} is not newer than {last_seq} in session {session!r}"
        current = self._current.pop(commander, None)  # put back last: the least recent goes
        if current is not None and session == current[0]:
            if seq <= current[1]:
                self._current[commander] = current
                return f"seq {seq} is not newer than {current[1]} in session {session!r}"
        elif session in self._retired_set:
            if current is not None:
                self._current[commander] = current
            return f"session {session!r} was replaced by a newer one"
        else:
            forgotten_seq = self._forgotten.get(session)
            if forgotten_seq is not None and seq <= forgotten_seq:
                if current is not None:
                    self._current[commander] = current
                return f"seq {seq} is not newer than {forgotten_seq} in session {session!r}"
            self._forgotten.pop(session, None)
            if current is not None:
                self._retire(current[0])
                self._owner.pop(current[0], None)
        if len(self._current) >= self._commanders_max:
            # forgotten, not retired: it may still be alive, and if it comes back it goes
            # on above its last seq
            forgotten_session, last = self._current.pop(next(iter(self._current)))
            self._owner.pop(forgotten_session, None)
            self._forgotten[forgotten_session] = last
            if len(self._forgotten) > self._retired_max:
                self._forgotten.popitem(last=False)
        self._current[commander] = (session, seq)
        self._owner[session] = commander
        return None

    def is_last(self, session: str, seq: int, commander: str) -> bool:
        """`seq` is the last that passed in `commander`'s current session."""
        return self._current.get(commander) == (session, seq)

    def _retire(self, session: str) -> None:
        self._retired.append(session)
        self._retired_set.add(session)
        if len(self._retired) > self._retired_max:
            self._retired_set.discard(self._retired.popleft())


class CommandDecoder:
    """JSON documents (already loaded, `"v"` checked) -> core commands or rejections."""

    def __init__(self) -> None:
        self.replay = ReplayGuard()

    def decode_bytes(self, channel: str, payload: bytes, *, max_bytes: int,
                     commander: str = "") -> Command | Query | Rejection:
        """Size, JSON, version, schema, core validity and replay, in that order.
        `commander`: who sent it (its reply route), whose sequence the replay check uses."""
        loaded = load_document(payload, max_bytes=max_bytes)
        if isinstance(loaded, Rejection):
            return loaded
        return self.decode(channel, loaded, commander)

    def decode(self, channel: str, document: dict[str, Any],
               commander: str = "") -> Command | Query | Rejection:
        try:
            if channel == "setpoint":
                return self._decode_stream(document, commander)
            return self._decode_command(document, commander)
        except OffboarddError as exc:  # a core constructor refused (e.g. command_id)
            return Rejection(exc.code, exc.message, peek_id(document))

    def _decode_command(self, doc: dict[str, Any], commander: str
                        ) -> Command | Query | Rejection:
        name = doc.get("cmd")
        if name is None:
            return Rejection(MqttErrorCode.MISSING_FIELD, 'field "cmd" is required', peek_id(doc))
        spec = _COMMAND_SPECS.get(name) if type(name) is str else None
        if spec is None:
            return Rejection(MqttErrorCode.UNKNOWN_COMMAND,
                             f"unknown command {echo(name)}; one of {sorted(_COMMAND_SPECS)}",
                             peek_id(doc))
        fields = spec.read(doc)
        if type(fields) is Problem:
            return Rejection(fields.code, fields.message, peek_id(doc))
        assert isinstance(fields, dict)
        command_id: str = fields["id"]
        if name in ("engage", "setpoint"):
            return self._decode_sequenced(name, fields, command_id, commander)
        if name in MOTION_FIELDS:
            return decode_motion(name, fields, command_id, _setpoint)
        if name == "arm":
            return Arm(command_id, resume=fields["resume"])
        if name == "disarm":
            return Disarm(command_id, force=fields["force"])
        if name == "emergency_stop":
            if not fields["confirm"]:
                return Rejection(MqttErrorCode.CONFIRMATION_REQUIRED,
                                 'emergency_stop force-disarms in flight: add "confirm": true',
                                 command_id)
            return EmergencyStop(command_id, confirm=True)
        if name == "heartbeat":
            return CommanderHeartbeat(command_id, ack=fields["ack"])
        if name == "flights":
            return FlightsQuery(command_id, limit=fields["limit"])
        if name in _HANDOVERS:
            return _HANDOVERS[name](command_id, resume=fields["resume"])
        return Release(command_id)

    def _decode_sequenced(self, name: str, fields: dict[str, Any], command_id: str,
                          commander: str) -> Command | Rejection:
        session, seq = fields["session"], fields["seq"]
        if (session is None) != (seq is None):
            return Rejection(MqttErrorCode.MISSING_FIELD,
                             '"session" and "seq" go together: give both or neither', command_id)
        setpoint = None
        if fields["setpoint"] is not None:
            built = _setpoint(fields["setpoint"], command_id, "setpoint.")
            if isinstance(built, Rejection):
                return built
            setpoint = built
        command: Command
        if name == "engage":
            command = Engage(command_id, setpoint=setpoint, arm=fields["arm"],
                             resume=fields["resume"])
        else:
            assert setpoint is not None
            command = SetSetpoint(command_id, setpoint, resume=fields["resume"])
        if session is not None:
            stale = self.replay.check(session, seq, commander)
            if stale is not None:
                if self.replay.is_last(session, seq, commander):
                    return SeqRepeated(MqttErrorCode.SETPOINT_STALE, stale, command_id, command)
                return Rejection(MqttErrorCode.SETPOINT_STALE, stale, command_id)
        return command

    def _decode_stream(self, doc: dict[str, Any], commander: str) -> Command | Rejection:
        kind = doc.get("kind")
        spec = _STREAM_SPECS.get(kind) if type(kind) is str else None
        if spec is None:  # the envelope's errors come first, then the kind's
            head = _STREAM_HEAD.read(doc, ignore_unknown=True)
            if type(head) is Problem:
                return Rejection(head.code, head.message, peek_id(doc))
            assert isinstance(head, dict)
            return _kind_rejection(kind, _stream_id(head), "")
        fields = spec.read(doc)
        if type(fields) is Problem:
            head = _STREAM_HEAD.read(doc, ignore_unknown=True)
            command_id = _stream_id(head) if isinstance(head, dict) else peek_id(doc)
            return Rejection(fields.code, fields.message, command_id)
        assert isinstance(fields, dict)
        command_id = _stream_id(fields)
        try:
            setpoint = setpoint_from_wire(fields)
        except SetpointError as exc:
            return Rejection(MqttErrorCode.SETPOINT_INVALID, exc.message, command_id)
        stale = self.replay.check(fields["session"], fields["seq"], commander)
        if stale is not None:
            return Rejection(MqttErrorCode.SETPOINT_STALE, stale, command_id)
        return SetSetpoint(command_id, setpoint, resume=fields["resume"])


def _stream_id(envelope: dict[str, Any]) -> str:
    """A stream setpoint's optional `id`, else "<session>:<seq>" (what replies quote)."""
    command_id: str | None = envelope["id"]
    return command_id if command_id is not None else stream_id(envelope["session"],
                                                              envelope["seq"])


def _kind_rejection(kind: object, command_id: str | None, where: str) -> Rejection:
    if kind is None:
        return Rejection(MqttErrorCode.MISSING_FIELD, f'field "{where}kind" is required',
                         command_id)
    return Rejection(MqttErrorCode.UNKNOWN_SETPOINT_KIND,
                     f"unknown setpoint kind {echo(kind)}; one of {_KIND_NAMES}", command_id)


def _setpoint(doc: dict[str, Any], command_id: str, where: str) -> Setpoint | Rejection:
    """The `setpoint` object of a command: kind, then its fields, then the core checks."""
    kind = doc.get("kind")
    row = SETPOINT_TABLE.get(kind) if type(kind) is str else None
    if row is None:
        return _kind_rejection(kind, command_id, where)
    fields = row[0].read(doc, where)
    if type(fields) is Problem:
        return Rejection(fields.code, fields.message, command_id)
    assert isinstance(fields, dict)
    try:
        return setpoint_from_wire(fields)
    except SetpointError as exc:
        return Rejection(MqttErrorCode.SETPOINT_INVALID, exc.message, command_id)


# -- encoding (used by the Python client and by tests) -------------------------------------

def encode_command(command: Command, *, session: str | None = None,
                   seq: int | None = None) -> dict[str, Any]:
    """The JSON object (without "v": `wire.encode_document` adds it) for a core command."""
    doc: dict[str, Any] = {"id": command.command_id, "cmd": str(command.kind)}
    if isinstance(command, Engage | SetSetpoint):
        if session is not None and seq is not None:
            doc.update(session=session, seq=seq)
        if isinstance(command, Engage):
            doc["arm"] = command.arm
        if command.setpoint is not None:
            doc["setpoint"] = setpoint_to_wire(command.setpoint)
        if command.resume is not None:
            doc["resume"] = command.resume
    elif isinstance(command, Arm | Hold | Land | Rtl):
        if command.resume is not None:
            doc["resume"] = command.resume
    elif isinstance(command, Disarm):
        doc["force"] = command.force
    elif isinstance(command, EmergencyStop):
        doc["confirm"] = command.confirm
    elif isinstance(command, CommanderHeartbeat) and not command.ack:
        doc["ack"] = False
    elif isinstance(command, MOTION_TYPES):
        doc.update(encode_motion(command))
    return doc


def encode_stream_setpoint(setpoint: Any, *, session: str, seq: int,
                           command_id: str | None = None,
                           resume: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"session": session, "seq": seq}
    if command_id is not None:
        doc["id"] = command_id
    if resume is not None:
        doc["resume"] = resume
    doc.update(setpoint_to_wire(setpoint))
    return doc


COMMAND_NAMES: tuple[str, ...] = tuple(str(kind) for kind in CommandKind)
