"""Commands that ask the daemon something and never reach the engine (nothing to fly).

`{"v": 1, "id": "q1", "cmd": "flights", "limit": 20}`: the recorded flights, newest first,
in the reply's `flights` list (each the summary `offboardd log list` shows). The runtime
answers it from a worker thread: reading the flights folder never stalls the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

FLIGHTS_LIMIT_MAX = 200


@dataclass(frozen=True)
class FlightsQuery:
    command_id: str
    limit: int = 20


Query = FlightsQuery
