"""One root error for the whole daemon, with stable codes.

Codes are part of the public interface (they go out in MQTT replies and logs): never
rename one, only add. Errors split as h11 does: `UsageError` is "you misused it"
(bad config, bad URL, bad command), `PeerError` is "the other side misbehaved"
(flight controller, broker).
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    # configuration and command-line
    CONFIG_INVALID = "config_invalid"
    LINK_URL_INVALID = "link_url_invalid"
    # links
    LINK_DOWN = "link_down"
    LINK_OPEN_FAILED = "link_open_failed"
    # commands and setpoints
    SETPOINT_INVALID = "setpoint_invalid"
    COMMAND_INVALID = "command_invalid"
    COMMAND_NOT_ALLOWED = "command_not_allowed"
    NOT_IN_CONTROL = "not_in_control"  # a heartbeat or setpoint from a commander with no lease
    # flight controller
    FC_NOT_PX4 = "fc_not_px4"
    FC_REFUSED = "fc_refused"
    FC_TIMEOUT = "fc_timeout"


class OffboarddError(Exception):
    """Root of every error offboardd raises on purpose."""

    code: ErrorCode = ErrorCode.COMMAND_INVALID

    def __init__(self, message: str, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0])


class UsageError(OffboarddError):
    """The caller misused offboardd: bad configuration, URL, command or setpoint."""


class PeerError(OffboarddError):
    """A peer (flight controller, broker) misbehaved or refused."""


class LinkUrlError(UsageError):
    """A connection URL is malformed; the message names the part that is wrong."""

    code = ErrorCode.LINK_URL_INVALID


class ConfigError(UsageError):
    """A configuration value is wrong; the message names key, value and what is allowed."""

    code = ErrorCode.CONFIG_INVALID


class SetpointError(UsageError):
    """A setpoint PX4 would drop or could not fly; never sent."""

    code = ErrorCode.SETPOINT_INVALID
