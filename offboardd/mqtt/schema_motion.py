"""The motion commands on the wire (issue 16): goto, path, orbit, stop <-> core values.

    {"v": 1, "id": "m1", "cmd": "goto", "speed_m_s": 3, "yaw": "face_travel",
     "target": {"kind": "position_ned", "north_m": 20, "east_m": 0, "down_m": -10}}
    {"v": 1, "id": "m2", "cmd": "path", "speed_m_s": 3, "corner_radius_m": 2,
     "waypoints": [{"kind": "position_ned", ...}, ...]}
    {"v": 1, "id": "m3", "cmd": "orbit", "center": {...}, "radius_m": 5, "speed_m_s": 2,
     "turns": 1, "clockwise": true, "yaw": "face_center"}
    {"v": 1, "id": "m4", "cmd": "stop"}

Places (target, waypoints, center) are position_ned or global_position setpoints (their
yaw fields are not used); `yaw` is "keep", "face_travel", "face_center" (orbit) or
{"yaw_deg": 90}. `engage` (goto, path) starts offboard control like an engage, with
`arm`. Structure and ranges are checked here; what no vehicle can fly, by the core
constructors (MotionError -> `command_invalid`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from offboardd.core.motion_commands import (
    MAX_RADIUS_M,
    MAX_SPEED_M_S,
    MAX_TURNS,
    MAX_WAYPOINTS,
    FollowPath,
    Goto,
    MotionCommand,
    Orbit,
    Place,
    Stop,
    Yaw,
    YawMode,
)
from offboardd.core.setpoints import GlobalPosition, PositionNed
from offboardd.mqtt.schema_fields import FieldSpec, JsonType, ObjectSpec, Problem, flag, number
from offboardd.mqtt.schema_setpoints import setpoint_to_wire
from offboardd.mqtt.wire import MqttErrorCode, Rejection

_PLACE_KINDS = ("position_ned", "global_position")
_YAW_WORDS = {"goto": ("keep", "face_travel"), "path": ("keep", "face_travel"),
              "orbit": ("keep", "face_center", "face_travel")}
_YAW_DEG = ObjectSpec("yaw", (number("yaw_deg", -360.0, 360.0),))


def _speed() -> FieldSpec:
    return number("speed_m_s", 0.0, MAX_SPEED_M_S, 2.0)


def _yaw(default: str) -> FieldSpec:
    return FieldSpec("yaw", JsonType.STRING_OR_OBJECT, default=default)


def _place(name: str) -> FieldSpec:
    return FieldSpec(name, JsonType.OBJECT)


MOTION_FIELDS: dict[str, tuple[FieldSpec, ...]] = {
    "goto": (_place("target"), _speed(), _yaw("keep"), flag("engage", False),
             flag("arm", False)),
    "path": (FieldSpec("waypoints", JsonType.ARRAY, 1, MAX_WAYPOINTS), _speed(),
             number("corner_radius_m", 0.0, MAX_RADIUS_M, 1.0), _yaw("keep"),
             flag("engage", False), flag("arm", False)),
    "orbit": (_place("center"), number("radius_m", 0.0, MAX_RADIUS_M), _speed(),
              number("turns", 0.0, MAX_TURNS, 1.0), flag("clockwise", True),
              _yaw("face_center")),
    "stop": (),
}

PlaceReader = Callable[[dict[str, Any], str, str], Any]  # (doc, command_id, where)


def decode_motion(name: str, fields: dict[str, Any], command_id: str,
                  read_setpoint: PlaceReader) -> MotionCommand | Rejection:
    """The core command from checked `fields`; `read_setpoint` is schema._setpoint."""
    resume = fields["resume"]
    if name == "stop":
        return Stop(command_id, resume=resume)
    yaw = _read_yaw(name, fields["yaw"], command_id)
    if isinstance(yaw, Rejection):
        return yaw
    if name == "path":
        waypoints: list[Place] = []
        for i, doc in enumerate(fields["waypoints"]):
            place = _read_place(doc, command_id, f"waypoints[{i}]", read_setpoint)
            if isinstance(place, Rejection):
                return place
            waypoints.append(place)
        return FollowPath(command_id, tuple(waypoints), fields["speed_m_s"],
                          fields["corner_radius_m"], yaw, fields["engage"], fields["arm"],
                          resume)
    key = "target" if name == "goto" else "center"
    place = _read_place(fields[key], command_id, key, read_setpoint)
    if isinstance(place, Rejection):
        return place
    if name == "goto":
        return Goto(command_id, place, fields["speed_m_s"], yaw, fields["engage"], fields["arm"],
                    resume)
    return Orbit(command_id, place, fields["radius_m"], fields["speed_m_s"], fields["turns"],
                 fields["clockwise"], yaw, resume)


def _read_place(doc: Any, command_id: str, where: str,
                read_setpoint: PlaceReader) -> Place | Rejection:
    if type(doc) is not dict:
        return Rejection(MqttErrorCode.WRONG_TYPE, f"{where}: must be an object", command_id)
    if doc.get("kind") not in _PLACE_KINDS:
        return Rejection(MqttErrorCode.UNKNOWN_SETPOINT_KIND,
                         f"{where}.kind: must be one of {', '.join(_PLACE_KINDS)}", command_id)
    place = read_setpoint(doc, command_id, f"{where}.")
    if isinstance(place, Rejection):
        return place
    assert isinstance(place, PositionNed | GlobalPosition)
    return place


def _read_yaw(name: str, value: str | dict[str, Any], command_id: str) -> Yaw | Rejection:
    if isinstance(value, str):
        if value not in _YAW_WORDS[name]:
            allowed = ", ".join(repr(w) for w in _YAW_WORDS[name])
            # an unknown word is wrong_type, as an unknown altitude_frame is (it read
            # out_of_range here: review)
            return Rejection(MqttErrorCode.WRONG_TYPE,
                             f'yaw: must be one of {allowed} or {{"yaw_deg": <degrees>}}, '
                             f"not {value!r}", command_id)
        return Yaw(YawMode(value))
    fields = _YAW_DEG.read(value, "yaw.")
    if type(fields) is Problem:
        return Rejection(fields.code, fields.message, command_id)
    assert isinstance(fields, dict)
    return Yaw(YawMode.FIXED, math.radians(fields["yaw_deg"]))


def encode_motion(cmd: MotionCommand) -> dict[str, Any]:
    """The JSON fields (beyond id and cmd) for a core motion command (the client's)."""
    doc: dict[str, Any] = {} if cmd.resume is None else {"resume": cmd.resume}
    if isinstance(cmd, Stop):
        return doc
    doc.update(speed_m_s=cmd.speed_m_s, yaw=_yaw_to_wire(cmd.yaw))
    if isinstance(cmd, Goto):
        doc.update(target=setpoint_to_wire(cmd.target), engage=cmd.engage, arm=cmd.arm)
    elif isinstance(cmd, FollowPath):
        doc.update(waypoints=[setpoint_to_wire(wp) for wp in cmd.waypoints],
                   corner_radius_m=cmd.corner_radius_m, engage=cmd.engage, arm=cmd.arm)
    else:
        doc.update(center=setpoint_to_wire(cmd.center), radius_m=cmd.radius_m,
                   turns=cmd.turns, clockwise=cmd.clockwise)
    return doc


def _yaw_to_wire(yaw: Yaw) -> str | dict[str, float]:
    if yaw.mode is YawMode.FIXED:
        assert yaw.yaw_rad is not None
        return {"yaw_deg": math.degrees(yaw.yaw_rad)}
    return yaw.mode.value
