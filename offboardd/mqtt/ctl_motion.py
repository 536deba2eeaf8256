"""`offboardd ctl goto | path | orbit | stop`: the motions the daemon plans (issue 16).

    offboardd ctl goto 20 0 -10 --speed 3 --yaw face_travel --wait
    offboardd ctl path '[[10,0,-5],[10,10,-5],[0,10,-5],[0,0,-5]]' --corner-radius 2
    offboardd ctl orbit 0 5 -5 --radius 5 --turns 2 --ccw --wait
    offboardd ctl stop

Places are local NED metres (north east down), or a setpoint JSON object where one is
taken (`--target`, the path's list items) for a global_position. `--wait` keeps the lease
and prints the motion's warnings as they come (a vehicle it waits for: docs/motion.md), then
its motion_done event (exit 1 if the motion was aborted, with why).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from offboardd.client import MotionAborted, MotionHandle, OffboardClient
from offboardd.core.motion_commands import Place, Yaw, YawMode
from offboardd.core.setpoints import PositionNed
from offboardd.errors import OffboarddError
from offboardd.mqtt.schema_fields import Problem
from offboardd.mqtt.schema_setpoints import SETPOINT_TABLE, setpoint_from_wire

MOTIONS = ("goto", "path", "orbit", "stop")
EXIT_OK, EXIT_ABORTED = 0, 1
_WARNINGS_POLL_S = 0.5  # how soon a warning about the awaited motion is printed


def add_motion_parsers(actions: Any) -> None:
    goto = actions.add_parser("goto", help="fly to a point (planned, jerk-limited)")
    goto.add_argument("ned", nargs="*", type=float, help="north east down (m)")
    goto.add_argument("--target", help="a position_ned or global_position setpoint JSON")
    path = actions.add_parser("path", help="fly through waypoints, corners rounded")
    path.add_argument("waypoints", help="JSON list of [n, e, d] or setpoint objects")
    path.add_argument("--corner-radius", type=float, default=1.0, dest="corner_radius_m")
    orbit = actions.add_parser("orbit", help="circle a centre")
    orbit.add_argument("ned", nargs=3, type=float, help="centre: north east down (m)")
    orbit.add_argument("--radius", type=float, required=True, dest="radius_m")
    orbit.add_argument("--turns", type=float, default=1.0)
    orbit.add_argument("--ccw", action="store_true", help="counter-clockwise seen from above")
    stop = actions.add_parser("stop", help="stop smoothly, then hold")
    for parser in (goto, path, orbit):
        parser.add_argument("--speed", type=float, default=2.0, dest="speed_m_s")
        parser.add_argument("--yaw", default=None,
                            help="keep, face_travel, face_center (orbit) or degrees")
    for parser in (goto, path):
        parser.add_argument("--engage", action="store_true", help="take control first")
        parser.add_argument("--arm", action="store_true", help="with --engage: arm too")
    for parser in (goto, path, orbit, stop):
        parser.add_argument("--wait", action="store_true",
                            help="keep the lease and wait for motion_done")
        parser.add_argument("--resume", action="store_true",
                            help="take control (from holding, or from another commander) "
                                 "quoting the daemon's token")


def _place(value: Any, where: str) -> Place:
    if isinstance(value, list) and len(value) == 3:
        return PositionNed(*(float(x) for x in value))
    kind = value.get("kind") if isinstance(value, dict) else None
    if kind not in ("position_ned", "global_position"):
        raise OffboarddError(f"{where}: [n, e, d] or a position_ned / global_position object")
    fields = SETPOINT_TABLE[kind][0].read(value, f"{where}.")
    if isinstance(fields, Problem):
        raise OffboarddError(fields.message)
    place = setpoint_from_wire(fields)
    assert isinstance(place, Place)
    return place


def _yaw(text: str | None, default: YawMode) -> Yaw:
    if text is None:
        return Yaw(default)
    if text in {m.value for m in YawMode} - {"fixed"}:
        return Yaw(YawMode(text))
    return Yaw(YawMode.FIXED, math.radians(float(text)))


async def run_motion(c: OffboardClient, args: argparse.Namespace) -> int:
    action: str = args.action
    if action == "stop":
        handle = await c.stop(resume=args.resume)
    elif action == "goto":
        target = (json.loads(args.target) if args.target else args.ned)
        handle = await c.goto(_place(target, "target"), speed_m_s=args.speed_m_s,
                              yaw=_yaw(args.yaw, YawMode.KEEP), engage=args.engage,
                              arm=args.arm, resume=args.resume)
    elif action == "path":
        points = json.loads(args.waypoints)
        if not isinstance(points, list):
            raise OffboarddError("waypoints: a JSON list")
        handle = await c.path([_place(p, f"waypoints[{i}]") for i, p in enumerate(points)],
                              speed_m_s=args.speed_m_s, corner_radius_m=args.corner_radius_m,
                              yaw=_yaw(args.yaw, YawMode.KEEP), engage=args.engage,
                              arm=args.arm, resume=args.resume)
    else:
        handle = await c.orbit(_place(args.ned, "centre"), args.radius_m,
                               speed_m_s=args.speed_m_s, turns=args.turns,
                               clockwise=not args.ccw, yaw=_yaw(args.yaw, YawMode.FACE_CENTER),
                               resume=args.resume)
    print(json.dumps(handle.reply.document()), flush=True)
    return await _wait(c, handle) if args.wait else EXIT_OK


async def _wait(c: OffboardClient, handle: MotionHandle) -> int:
    """Keep the lease until the motion ends; its warnings (a vehicle it waits for) are
    printed as they come, so a wait that takes long says why."""
    c.keep_lease()
    told = 0
    try:
        while True:
            try:
                done = await handle.done(timeout_s=_WARNINGS_POLL_S)
                break
            except TimeoutError:
                told = _tell(handle, told)
    except MotionAborted as exc:
        _tell(handle, told)
        print(json.dumps({"id": exc.command_id, "aborted": True, "reason": exc.reason,
                          "message": exc.message}), flush=True)
        return EXIT_ABORTED
    _tell(handle, told)
    print(json.dumps(done), flush=True)
    return EXIT_OK


def _tell(handle: MotionHandle, told: int) -> int:
    for warning in handle.warnings[told:]:
        print(json.dumps(warning), flush=True)
    return len(handle.warnings)
