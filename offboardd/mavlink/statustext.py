"""Join PX4's chunked STATUSTEXT messages into whole texts.

PX4 splits a text longer than 50 characters into STATUSTEXT chunks sharing a non-zero
`id`, numbered by `chunk_seq`; the last chunk is shorter than 50 characters (or NUL
padded). id 0 means "not chunked" (px4-offboard.md §5). Pure: the caller passes `now`
so unfinished texts can be flushed when their other chunks never come.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_CHUNK_LEN = 50
_STALE_S = 1.0  # a chunked text not finished within this is emitted as far as it got


@dataclass(frozen=True)
class StatusText:
    severity: int
    text: str
    source_system: int
    source_component: int


@dataclass
class _Pending:
    severity: int
    started_s: float
    chunks: dict[int, str] = field(default_factory=dict)


class StatusTextAssembler:
    def __init__(self) -> None:
        self._pending: dict[tuple[int, int, int], _Pending] = {}

    def add(
        self,
        *,
        severity: int,
        text: str | bytes,
        text_id: int,
        chunk_seq: int,
        source_system: int,
        source_component: int,
        now_s: float,
    ) -> list[StatusText]:
        """Feed one STATUSTEXT; return the texts it completes (and any gone stale)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        raw_len = len(text)
        text = text.split("\0", 1)[0]
        done = self.flush_stale(now_s)
        if text_id == 0:
            done.append(StatusText(severity, text, source_system, source_component))
            return done
        key = (source_system, source_component, text_id)
        pending = self._pending.setdefault(key, _Pending(severity, now_s))
        pending.chunks[chunk_seq] = text
        if len(text) < _CHUNK_LEN or raw_len < _CHUNK_LEN:
            del self._pending[key]
            joined = "".join(pending.chunks[i] for i in sorted(pending.chunks))
            done.append(StatusText(pending.severity, joined, source_system, source_component))
        return done

    def flush_stale(self, now_s: float) -> list[StatusText]:
        stale = [k for k, p in self._pending.items() if now_s - p.started_s > _STALE_S]
        out = []
        for key in stale:
            p = self._pending.pop(key)
            joined = "".join(p.chunks[i] for i in sorted(p.chunks))
            out.append(StatusText(p.severity, joined, key[0], key[1]))
        return out
