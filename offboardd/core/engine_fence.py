"""The envelope part: admission of commanded setpoints, shaping of streamed ones, PX4's
home for the fence, and breach detection, with the reports each needs.

Wraps core/envelope.Envelope (the geometry and limits) with what the engine needs
around it: a clamp is reported once per change of the clamped limits (a 20 Hz commander
must not flood), a shaping once per commanded setpoint, HOME_POSITION asked for every
2 s while the fence needs it. Which phase a breach matters in is the table's business
(machine_table: fence_breach); this part only says whether the vehicle is outside.

Owns: the Envelope, the report de-duplication, the home-request timer. Must not: move
phases or stream anything.
"""

from __future__ import annotations

import math

from offboardd.core.actions import NoticeKind, RequestMessage, Target
from offboardd.core.engine_outbox import Outbox
from offboardd.core.envelope import Envelope
from offboardd.core.envelope_geometry import describe_face
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.events import FcHomePosition
from offboardd.core.reasons import Reason
from offboardd.core.setpoints import EstimateNeed, Setpoint
from offboardd.core.vehicle import VehicleState
from offboardd.errors import SetpointError

# HOME_POSITION (common.xml #242): asked for with MAV_CMD_REQUEST_MESSAGE while the fence
# is enabled and home unknown (PX4 streams it slowly, or not at all on trimmed links),
# and once more where PX4 moves home: it sets home where it arms and again where it takes
# off (Commander::arm and the land detector's landed -> flying edge, COM_HOME_EN; measured
# on PX4 main: re-armed 10.4 m from the first home, the fence's centre moved there).
HOME_POSITION_ID = 242
HOME_REQUEST_PERIOD_S = 2.0


