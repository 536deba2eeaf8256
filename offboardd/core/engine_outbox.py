"""The engine's outbox: the actions one entry point returns, stamped with the phase.

Every part of the engine that has something to say (a setpoint, a reply, a notice)
emits it here, in order; `handle` / `poll` take the lot. Notices carry the phase the
engine is in when they are emitted, which offboard.py keeps current on every move.
Also keeps the FC warnings the snapshot publishes (each text once).

Owns: the pending actions, the current phase stamp, the kept warnings. Must not: decide
anything; it records what the engine and its parts emit.
"""

from __future__ import annotations

from collections.abc import Iterable

from offboardd.core.actions import Action, Notice, NoticeKind, Reply
from offboardd.core.reasons import Phase, Reason

MAX_KEPT_WARNINGS = 32  # of each kind, the newest


class Outbox:
    def __init__(self) -> None:
        self.actions: list[Action] = []
        self.phase = Phase.IDLE  # set by OffboardEngine.move only
        # Warnings kept for `state.warnings`: about the link (another PX4 on it) for the
        # run; about the FC (its parameters, version, type) until it appears again or
        # reboots, when its checks judge it afresh. Kept for the run, a warning about a
        # parameter fixed since stayed in every state for weeks, and each distinct bad
        # value an FC sent added one more (review).
        self._link_warnings: list[str] = []
        self._fc_warnings: list[str] = []

    def emit(self, action: Action) -> None:
        self.actions.append(action)

    def extend(self, actions: Iterable[Action]) -> None:
        self.actions.extend(actions)

    def notice(
        self, kind: NoticeKind, message: str, reason: Reason | None = None, *,
        severity: int | None = None, command_id: str | None = None,
    ) -> None:
        self.actions.append(Notice(kind, message, self.phase, reason, severity=severity,
                                   command_id=command_id))

    def reply_ok(self, command_id: str, message: str, reason: Reason | None = None, *,
                 resume: str | None = None) -> None:
        self.actions.append(Reply.success(command_id, message, reason, resume=resume))

    def reply_fail(self, command_id: str | None, reason: Reason, message: str, *,
                   resume: str | None = None) -> None:
        """Fail `command_id`'s reply; None (no command waiting) is a no-op, for brevity."""
        if command_id is not None:
            self.actions.append(Reply.failure(command_id, reason, message, resume=resume))

    def refuse(self, command_id: str, reason: Reason, message: str, *,
               resume: str | None = None) -> bool:
        """A command refused up front: its coded reply; False, "not accepted"."""
        self.actions.append(Reply.failure(command_id, reason, message, resume=resume))
        return False

    @property
    def warnings(self) -> tuple[str, ...]:
        return (*self._link_warnings, *self._fc_warnings)

    def warn(self, warnings: list[str], *, about_link: bool = False) -> None:
        kept = self._link_warnings if about_link else self._fc_warnings
        for text in warnings:
            if text not in kept:  # the same FC reconnecting warns again, once kept
                kept.append(text)
                if len(kept) > MAX_KEPT_WARNINGS:
                    del kept[0]
            self.notice(NoticeKind.WARNING, text)

    def retract(self, warnings: Iterable[str]) -> None:
        """What no longer holds (a parameter a GCS fixed) leaves the state's warnings."""
        gone = set(warnings)
        self._fc_warnings = [w for w in self._fc_warnings if w not in gone]

    def forget_fc_warnings(self) -> None:
        """The FC appeared again or rebooted: what was said about it is judged afresh."""
        self._fc_warnings.clear()

    def take(self) -> list[Action]:
        out, self.actions = self.actions, []
        return out
