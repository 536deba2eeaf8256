"""What a doctor check says: a status, one line of detail, and the fix when there is one.

Values and formatting only; the checks themselves live in device.py, fc_verdicts.py,
broker.py and clock.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    OK = "ok"
    NOTE = "note"  # worth knowing, nothing to fix
    WARN = "warn"  # works, but probably not as the user expects
    FAIL = "FAIL"  # offboardd will not work until this is fixed


@dataclass(frozen=True)
class Check:
    name: str  # short subject: "serial device", "MAV_FWDEXTSP", "broker"
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        fix = f" -> fix: {self.fix}" if self.fix else ""
        return f"{self.status.value:<5} {self.name:<17} {self.detail}{fix}"


def ok(name: str, detail: str) -> Check:
    return Check(name, Status.OK, detail)


def note(name: str, detail: str, fix: str = "") -> Check:
    return Check(name, Status.NOTE, detail, fix)


def warn(name: str, detail: str, fix: str = "") -> Check:
    return Check(name, Status.WARN, detail, fix)


def fail(name: str, detail: str, fix: str = "") -> Check:
    return Check(name, Status.FAIL, detail, fix)


def exit_code(checks: Sequence[Check]) -> int:
    """0 when nothing FAILed (warnings and notes do not fail a deployment), else 1."""
    return 1 if any(c.status is Status.FAIL for c in checks) else 0


def summary(checks: Sequence[Check]) -> str:
    fails = sum(c.status is Status.FAIL for c in checks)
    warns = sum(c.status is Status.WARN for c in checks)
    if fails:
        return (f"{fails} FAIL, {warns} warn: fix the FAIL lines, then run "
                "offboardd doctor again")
    if warns:
        return f"no FAIL, {warns} warn: offboardd can run; read the warn lines"
    return "all checks passed"
