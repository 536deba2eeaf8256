"""FlightSummary: what `log list` shows of a flight, folded from its journal records.

The writer folds each record as it writes it (and saves the result as summary.json when
the flight closes); `log list` folds journal.jsonl again when summary.json is missing, as
after a power loss or a `kill -9`. One fold, so both give the same figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MAX_COMMANDERS = 32  # commanders a flight's summary names (the first ones)


@dataclass
class FlightSummary:
    name: str = ""
    start_unix_s: float | None = None
    end_unix_s: float | None = None
    max_altitude_m: float = 0.0  # above the FC's local origin (-down of LOCAL_POSITION_NED)
    max_speed_m_s: float = 0.0
    failsafes: int = 0
    commanders: list[str] = field(default_factory=list)
    commands: int = 0
    refused: int = 0
    modes: list[str] = field(default_factory=list)  # FC modes in the order first seen
    complete: bool = False  # the recorder closed it (else: cut off, e.g. power loss)
    dropped_batches: int = 0  # batches the writer never got (queue full)
    # The daemon's open flight, being written now (`ctl flights`; the daemon knows): not cut
    # off, as it read (review)
    recording: bool = False

    @property
    def duration_s(self) -> float:
        if self.start_unix_s is None or self.end_unix_s is None:
            return 0.0
        return max(0.0, self.end_unix_s - self.start_unix_s)

    def add(self, record: dict[str, Any]) -> None:
        t = record.get("t")
        if isinstance(t, int | float):
            if self.start_unix_s is None:
                self.start_unix_s = float(t)
            self.end_unix_s = float(t)
        kind = record.get("kind")
        if kind == "sample":
            self.max_altitude_m = max(self.max_altitude_m, _num(record.get("max_altitude_m")))
            self.max_speed_m_s = max(self.max_speed_m_s, _num(record.get("max_speed_m_s")))
        elif kind == "command":
            self.commands += 1
            commander = record.get("commander")
            if (isinstance(commander, str) and len(self.commanders) < MAX_COMMANDERS
                    and commander not in self.commanders):
                # the first few name the flight; 20,000 rotating reply routes once cost the
                # writer 1.6 s of CPU and filled summary.json (review)
                self.commanders.append(commander)
        elif kind == "reply" and record.get("ok") is False:
            self.refused += 1
        elif kind == "notice" and record.get("notice") == "failsafe":
            self.failsafes += 1
        elif kind == "fc":
            mode = record.get("mode")
            if isinstance(mode, str) and mode not in self.modes:
                self.modes.append(mode)
        elif kind == "flight" and record.get("event") == "start" and isinstance(t, int | float):
            # the flight starts here, not with the journal's pre-roll (up to 60 s before
            # arming, kept for the engage that led to it): its duration is what was flown
            self.start_unix_s = float(t)
        elif kind == "flight" and record.get("event") == "end":
            self.complete = True
            self.dropped_batches = int(_num(record.get("dropped_batches")))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration_s": round(self.duration_s, 3)}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> FlightSummary:
        known = {k: v for k, v in doc.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
