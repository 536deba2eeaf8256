"""Declarative checks for the MQTT JSON schema: one frozen `FieldSpec` per field.

Owns the rules every field of schema v1 follows, written once: strict JSON types (no
`"1"` for 1, no `true` for a number, no `3.0` for an integer; an integer is fine for a
number), finite numbers, inclusive ranges, string lengths in characters, JSON `null`
read as "absent" only where the default is `null`, unknown fields refused. An
`ObjectSpec` checks its fields in declaration order and then looks for unknown fields
in document order; the first problem found is the one reported, as
`"<where><field>: <reason>"` with the limit named in plain words.

Must not know about commands, setpoints or the engine (`schema.py` and
`schema_setpoints.py` declare the objects), and must not raise on any input: a
`Problem` comes back instead. Built for the high-rate setpoint topic: specs are built
once at import, and valid input costs no exception, no class and no message string. Pure.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from offboardd.mqtt.wire import ECHO_CHARS, MqttErrorCode, describe

REQUIRED: Any = object()  # `FieldSpec.default` of a field that must be present
_MISSING = object()
_BIGGEST_DOUBLE_BITS = 1024  # ints from 2**1023 upward may not fit an IEEE 754 double


class JsonType(enum.Enum):
    NUMBER = "a number"  # JSON int or float (never a bool), kept as a Python float
    INTEGER = "an integer"  # JSON int only: 3.0 is refused (a JSON-safe sequence number)
    STRING = "a string"  # range = length in characters (code points)
    BOOLEAN = "true or false"
    OBJECT = "an object"
    ARRAY = "an array"  # range = number of items
    STRING_OR_OBJECT = "a string or an object"  # the declaring schema checks which
    CHOICE = "one of the choices"  # exactly one of `choices`, same JSON type


# Module constants: an enum member looked up on its class costs ~0.3 us in Python 3.11.
_NUMBER, _INTEGER, _STRING = JsonType.NUMBER, JsonType.INTEGER, JsonType.STRING
_BOOLEAN, _OBJECT = JsonType.BOOLEAN, JsonType.OBJECT


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a document is refused: a stable code and a message naming the field."""

    code: MqttErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field: its JSON type, inclusive range (numbers: value, strings: length) and
    default. `default=None` also accepts an explicit JSON null (the field is then absent);
    any other default, or `REQUIRED`, does not."""

    name: str
    json_type: JsonType
    low: float = -math.inf
    high: float = math.inf
    default: Any = REQUIRED
    choices: tuple[str | int, ...] = ()
    wrong_choice: MqttErrorCode = MqttErrorCode.WRONG_TYPE  # the code for a value not in choices

    def __post_init__(self) -> None:
        if self.json_type is JsonType.NUMBER and not (math.isfinite(self.low)
                                                      and math.isfinite(self.high)):
            # the range check is also the fast finiteness check of `read`
            raise ValueError(f"{self.name}: a number field needs finite bounds")

    def read(self, value: Any) -> Any:
        """The value as the core takes it (ints as floats for numbers), else a `Problem`
        whose message is the reason only (the object adds the field's name)."""
        kind, low, high = self.json_type, self.low, self.high
        if kind is _NUMBER:
            if type(value) is float:
                if low <= value <= high:
                    return value
                if not math.isfinite(value):
                    return Problem(MqttErrorCode.NOT_FINITE,
                                   f"must be a finite number, not {value!r}")
                return self._out_of_range(value)
            if type(value) is int:
                if low <= value <= high:  # exact int/float comparison: never overflows
                    return float(value)
                if value.bit_length() >= _BIGGEST_DOUBLE_BITS and not _fits_double(value):
                    return Problem(MqttErrorCode.WRONG_TYPE,
                                   f"must be a number that fits a 64-bit float, not an integer of "
                                   f"{value.bit_length()} bits")
                return self._out_of_range(value)
        elif kind is _INTEGER:
            if type(value) is int:
                return value if low <= value <= high else self._out_of_range(value)
        elif kind is _STRING:
            if type(value) is str:
                if not (value.isascii() or _encodes(value)):
                    return Problem(MqttErrorCode.WRONG_TYPE,
                                   "must be valid Unicode text, not a string holding a lone "
                                   "UTF-16 surrogate")
                if low <= len(value) <= high:
                    return value
                return Problem(MqttErrorCode.OUT_OF_RANGE,
                               f"must be {low:.0f} to {high:.0f} characters long, "
                               f"not {len(value)}")
        elif kind is _BOOLEAN:
            if type(value) is bool:
                return value
        elif kind is _OBJECT:
            if type(value) is dict:
                return value
        elif kind is JsonType.ARRAY:
            if type(value) is list:
                if low <= len(value) <= high:
                    return value
                return Problem(MqttErrorCode.OUT_OF_RANGE,
                               f"must have {low:.0f} to {high:.0f} items, not {len(value)}")
        elif kind is JsonType.STRING_OR_OBJECT:
            if type(value) in (str, dict):
                return value
        else:  # CHOICE: same JSON type and value (True is not 1 here)
            if type(value) in (str, int) and value in self.choices:
                return value
            allowed = ", ".join(repr(choice) for choice in self.choices)
            one_of = "one of " if len(self.choices) > 1 else ""
            return Problem(self.wrong_choice, f"must be {one_of}{allowed}, not {describe(value)}")
        return Problem(MqttErrorCode.WRONG_TYPE, f"must be {kind.value}, not {describe(value)}")

    def _out_of_range(self, value: float) -> Problem:
        return Problem(MqttErrorCode.OUT_OF_RANGE,
                       f"must be between {self.low!r} and {self.high!r}, not {describe(value)}")


@dataclass(frozen=True, slots=True)
class ObjectSpec:
    """A JSON object: its fields in the order they are checked; no other key allowed."""

    name: str  # for messages: "position_ned", "engage"...
    fields: tuple[FieldSpec, ...]
    names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(spec.name for spec in self.fields))

    def field_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.fields)

    def read(self, doc: Mapping[str, Any], where: str = "", *,
             ignore_unknown: bool = False) -> dict[str, Any] | Problem:
        """name -> checked value (defaults filled in), or the first `Problem`: fields in
        declaration order first, then unknown keys in document order (unless ignored)."""
        values: dict[str, Any] = {}
        present = 0
        for spec in self.fields:
            name = spec.name
            value = doc.get(name, _MISSING)
            if type(value) is float and spec.json_type is _NUMBER \
                    and spec.low <= value <= spec.high:
                values[name] = value  # the stream's common case, inline: no call
            elif value is _MISSING or (value is None and spec.default is None):
                if spec.default is REQUIRED:
                    return Problem(MqttErrorCode.MISSING_FIELD, f"{where}{name}: is required")
                values[name] = spec.default
                present -= value is _MISSING
            else:
                checked = spec.read(value)
                if type(checked) is Problem:
                    return Problem(checked.code, f"{where}{name}: {checked.message}")
                values[name] = checked
            present += 1
        if len(doc) != present and not ignore_unknown:
            for key in doc:
                if key not in self.names:
                    label = f"{where}{key[:ECHO_CHARS]}" or "payload"  # a "" key at the top
                    return Problem(MqttErrorCode.UNKNOWN_FIELD,
                                   f"{label}: unknown field; {self.name} takes "
                                   f"{', '.join(self.field_names())}")
        return values


def number(name: str, low: float, high: float, default: Any = REQUIRED) -> FieldSpec:
    return FieldSpec(name, JsonType.NUMBER, low, high, default)


def text(name: str, max_length: int, default: Any = REQUIRED) -> FieldSpec:
    return FieldSpec(name, JsonType.STRING, 1, max_length, default)


def integer(name: str, low: int, high: int, default: Any = REQUIRED) -> FieldSpec:
    return FieldSpec(name, JsonType.INTEGER, low, high, default)


def flag(name: str, default: Any = REQUIRED) -> FieldSpec:
    return FieldSpec(name, JsonType.BOOLEAN, default=default)


def choice(name: str, *choices: str | int, default: Any = REQUIRED,
           wrong: MqttErrorCode = MqttErrorCode.WRONG_TYPE) -> FieldSpec:
    return FieldSpec(name, JsonType.CHOICE, default=default, choices=choices, wrong_choice=wrong)


def _encodes(value: str) -> bool:
    """False for a str json.loads built from a lone "\\ud800" escape (not valid UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fits_double(value: int) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True