class EnvelopeGuard:
    def __init__(self, settings: EnvelopeSettings, out: Outbox, now: float) -> None:
        self.envelope = Envelope(settings)
        self._out = out
        self._shaping_noted = False  # the current setpoint's shaping was reported
        self._terrain_hold: Setpoint | None = None  # held while PX4's terrain is invalid
        self._last_clamps: tuple[str, ...] = ()  # limits clamped on the last command
        self._home_moved = False  # PX4 moved home (armed, took off): asked for until heard
        self._next_home_request_s = now

    # -- commanded setpoints -----------------------------------------------------------------

    def admit(self, command_id: str, sp: Setpoint) -> tuple[Setpoint, str] | None:
        """The envelope's verdict on a commanded setpoint: (what to fly, "; clamped: ..."
        for the reply) or None after a coded refusal. A clamp is also a WARNING notice,
        once per change of the clamped limits, so a 20 Hz commander does not flood."""
        blocker = self.envelope.blocker()
        if blocker is not None:
            self._out.refuse(command_id, *blocker)
            return None
        verdict = self.envelope.admit(sp)
        if verdict.setpoint is None:
            assert verdict.reason is not None
            self._out.refuse(command_id, verdict.reason, verdict.message)
            self._out.notice(NoticeKind.WARNING, f"{sp.kind.value} {verdict.message}",
                             verdict.reason)  # fmt: skip
            return None
        limits = tuple(c.limit for c in verdict.clamps)
        if limits and limits != self._last_clamps:
            text = f"{sp.kind.value} {verdict.clamp_text()}"
            self._out.notice(NoticeKind.WARNING, text, verdict.clamps[0].reason)
        self._last_clamps = limits
        return verdict.setpoint, ("; " + verdict.clamp_text() if verdict.clamps else "")

    # -- streamed setpoints ------------------------------------------------------------------

    def rearm_breach(self) -> None:
        """A new engage: a breach counts only after the vehicle was seen inside again."""
        self.envelope.inside_seen = False

    def new_setpoint(self) -> None:
        """A new commanded setpoint: its first shaping is worth a report again."""
        self._shaping_noted = False
        self._terrain_hold = None

    def shape(self, setpoint: Setpoint, vehicle: VehicleState, now: float, *,
              path_checked: bool = False) -> Setpoint:
        """What the envelope lets us stream for `setpoint` now (stopping at the fence), a
        relative altitude in AMSL (Envelope.in_amsl: PX4 converts relative ones wrong), a
        hold where the vehicle was for a terrain altitude while PX4 has no terrain (below).
        `path_checked`: a point of a motion checked whole against the fence (Envelope.shape)."""
        held = self._held_for_terrain(setpoint, vehicle, now)
        if held is not None:
            return held
        setpoint = self.envelope.in_amsl(setpoint)  # (the fallback below must not undo it)
        try:
            out, why = self.envelope.shape(setpoint, vehicle, now, path_checked)
        except SetpointError:  # cannot happen with finite inputs; never crash the stream
            out, why = setpoint, None
        if why is not None and not self._shaping_noted:
            self._shaping_noted = True
            self._out.notice(NoticeKind.WARNING, why[1], why[0])
        return out

    def _held_for_terrain(
        self, setpoint: Setpoint, vehicle: VehicleState, now: float
    ) -> Setpoint | None:
        """PX4 drops a terrain-altitude setpoint while its terrain estimate is invalid
        (mavlink_receiver.cpp: no proof of life), so streaming it on would hand the vehicle
        to the offboard-loss failsafe (measured on PX4 v1.17.0 SIH: AUTO.RTL). Hold where
        the vehicle was when the terrain went (a valid position needed), until it is back."""
        terrain = setpoint.estimate is EstimateNeed.TERRAIN  # (GlobalPosition.estimate)
        if not terrain or vehicle.estimate_valid(EstimateNeed.TERRAIN, now):
            self._terrain_hold = None
            return None
        if self._terrain_hold is None:
            self._terrain_hold = vehicle.hold_setpoint(now)
            if self._terrain_hold is not None:
                why = ("PX4's terrain estimate is invalid (ESTIMATOR_STATUS without "
                       "POS_VERT_AGL) and PX4 drops a terrain-altitude setpoint without it: "
                       "holding where the vehicle is until it is back")
                self._out.notice(NoticeKind.WARNING, why, Reason.ESTIMATE_MISSING)
        return self._terrain_hold

    # -- home and breach ---------------------------------------------------------------------

    def wants_home(self, fc_up: bool) -> bool:
        return fc_up and self.envelope.fence_enabled and (
            self.envelope.home is None or self._home_moved)

    def home_moved(self, now: float) -> None:
        """PX4 armed or took off, and so set home where the vehicle is: ask for it at once
        rather than fence by the old one until the next HOME_POSITION (2 s in the plan)."""
        self._home_moved = True
        self._next_home_request_s = now

    def set_home(self, event: FcHomePosition) -> None:
        self.envelope.set_home(event)
        self._home_moved = False

    def home_deadline(self, fc_up: bool) -> float:
        return self._next_home_request_s if self.wants_home(fc_up) else math.inf

    def ask_home_from(self, now: float) -> None:
        """An FC (re)appeared: ask for its home at once."""
        self._next_home_request_s = now

    def request_home(self, fc_up: bool, target: Target, now: float) -> None:
        if self.wants_home(fc_up) and now >= self._next_home_request_s:
            self._out.emit(RequestMessage(target, HOME_POSITION_ID))
            self._next_home_request_s = now + HOME_REQUEST_PERIOD_S

    def fence_distance_m(self, vehicle: VehicleState, now: float) -> float | None:
        pos = vehicle.local_position
        if pos is None or not vehicle.estimate_valid(EstimateNeed.LOCAL_POSITION, now):
            return None
        face = self.envelope.nearest_face(pos.north_m, pos.east_m, pos.down_m)
        if face is None or not math.isfinite(face.distance_m):
            return None
        return round(face.distance_m, 2)

    def breach(self, vehicle: VehicleState, now: float) -> str | None:
        """The failsafe message if the vehicle is outside the fence now, else None."""
        pos = vehicle.local_position
        if pos is None or not vehicle.estimate_valid(EstimateNeed.LOCAL_POSITION, now):
            return None
        face = self.envelope.breach(pos.north_m, pos.east_m, pos.down_m)
        if face is None:
            return None
        settings = self.envelope.settings
        return (
            f"fence breach: the vehicle is outside the fence "
            f"({describe_face(face, settings)}); breach action: {settings.breach_action.value}"
        )
