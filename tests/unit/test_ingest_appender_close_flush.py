"""``Appender.close`` keeps to its timeout whatever Kafka does, and ``Appender.flush`` returns only
once every handle of the entries appended before it is resolved."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.future import Future
from tests.unit.test_ingest_appender import KAFKA, FakeBroker, FakeProducer, event, options

from backscroll.ingest import Appender, AppenderSettings, KafkaSettings, LogUnavailable, Position
from backscroll.ingest.bulk import encode_for_log
from backscroll.ingest.kafka import acks
from backscroll.ingest.wire import parse_record

#: What close() may take beyond its timeout on a busy machine (a bound, not a speed).
SLACK_S = 1.0


class StallingProducer(FakeProducer):
    """A producer that blocks in ``send`` or ``close`` (ignoring any timeout) until released."""

    def __init__(self, broker: FakeBroker, where: str, release: threading.Event) -> None:
        super().__init__(broker)
        self.where = where
        self.release = release

    def send(self, topic: str, key: bytes, value: bytes) -> Future:
        if self.where == "send":
            self.release.wait(30)
        return super().send(topic, key, value)

    def close(self, timeout: float | None = None) -> None:
        if self.where == "close":
            self.release.wait(30)
        super().close(timeout)


@pytest.fixture
def broker() -> FakeBroker:
    return FakeBroker()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event_ = threading.Event()
    yield event_
    event_.set()  # the abandoned sender threads finish


def _timed_close(appender: Appender, timeout: float) -> float:
    started = time.monotonic()
    appender.close(timeout=timeout)
    return time.monotonic() - started


@pytest.mark.parametrize("timeout", [0.5, 1.0])
def test_close_keeps_to_its_timeout_when_kafka_is_unreachable(tmp_path: Path, timeout: float) -> None:
    # A real KafkaProducer on a closed port: creating it blocks for the whole connect timeout (5 s).
    kafka = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic="backscroll.unit.close")
    settings = AppenderSettings(spool_dir=tmp_path / "spool", fsync="never", connect_timeout_s=5.0)
    appender = Appender(kafka, settings)
    handle = appender.append(event(seq=0))
    time.sleep(0.2)  # the sender thread is connecting
    assert _timed_close(appender, timeout) <= timeout + SLACK_S
    assert isinstance(handle.exception(timeout=0), LogUnavailable)
    with Appender(kafka, settings) as again:  # the entry waits in the spool for the next appender
        assert again.stats().spool_unacked == 1
        again.close(timeout=0)


@pytest.mark.parametrize("where", ["send", "close"])
def test_close_keeps_to_its_timeout_when_the_producer_stalls(
    tmp_path: Path, broker: FakeBroker, release: threading.Event, where: str
) -> None:
    producer = StallingProducer(broker, where, release)
    appender = Appender(KAFKA, options(tmp_path, connect_timeout_s=5.0), producer_factory=lambda _: producer)
    handles = [appender.append(event(seq=i)) for i in range(3)]
    time.sleep(0.2)  # with "send": the sender thread is stuck in it
    assert _timed_close(appender, 1.0) <= 1.0 + SLACK_S
    assert appender.closed
    if where == "send":
        assert all(isinstance(h.exception(timeout=0), LogUnavailable) for h in handles)


def test_close_without_a_sender_thread_is_immediate(tmp_path: Path, broker: FakeBroker) -> None:
    appender = Appender(KAFKA, options(tmp_path), producer_factory=broker.factory)
    assert _timed_close(appender, 5.0) <= SLACK_S


def test_flush_returns_after_every_handle_is_resolved(
    tmp_path: Path, broker: FakeBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The broker's answer is applied to the spool under the lock and the handles are resolved
    # after it: slow that second step down so that a flush returning early would be seen.
    def slow_position(partition: int, offset: int) -> Position:
        time.sleep(0.001)
        return Position(partition, offset)

    monkeypatch.setattr(acks, "Position", slow_position)
    with Appender(KAFKA, options(tmp_path), producer_factory=broker.factory) as appender:
        handles = [appender.append(event(seq=i)) for i in range(300)]
        batch = appender.append_encoded(
            [encode_for_log(parse_record(event("s-2", seq=i))) for i in range(50)]
        )
        appender.flush(timeout=30)
        unresolved = sum(1 for h in handles if not h.done())
        assert unresolved == 0
        assert batch.settled() and batch.acknowledged == 50
        assert [h.result(timeout=0).offset for h in handles] == list(range(300))


def test_flush_in_many_threads_sees_its_own_handles_resolved(tmp_path: Path, broker: FakeBroker) -> None:
    unresolved: list[int] = []

    def appends(appender: Appender, session: str) -> None:
        for round_ in range(20):
            handles = [appender.append(event(session, seq=round_ * 50 + i)) for i in range(50)]
            appender.flush(timeout=30)
            unresolved.append(sum(1 for h in handles if not h.done()))

    with Appender(KAFKA, options(tmp_path), producer_factory=broker.factory) as appender:
        threads = [threading.Thread(target=appends, args=(appender, f"s-{n}")) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(unresolved) == 80 and not any(unresolved)
