"""Fake kafka-python drivers raise every error kind in every place the Kafka adapter calls them;
only ingest's typed errors come out, with the right ``retriable``, and nothing is lost."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import errors as ke
from kafka.future import Future

from backscroll.ingest import (
    Appender,
    AppenderSettings,
    IngestError,
    KafkaSettings,
    LogRefused,
    LogUnavailable,
    Position,
    RecordRejected,
    ensure_topics,
)
from backscroll.ingest.export import LogExport
from backscroll.ingest.kafka import export as export_module
from backscroll.ingest.kafka import topics as topics_module
from backscroll.ingest.kafka.errors import translate_kafka_error
from backscroll.ingest.kafka.export import export_kafka

KAFKA = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic="backscroll.unit-errors", request_timeout_s=1.0)

#: Every kind of driver error and the typed error it must become.
KINDS: list[tuple[BaseException, type[IngestError]]] = [
    (ke.BrokerNotAvailableError(), LogUnavailable),
    (ke.KafkaConnectionError("refused"), LogUnavailable),
    (ke.KafkaTimeoutError("metadata"), LogUnavailable),
    (ke.RequestTimedOutError(), LogUnavailable),
    (ke.NotLeaderForPartitionError(), LogUnavailable),
    (ke.UnknownTopicOrPartitionError(), LogUnavailable),
    (ke.KafkaError("anything else"), LogUnavailable),
    (ConnectionResetError("socket"), LogUnavailable),
    (ke.MessageSizeTooLargeError(), RecordRejected),
    (ke.InvalidRecordError(), RecordRejected),
    (ke.TopicAuthorizationFailedError(), LogRefused),
    (ke.SaslAuthenticationFailedError(), LogRefused),
    (ke.InvalidTopicError(), LogRefused),
    (ke.KafkaConfigurationError("bad option"), LogRefused),
]
IDS = [type(err).__name__ for err, _ in KINDS]


def test_the_mapping_and_retriable() -> None:
    for err, typed in KINDS:
        got = translate_kafka_error(err, "doing it")
        assert type(got) is typed, err
        assert got.retriable == (typed is LogUnavailable)
        assert "doing it" in str(got)


# -- the appender ---------------------------------------------------------------------------------
class _Meta:
    def __init__(self, partition: int, offset: int) -> None:
        self.partition, self.offset = partition, offset


class FaultyProducer:
    """A producer whose ``where`` (construct, send, errback, close) raises ``error`` ``times`` times."""

    def __init__(self, where: str, error: BaseException, times: int) -> None:
        self.where, self.error, self.left = where, error, times
        self.written: list[bytes] = []
        self.lock = threading.Lock()

    def _fault(self, where: str) -> BaseException | None:
        with self.lock:
            if self.where == where and self.left > 0:
                self.left -= 1
                return self.error
        return None

    def factory(self, config: dict[str, Any]) -> FaultyProducer:
        fault = self._fault("construct")
        if fault is not None:
            raise fault
        return self

    def send(self, topic: str, key: bytes, value: bytes) -> Future:
        fault = self._fault("send")
        if fault is not None:
            raise fault
        future = Future()
        fault = self._fault("errback")
        if fault is not None:
            future.failure(fault)
            return future
        with self.lock:
            self.written.append(value)
            offset = len(self.written) - 1
        future.success(_Meta(0, offset))
        return future

    def close(self, timeout: float | None = None) -> None:
        fault = self._fault("close")
        if fault is not None:
            raise fault


def _event(seq: int) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws",
        "session_id": "s-1",
        "seq": seq,
        "type": "user/message",
        "surface": {"op": "append"},
        "time": "2026-11-30T10:00:00Z",
        "text": "hi",
    }


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Any]:
    made: list[Appender] = []

    def factory(producer: FaultyProducer) -> Appender:
        options = AppenderSettings(
            spool_dir=tmp_path / "spool", connect_timeout_s=0.2, close_timeout_s=2.0, fsync="never"
        )
        appender = Appender(KAFKA, options, producer_factory=producer.factory)
        made.append(appender)
        return appender

    yield factory
    for appender in made:
        appender.close(timeout=1)


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
@pytest.mark.parametrize("where", ["construct", "send", "errback"])
def test_appender_turns_each_driver_error_into_a_typed_outcome(
    make: Any, where: str, error: BaseException, typed: type[IngestError]
) -> None:
    producer = FaultyProducer(where, error, times=1)
    appender = make(producer)
    handle = appender.append(_event(0))
    if typed is LogUnavailable:  # retried: delivered once the fault is gone, exactly once
        appender.flush(timeout=10)
        assert isinstance(handle.result(timeout=5), Position)
        assert len(producer.written) == 1
        appender.append(_event(1)).result(timeout=10)
        return
    if where == "construct":  # the client is refused: every later call says why
        with pytest.raises(typed) as raised:
            appender.flush(timeout=10)
        with pytest.raises(typed):
            appender.append(_event(1))
    else:  # this record is refused for good: its handle says why, the next one goes through
        appender.flush(timeout=10)
        with pytest.raises(typed) as raised:
            handle.result(timeout=5)
        appender.append(_event(1)).result(timeout=10)
    assert not raised.value.retriable
    assert producer.written == [] or len(producer.written) == 1


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
def test_appender_close_survives_a_failing_driver_close(
    make: Any, error: BaseException, typed: type[IngestError]
) -> None:
    producer = FaultyProducer("close", error, times=1)
    appender = make(producer)
    handle = appender.append(_event(0))
    appender.close(timeout=5)  # logs, never raises a driver error
    assert isinstance(handle.result(timeout=1), Position)
    assert appender.closed


# -- topics and export ----------------------------------------------------------------------------
class FaultyClient:
    """A fake KafkaAdminClient / KafkaConsumer whose method ``where`` raises ``error``."""

    def __init__(self, where: str, error: BaseException) -> None:
        self.where, self.error = where, error

    def __call__(self, **config: Any) -> FaultyClient:
        if self.where == "construct":
            raise self.error
        return self

    def _maybe(self, name: str) -> None:
        if self.where == name:
            raise self.error

    # admin
    def list_topics(self) -> list[str]:
        self._maybe("list_topics")
        return []

    def create_topics(self, new_topics: Any, wait_for_metadata: bool = False) -> None:
        self._maybe("create_topics")

    # consumer
    def partitions_for_topic(self, topic: str) -> set[int]:
        self._maybe("partitions_for_topic")
        return {0}

    def assign(self, partitions: Any) -> None:
        self._maybe("assign")

    def seek_to_beginning(self, *partitions: Any) -> None:
        self._maybe("seek_to_beginning")

    def end_offsets(self, partitions: list[Any]) -> dict[Any, int]:
        self._maybe("end_offsets")
        return {p: 1 for p in partitions}

    def position(self, tp: Any) -> int:
        self._maybe("position")
        return 0

    def poll(self, timeout_ms: int = 0) -> dict[Any, list[Any]]:
        self._maybe("poll")
        return {}

    def close(self) -> None:
        self._maybe("close")


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
@pytest.mark.parametrize("where", ["construct", "list_topics", "create_topics", "close"])
def test_ensure_topics_raises_only_typed_errors(
    monkeypatch: pytest.MonkeyPatch, where: str, error: BaseException, typed: type[IngestError]
) -> None:
    monkeypatch.setattr(topics_module, "KafkaAdminClient", FaultyClient(where, error))
    if where == "close":
        ensure_topics(KAFKA)  # a failing close after the work is done is not the caller's problem
        return
    with pytest.raises(typed) as raised:
        ensure_topics(KAFKA)
    assert raised.value.retriable == (typed is LogUnavailable)


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
@pytest.mark.parametrize(
    "where",
    ["construct", "partitions_for_topic", "assign", "seek_to_beginning", "end_offsets", "position", "poll"],
)
def test_export_raises_only_typed_errors(
    monkeypatch: pytest.MonkeyPatch, where: str, error: BaseException, typed: type[IngestError]
) -> None:
    import kafka

    monkeypatch.setattr(kafka, "KafkaConsumer", FaultyClient(where, error))
    with pytest.raises(typed) as raised:
        list(export_kafka(KAFKA, LogExport(session_id="s-1"), poll_ms=10))
    assert raised.value.retriable == (typed is LogUnavailable)
    assert export_module.__name__  # the module under test


def test_export_of_a_stalled_partition_is_unavailable_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka

    monkeypatch.setattr(kafka, "KafkaConsumer", FaultyClient("nowhere", ke.KafkaError()))
    with pytest.raises(LogUnavailable, match="no progress"):
        list(export_kafka(KAFKA, LogExport(workspace_id="ws"), poll_ms=10))
