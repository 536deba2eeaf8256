"""The outbox's rules with injected float time: nothing blocks, nothing grows unbounded."""

from __future__ import annotations

import pytest

from offboardd.errors import ConfigError
from offboardd.mqtt.bridge import MqttSettings, backoff_s
from offboardd.mqtt.outbox import Outbound, Outbox


def item(topic: str, payload: bytes = b"x", qos: int = 1) -> Outbound:
    return Outbound(topic, payload, qos, False)


def test_priority_replies_then_state_then_events() -> None:
    box = Outbox(state_min_interval_s=0.0)
    box.on_connected()
    box.put_event(item("ev"))
    box.put_state(item("state"))
    box.put_reply(item("reply"))
    assert [box.pop(0.0).topic for _ in range(3)] == ["reply", "state", "ev"]  # type: ignore[union-attr]
    assert box.pop(0.0) is None and box.next_due_s(0.0) is None


def test_state_keeps_only_latest_and_is_rate_limited_then_resent_on_reconnect() -> None:
    box = Outbox(state_min_interval_s=0.5)
    box.on_connected()
    box.put_state(item("state", b"1"))
    assert box.pop(0.0) == item("state", b"1")
    box.put_state(item("state", b"2"))
    box.put_state(item("state", b"3"))
    assert box.pop(0.2) is None and box.next_due_s(0.2) == pytest.approx(0.5)
    assert box.pop(0.5) == item("state", b"3")
    assert box.pop(0.6) is None
    box.on_disconnected()
    box.on_connected()  # broker may have lost the retained copy
    assert box.pop(0.7) == item("state", b"3")


def test_stream_refused_while_disconnected_and_throttled_to_rate() -> None:
    box = Outbox(state_min_interval_s=0.0)
    assert not box.admit_stream("t/pos", now=0.0, rate_hz=5)
    box.on_connected()
    assert box.admit_stream("t/pos", now=1.0, rate_hz=5)
    assert box.admit_stream("t/pos", now=1.05, rate_hz=5)  # early, within a period
    assert not box.admit_stream("t/pos", now=1.1, rate_hz=5)  # too early
    assert box.admit_stream("t/pos", now=1.25, rate_hz=5)
    assert not box.admit_stream("t/off", now=1.25, rate_hz=0)
    assert box.pop(1.25) is None and len(box) == 0  # admitted stream is never queued here
    box.on_disconnected()
    assert not box.admit_stream("t/pos", now=2.0, rate_hz=5)
    assert box.stats.dropped_stream == 3 and box.stats.throttled_stream == 1


def test_stream_pacing_tolerates_jitter_but_caps_the_long_run_rate() -> None:
    box = Outbox(state_min_interval_s=0.0)
    box.on_connected()
    # a caller pacing at 10 Hz with +-30 ms of jitter: every sample gets through
    offers = [k * 0.1 + (0.03 if k % 2 else -0.03) for k in range(1, 50)]
    assert all(box.admit_stream("t/a", now=t, rate_hz=10) for t in offers)
    # a caller offering at 100 Hz for 5 s: about 10 Hz gets through
    accepted = sum(box.admit_stream("t/b", now=k * 0.01, rate_hz=10) for k in range(500))
    assert 48 <= accepted <= 52


def test_events_and_replies_are_bounded_oldest_dropped() -> None:
    box = Outbox(state_min_interval_s=0.0, max_replies=2, max_events=3)
    for i in range(10):
        box.put_event(item("ev", str(i).encode()))
        box.put_reply(item("re", str(i).encode()))
    assert len(box) == 5
    payloads = [box.pop(0.0).payload for _ in range(5)]  # type: ignore[union-attr]
    assert payloads == [b"8", b"9", b"7", b"8", b"9"]
    assert box.stats.dropped_events == 7 and box.stats.dropped_replies == 8


def test_a_full_reply_queue_drops_the_gates_refusals_before_any_engine_reply() -> None:
    """64 answers to junk on fresh response topics pushed a pilot's queued `land` reply out
    (review, 2026-11-29)."""
    box = Outbox(state_min_interval_s=0.0, max_replies=3)
    box.put_reply(item("pilot", b"land ok"))
    for i in range(10):
        box.put_reply(Outbound(f"junk/{i}", b"refused", 1, False, refusal=True))
    box.put_reply(item("pilot", b"hold ok"))
    queued = [box.pop(0.0) for _ in range(3)]
    assert [(q.topic, q.payload) for q in queued if q is not None] == [
        ("pilot", b"land ok"), ("junk/9", b"refused"), ("pilot", b"hold ok")]
    box.put_reply(item("a", b"1"))
    box.put_reply(item("b", b"2"))
    box.put_reply(item("c", b"3"))
    box.put_reply(Outbound("junk", b"refused", 1, False, refusal=True))  # full of replies
    assert [box.pop(0.0).topic for _ in range(3)] == ["a", "b", "c"]  # type: ignore[union-attr]
    assert box.pop(0.0) is None and box.stats.dropped_replies == 10


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    assert backoff_s(0, 0.5, 30, lambda: 1.0) == 0.5
    assert backoff_s(3, 0.5, 30, lambda: 1.0) == 4.0
    assert backoff_s(3, 0.5, 30, lambda: 0.0) == 2.0
    assert backoff_s(100, 0.5, 30, lambda: 1.0) == 30.0


@pytest.mark.parametrize(
    "overrides",
    [{"vehicle_id": "a/b"}, {"protocol": "4"}, {"port": 0}, {"reconnect_min_s": 0},
     {"telemetry_rates_hz": {"bogus": 1.0}}, {"telemetry_rates_hz": {"gps": -1.0}},
     {"max_payload_bytes": 10}],
)
def test_settings_refuse_bad_values_naming_the_key(overrides: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"mqtt\."):
        MqttSettings(**overrides)  # type: ignore[arg-type]


def test_qos_0_is_refused_it_goes_to_paho_directly() -> None:
    """(paho_io.py turns paho's QoS 0 completion callback off while it writes; through
    aiomqtt a QoS 0 publish would wait for that callback forever.)"""
    with pytest.raises(ValueError, match="QoS 1 and 2 only"):
        Outbound("t", b"x", 0, False)


@pytest.mark.parametrize("kwargs", [{"max_events": 0}, {"max_events": -1}, {"max_replies": 0}])
def test_an_outbox_that_keeps_nothing_is_refused_when_made(kwargs: dict[str, int]) -> None:
    """Found by review: max_events = 0 failed at the first event (pop from an empty deque)."""
    with pytest.raises(ValueError, match="at least 1 reply and 1 event"):
        Outbox(state_min_interval_s=0.1, **kwargs)
