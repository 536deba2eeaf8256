"""Fly a Mission through the daemon over MQTT with `OffboardClient`, leg by leg.

It judges everything from what the daemon publishes (retained `state`, `telemetry/position`)
and never touches MAVLink or the simulator, so the same run works against real PX4 behind
`offboardd run`. Every `tick_s` it re-sends the current setpoint (QoS 0: a lost one is
replaced by the next; it also renews the lease), records the commanded and flown paths and
reports Progress to the callback.

If a leg fails or the run is cancelled while the vehicle is ours, it asks the daemon to
land (best effort, bounded) before giving up: a test or a demo that fails must not leave a
vehicle hovering. It must not retry a refused engage or take control back after a
pilot/PX4 preemption: that is the daemon's rule too (design.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from offboardd.aio import raise_if_cancelling
from offboardd.client import ClientError, CommandRefused, ControlLost, OffboardClient
from offboardd.core.setpoints import PositionNed, VelocityNed
from offboardd.scenario import geometry as geo
from offboardd.scenario.feed import PositionFeed, not_ready
from offboardd.scenario.geometry import Vector
from offboardd.scenario.mission import (
    STEERED,
    GotoLeg,
    LandLeg,
    Leg,
    Mission,
    MotionLeg,
    OrbitLeg,
    PathLeg,
    ReleaseLeg,
    TakeoffLeg,
    VelocityLeg,
)
from offboardd.scenario.planned import PlannedTrack
from offboardd.scenario.report import LegResult, PathSample, Progress, ScenarioError, Summary

ProgressCallback = Callable[[Progress], None]
T = TypeVar("T")
StatePredicate = Callable[[dict[str, Any]], bool]
# Phases in which the daemon no longer flies our setpoints: a new engage would be needed.
_LOST_PHASES = frozenset({"failsafe", "preempted", "idle"})
_KINDS = {TakeoffLeg: "takeoff", GotoLeg: "goto", PathLeg: "path", OrbitLeg: "orbit",
          VelocityLeg: "velocity", ReleaseLeg: "release", LandLeg: "land"}


@dataclass(frozen=True)
class RunnerSettings:
    tick_s: float = 0.1  # setpoint re-send and progress period (the daemon streams at 20 Hz)
    ready_timeout_s: float = 30.0  # FC heard, parameters read, position estimate valid
    engaged_timeout_s: float = 5.0  # the engage reply until the state shows it
    position_stale_s: float = 2.0  # telemetry/position older than this does not count
    abort_timeout_s: float = 5.0  # the bounded land request after a failure


class ScenarioRunner:
    def __init__(self, client: OffboardClient, mission: Mission, *,
                 on_progress: ProgressCallback | None = None,
                 settings: RunnerSettings | None = None) -> None:
        self.client = client
        self.mission = mission
        self.on_progress = on_progress
        self.settings = settings or RunnerSettings()
        self._loop = asyncio.get_running_loop()
        self._feed = PositionFeed(client, stale_s=self.settings.position_stale_s,
                                  on_sample=self._on_sample)
        self._t0: float | None = None
        self._commanded: list[PathSample] = []
        self._planned_speed: list[tuple[float, float]] = []  # motions' planned speed
        self._flown: list[PathSample] = []
        self._results: list[LegResult] = []
        self._in_control = False  # engaged and not yet handed back
        self._failure: str | None = None
        self._leg_index = 0
        self._origin: Vector = (0.0, 0.0, 0.0)  # where the vehicle was when the mission began
        self._worst_m: float | None = None  # the current leg's max tracking error
        # the commanded segment flown before this one: a leg ends within its tolerance of
        # the corner, so the first metres of the next are judged against both segments
        self._last_segment: tuple[Vector, Vector] | None = None

    async def run(self) -> Summary:
        """Fly every leg; return the summary (ok=False with the reason if a leg failed)."""
        async with self._feed:
            try:
                self._origin = previous = await self._wait_ready()
                self._t0 = self._loop.time()
                for index, leg in enumerate(self.mission.legs):
                    self._leg_index = index
                    previous = await self._fly_leg(leg, previous)
            except (ScenarioError, ClientError) as exc:
                self._failure = str(exc)
                if isinstance(exc, ControlLost):
                    self._in_control = False  # not ours any more: never land over a pilot
                await self._abort()
            except asyncio.CancelledError:
                self._failure = "cancelled"
                await asyncio.shield(self._abort())
                raise
        return self.summary()

    def summary(self) -> Summary:
        """The summary so far (complete after run() returned; partial after a cancel)."""
        return Summary(
            mission=self.mission.name,
            ok=self._failure is None and len(self._results) == len(self.mission.legs),
            failure=self._failure, legs=tuple(self._results), total_s=self._elapsed(),
            commanded=tuple(self._commanded), flown=tuple(self._flown),
            planned_speed=tuple(self._planned_speed),
        )

    # -- legs ----------------------------------------------------------------------------
    async def _fly_leg(self, leg: Leg, previous: Vector) -> Vector:
        start_s, self._worst_m, end = self._elapsed(), None, previous
        try:
            if isinstance(leg, TakeoffLeg):
                end = geo.add(self._origin, (0.0, 0.0, -leg.altitude_m))
                self._command(previous, at_s=start_s)
                self._command(end, at_s=start_s)  # commanded from the engage on
                self._in_control = True  # from the engage on, a failure must land...
                try:
                    await self._with_progress(self.client.engage(PositionNed(*end), arm=True))
                except CommandRefused:
                    self._in_control = False  # ...unless the daemon refused it: still idle
                    raise
                # the reply can overtake the retained state: wait until it shows the engage,
                # so that an "idle" seen later really means control was lost
                await self._wait_state(self.settings.engaged_timeout_s, "the engaged state",
                                       lambda s: s.get("phase") in ("active", "holding"))
                await self._fly_to(leg.tolerance_m, leg.timeout_s, previous, end)
            elif isinstance(leg, GotoLeg):
                end = geo.add(self._origin, leg.offset_ned_m)
                await self._fly_to(leg.tolerance_m, leg.timeout_s, previous, end)
            elif isinstance(leg, PathLeg | OrbitLeg):
                end = await self._fly_motion(leg, previous)
            elif isinstance(leg, VelocityLeg):
                end = await self._fly_velocity(leg, previous)
            elif isinstance(leg, ReleaseLeg):
                await self.client.release()
                self._in_control = False
                await self._wait_state(leg.timeout_s, "the release",
                                       lambda s: s.get("phase") == "idle")
            else:
                await self._land(leg)
        except (ScenarioError, ClientError) as exc:
            self._finish_leg(leg, start_s, ok=False, detail=str(exc))
            raise
        self._finish_leg(leg, start_s, ok=True)
        straight = isinstance(leg, TakeoffLeg | GotoLeg | VelocityLeg)
        self._last_segment = (previous, end) if straight else None
        return end if isinstance(leg, STEERED) else (self._feed.latest or previous)

    async def _fly_to(self, tolerance_m: float, timeout_s: float, start: Vector,
                      target: Vector) -> None:
        setpoint = PositionNed(*target)
        deadline = self._loop.time() + timeout_s
        while True:
            await self.client.setpoint(setpoint)
            self._command(target)
            self._check_control()
            position = self._feed.fresh()
            if position is not None:
                self._track(position, start, target)
                self._report(geo.approach_fraction(start, target, position))
                if geo.distance_m(position, target) <= tolerance_m:
                    return
            if self._loop.time() > deadline:
                where = "no position" if position is None else (
                    f"{geo.distance_m(position, target):.2f} m away")
                raise ScenarioError(f"not within {tolerance_m} m of the target after "
                                    f"{timeout_s:g} s ({where})")
            await asyncio.sleep(self.settings.tick_s)

    async def _fly_motion(self, leg: MotionLeg, start: Vector) -> Vector:
        """One path / orbit command; the daemon plans and streams it, we watch its plan
        (state.motion) and the flown position until its motion_done."""
        at = self._origin
        if isinstance(leg, PathLeg):
            handle = await self.client.path(
                [PositionNed(*geo.add(at, wp)) for wp in leg.waypoints_ned_m],
                speed_m_s=leg.speed_m_s, corner_radius_m=leg.corner_radius_m)
        else:
            handle = await self.client.orbit(PositionNed(*geo.add(at, leg.center_ned_m)),
                                             leg.radius_m, speed_m_s=leg.speed_m_s,
                                             turns=leg.turns)
        track = PlannedTrack(handle.command_id)
        deadline = self._loop.time() + leg.timeout_s
        while not handle.finished:
            # nothing is published in this loop, so nothing else would notice a cancellation
            # that aiomqtt swallowed (offboardd.aio): seen in CI, a SIGTERMed demo flew on
            raise_if_cancelling()
            self._check_control()
            if (point := track.sample(self.client.state or {}, self._elapsed())) is not None:
                self._command(point)
            position = self._feed.fresh()
            if position is not None and (error := track.error_m(position)) is not None:
                self._worst_m = error if self._worst_m is None else max(self._worst_m, error)
            self._report(track.progress)
            if self._loop.time() > deadline:
                raise ScenarioError(f"{leg.name} not done after {leg.timeout_s:g} s")
            await asyncio.sleep(self.settings.tick_s)
        await handle.done()  # MotionAborted (a ClientError) if it ended early
        self._planned_speed += track.speeds
        return track.points[-1] if track.points else (self._feed.latest or start)

    async def _fly_velocity(self, leg: VelocityLeg, start: Vector) -> Vector:
        setpoint = VelocityNed(*leg.velocity_ned_m_s)
        end = geo.add(start, geo.scale(leg.velocity_ned_m_s, leg.duration_s))
        t_start = self._loop.time()
        while (elapsed_s := self._loop.time() - t_start) < leg.duration_s:
            await self.client.setpoint(setpoint)
            self._command(geo.add(start, geo.scale(leg.velocity_ned_m_s, elapsed_s)))
            self._check_control()
            position = self._feed.fresh()
            if position is not None:
                self._track(position, start, end)
            self._report(geo.time_fraction(elapsed_s, leg.duration_s))
            await asyncio.sleep(min(self.settings.tick_s, leg.duration_s - elapsed_s))
        self._command(end)
        return end

    async def _land(self, leg: LandLeg) -> None:
        above = self._feed.latest or self._origin
        top_m, ground_m = -above[2], -self._origin[2]
        await self.client.land()
        self._in_control = False
        self._command(above)
        self._command((above[0], above[1], self._origin[2]))  # PX4 descends where it is

        def fraction() -> float:
            now = self._feed.latest
            if now is None or top_m - ground_m < 0.1:
                return 0.0
            return min(0.99, max(0.0, (top_m + now[2]) / (top_m - ground_m)))

        await self._wait_state(
            leg.timeout_s, "landing and disarming",
            lambda s: not s.get("armed") and s.get("landed_state") == "on_ground", fraction)

    # -- helpers -------------------------------------------------------------------------
    async def _wait_ready(self) -> Vector:
        timeout_s = self.settings.ready_timeout_s
        try:
            state = await self.client.wait_for_state(lambda s: not not_ready(s), timeout_s)
        except ClientError:
            last = self.client.state
            lacking = not_ready(last) if last is not None else [
                "its state: no state from the daemon (running? this vehicle id and broker?)"]
            raise ScenarioError(f"the daemon is not ready to fly after {timeout_s:g} s; "
                                f"still waiting for {', '.join(lacking)}") from None
        if state.get("armed") or state.get("landed_state") != "on_ground":
            raise ScenarioError("the mission starts on the ground, disarmed; the vehicle is "
                                f"armed={state.get('armed')} {state.get('landed_state')}")
        if state.get("phase") != "idle":
            raise ScenarioError(f"the daemon is busy (phase {state.get('phase')})")
        deadline = self._loop.time() + timeout_s
        while (position := self._feed.fresh()) is None:
            self._feed.check()
            if self._loop.time() > deadline:
                raise ScenarioError("no telemetry/position from the daemon "
                                    "(is mqtt.telemetry_rates_hz.position 0?)")
            await asyncio.sleep(0.05)
        return position

    async def _wait_state(self, timeout_s: float, what: str, done: StatePredicate,
                          fraction: Callable[[], float] = lambda: 0.0) -> None:
        deadline = self._loop.time() + timeout_s
        while not (self.client.state is not None and done(self.client.state)):
            self._feed.check()
            if self._loop.time() > deadline:
                raise ScenarioError(f"{what} did not happen within {timeout_s:g} s")
            self._report(fraction())
            await asyncio.sleep(self.settings.tick_s)

    async def _with_progress(self, awaitable: Awaitable[T]) -> T:
        """Await a command's reply while still reporting progress every tick."""
        task = asyncio.ensure_future(awaitable)
        try:
            while not task.done():
                self._report(0.0)
                await asyncio.wait([task], timeout=self.settings.tick_s)
        finally:
            task.cancel()  # no-op once done; on our own cancellation, do not leave it behind
        return task.result()

    def _check_control(self) -> None:
        self._feed.check()
        state = self.client.state or {}
        if state.get("phase") in _LOST_PHASES:
            # Not ours any more (a pilot, PX4 or the daemon's failsafe took over): no landing
            # request either, it would override whoever has the vehicle now.
            self._in_control = False
            raise ScenarioError(f"control lost: the daemon is {state.get('phase')} "
                                f"({state.get('reason')}), PX4 reports {state.get('fc_mode')}")

    def _on_sample(self, position: Vector) -> None:
        if self._t0 is not None:
            self._flown.append(PathSample(self._elapsed(), *position))

    def _command(self, target: Vector, *, at_s: float | None = None) -> None:
        self._commanded.append(PathSample(self._elapsed() if at_s is None else at_s, *target))

    def _track(self, position: Vector, start: Vector, end: Vector) -> None:
        error_m = geo.distance_to_segment_m(position, start, end)
        if self._last_segment is not None:
            error_m = min(error_m, geo.distance_to_segment_m(position, *self._last_segment))
        self._worst_m = error_m if self._worst_m is None else max(self._worst_m, error_m)

    def _elapsed(self) -> float:
        return 0.0 if self._t0 is None else self._loop.time() - self._t0

    def _report(self, fraction: float, *, done: bool = False) -> None:
        if self.on_progress is None:
            return
        state = self.client.state or {}
        self.on_progress(Progress(
            leg_index=self._leg_index, leg_count=len(self.mission.legs),
            leg_name=self.mission.legs[self._leg_index].name, fraction=fraction,
            phase=str(state.get("phase", "?")), fc_mode=str(state.get("fc_mode", "?")),
            armed=bool(state.get("armed")), position_ned_m=self._feed.latest,
            elapsed_s=self._elapsed(), leg_done=done,
        ))

    def _finish_leg(self, leg: Leg, start_s: float, *, ok: bool, detail: str = "") -> None:
        tracked = isinstance(leg, STEERED)
        self._results.append(LegResult(
            name=leg.name, kind=_KINDS[type(leg)], ok=ok, start_s=start_s,
            duration_s=self._elapsed() - start_s,
            max_tracking_error_m=self._worst_m if tracked else None, detail=detail))
        self._report(1.0 if ok else 0.0, done=True)

    async def _abort(self) -> None:
        if not self._in_control:
            return
        self._in_control = False
        with contextlib.suppress(ClientError, TimeoutError):
            async with asyncio.timeout(self.settings.abort_timeout_s):
                await self.client.land()
