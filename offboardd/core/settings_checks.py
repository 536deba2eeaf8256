"""Checks the frozen settings dataclasses share: an enum field given as its TOML string,
and numbers that must be finite and within a range. Each raises ConfigError naming the
key, the value and what is allowed (config.py prefixes the section)."""

from __future__ import annotations

import math
from enum import Enum
from typing import TypeVar

from offboardd.errors import ConfigError

E = TypeVar("E", bound=Enum)


def coerce_choice(settings: object, name: str, kind: type[E]) -> None:
    """Turn `settings.name` into a `kind` member (a frozen dataclass: set in place)."""
    value = getattr(settings, name)
    if isinstance(value, kind):
        return
    try:
        object.__setattr__(settings, name, kind(value))
    except ValueError:
        allowed = ", ".join(str(m.value) for m in kind)
        raise ConfigError(f"{name} must be one of {allowed}, got {value!r}") from None


def check_ranges(settings: object, *ranges: tuple[str, float, float]) -> None:
    for name, low, high in ranges:
        value = getattr(settings, name)
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or not low <= value <= high):
            raise ConfigError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
