"""UnsentWatch (links/unsent.py): a link holding bytes older than PX4 trusts a stream is
told to abandon them; a slow but moving link never is. Injected time, a fake link."""

from __future__ import annotations

from offboardd.mavlink.links.base import LinkStats
from offboardd.mavlink.links.unsent import UnsentWatch


class FakeLink:
    def __init__(self) -> None:
        self.stats = LinkStats()
        self.queued = 0
        self.abandoned: list[str] = []

    def send(self, n: int) -> None:
        self.stats.bytes_out += n
        self.queued += n

    def unsent_bytes(self) -> int:
        return self.queued

    def abandon_stalled(self, reason: str) -> None:
        self.abandoned.append(reason)
        self.queued = 0


def test_a_slow_link_that_keeps_moving_is_never_abandoned() -> None:
    link, watch = FakeLink(), UnsentWatch()
    for tick in range(400):  # 20 s at 20 Hz; each setpoint leaves 0.3 s after it is sent
        link.send(65)
        if tick >= 6:
            link.queued -= 65
        assert watch.check(link, tick * 0.05, 1.0) == 0  # type: ignore[arg-type]
    assert link.abandoned == []


def test_bytes_older_than_the_loss_timeout_are_abandoned_once() -> None:
    link, watch = FakeLink(), UnsentWatch()
    now = 0.0
    for _ in range(40):  # 2 s of a healthy stream
        link.send(65)
        link.queued = 0
        watch.check(link, now, 1.0)  # type: ignore[arg-type]
        now += 0.05
    abandoned_at = None
    for _ in range(40):  # the peer stops taking bytes
        link.send(65)
        if watch.check(link, now, 1.0) and abandoned_at is None:  # type: ignore[arg-type]
            abandoned_at = now
        now += 0.05
    assert abandoned_at is not None and 2.95 <= abandoned_at <= 3.15
    assert len(link.abandoned) == 1 and "unsent for over 1 s" in link.abandoned[0]
