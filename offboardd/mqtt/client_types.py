"""Values and errors of the Python client (`offboardd.client` re-exports them).

Pure: a reply document as the client sees it, a watched message, and the errors a
mission script can catch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from offboardd.mqtt.connection import ConnectFailure


@dataclass(frozen=True)
class Reply:
    id: str | None
    ok: bool
    code: str | None
    message: str
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> Reply:
        known = {"v", "id", "ok", "code", "message"}
        # Types checked: a reply with a numeric id (a stray publisher on 3.1.1's shared
        # reply topic) once killed the client's reader for good (review).
        command_id, code = doc.get("id"), doc.get("code")
        return cls(command_id if isinstance(command_id, str) else None, bool(doc.get("ok")),
                   code if isinstance(code, str) else None, str(doc.get("message", "")),
                   {k: v for k, v in doc.items() if k not in known})

    def document(self) -> dict[str, Any]:
        """The reply's fields as one document (what `ctl` prints; `v` left out)."""
        return {"id": self.id, "ok": self.ok, "code": self.code, "message": self.message,
                **self.extra}


@dataclass(frozen=True)
class Watched:
    topic: str
    relative_topic: str  # without the vehicle prefix, e.g. "state", "telemetry/position"
    payload: bytes
    retained: bool


class ClientError(Exception):
    """Base of the client's errors."""


class CommandRefused(ClientError):
    def __init__(self, reply: Reply) -> None:
        super().__init__(f"{reply.code}: {reply.message}")
        self.reply = reply

    def current_token(self) -> str | None:
        """The daemon's current token, when this is a `not_in_control` refusal naming it:
        control changed hands since the token we quoted was read; a command written now
        may quote this one (it came from the daemon just now: a live commander)."""
        token = self.reply.extra.get("resume")
        return token if self.reply.code == "not_in_control" and isinstance(token, str) else None


class ReplyTimeout(ClientError):
    pass


class NoToken(ClientError):
    """Control was to be taken with the daemon's token, but it has none: nobody flies the
    vehicle (phase idle, failsafe...): engage instead."""


class ConnectFailed(ClientError):
    """The broker could not be reached or refused us; `failure.kind` says which way."""

    def __init__(self, failure: ConnectFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure
