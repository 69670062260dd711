"""Errors stop at the edge: every indexer adapter, driven by a fake driver that raises each of the
driver's error kinds from every call, raises only indexer errors with the right ``retriable``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import errors as kafka_errors
from opensearchpy import exceptions as os_errors
from urllib3 import exceptions as urllib3_errors

from backscroll.indexer.deadletter import DeadLetter
from backscroll.indexer.errors import IndexerError
from backscroll.indexer.kafka.deadletters import KafkaDeadLetters
from backscroll.indexer.kafka.source import KafkaSource
from backscroll.indexer.opensearch.view import OpenSearchView
from backscroll.indexer.ports import Commit
from backscroll.indexer.projector import Action
from backscroll.indexer.settings import IndexerSettings, OpenSearchSettings
from backscroll.indexer.sqlite.deadletters import SQLiteDeadLetters
from backscroll.indexer.sqlite.source import SQLiteSource
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest.errors import IngestError, LogUnavailable
from backscroll.ingest.settings import KafkaSettings


class Raising:
    """Any attribute is a callable raising ``error``; ``indices`` is another such object."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        if name == "indices":
            return Raising(self.error)

        def call(*args: Any, **kwargs: Any) -> Any:
            raise self.error

        return call


def _check(call: Callable[[], object], retriable: bool) -> None:
    with pytest.raises(IndexerError) as raised:
        call()
    assert raised.value.retriable is retriable, raised.value
    assert "\n" not in str(raised.value)


# -- OpenSearch view (opensearch-py, urllib3) -------------------------------------------------------
OS_ERRORS: list[tuple[str, BaseException, bool]] = [
    ("connection", os_errors.ConnectionError("N/A", "refused", OSError("refused")), True),
    ("timeout", os_errors.ConnectionTimeout("TIMEOUT", "timed out", TimeoutError()), True),
    ("503", os_errors.TransportError(503, "unavailable", {}), True),
    ("429", os_errors.TransportError(429, "too many requests", {}), True),
    ("400", os_errors.RequestError(400, "mapper_parsing_exception", {}), False),
    ("401", os_errors.AuthenticationException(401, "unauthorized", {}), False),
    ("403", os_errors.AuthorizationException(403, "forbidden", {}), False),
    ("tls", os_errors.SSLError("N/A", "certificate verify failed", OSError()), False),
    ("serialization", os_errors.SerializationError("cannot serialise"), False),
    ("urllib3", urllib3_errors.ProtocolError("connection aborted"), True),
    ("socket", ConnectionResetError("reset by peer"), True),
]

_ACTION = Action("create", "events", "s:0", "s", {"seq": 0, "content_hash": "h"})
OS_METHODS: dict[str, Callable[[OpenSearchView], object]] = {
    "ensure_schema": lambda v: v.ensure_schema(),
    "refresh": lambda v: v.refresh(),
    "write": lambda v: v.write([_ACTION]),
    "content_hashes": lambda v: v.content_hashes([_ACTION]),
    "get_event_source": lambda v: v.get_event_source("s:0", "s"),
    "restore_sessions": lambda v: v.restore_sessions(["s"]),
    "publish_watermarks": lambda v: v.publish_watermarks("t", {0: (1, 2)}),
    "forget_session": lambda v: v.forget_session("s"),
    "current_version": lambda v: v.current_version(),
}


@pytest.mark.parametrize("method", sorted(OS_METHODS))
@pytest.mark.parametrize(("kind", "error", "retriable"), OS_ERRORS, ids=[e[0] for e in OS_ERRORS])
def test_opensearch_view_translates_every_driver_error(
    method: str, kind: str, error: BaseException, retriable: bool
) -> None:
    client: Any = Raising(error)  # a fake opensearch-py client: every call raises ``error``
    view = OpenSearchView(OpenSearchSettings(), client=client, retry_budget=1, sleep=lambda _: None)
    _check(lambda: OS_METHODS[method](view), retriable)
    assert view.available() is False  # the probe never raises


# -- Kafka source and dead letters (kafka-python) ---------------------------------------------------
KAFKA_ERRORS: list[tuple[str, BaseException, bool]] = [
    ("connection", kafka_errors.KafkaConnectionError("refused"), True),
    ("timeout", kafka_errors.KafkaTimeoutError("timed out"), True),
    ("node not ready", kafka_errors.NodeNotReadyError("not ready"), True),
    ("coordinator", kafka_errors.CoordinatorNotAvailableError("moving"), True),
    ("illegal state", kafka_errors.IllegalStateError("no assignment"), True),
    ("socket", ConnectionResetError("reset by peer"), True),
    ("topic authorisation", kafka_errors.TopicAuthorizationFailedError("denied"), False),
    ("group authorisation", kafka_errors.GroupAuthorizationFailedError("denied"), False),
    ("invalid topic", kafka_errors.InvalidTopicError("bad name"), False),
]
LOST = [
    kafka_errors.CommitFailedError("rebalanced"),
    kafka_errors.UnknownMemberIdError("unknown member"),
    kafka_errors.IllegalGenerationError("old generation"),
    kafka_errors.RebalanceInProgressError("rebalancing"),
]

SOURCE_METHODS: dict[str, Callable[[KafkaSource], object]] = {
    "poll": lambda s: s.poll(10, 0.01),
    "commit": lambda s: s.commit({0: 5}),
    "rewind": lambda s: s.rewind({0: 5}),
    "hold": lambda s: s.hold(0.01),
    "caught_up": lambda s: s.caught_up(),
    "lag": lambda s: s.lag(),
    "close": lambda s: s.close(),
}


@pytest.mark.parametrize("method", sorted(SOURCE_METHODS))
@pytest.mark.parametrize(("kind", "error", "retriable"), KAFKA_ERRORS, ids=[e[0] for e in KAFKA_ERRORS])
def test_kafka_source_translates_every_driver_error(
    method: str, kind: str, error: BaseException, retriable: bool
) -> None:
    source = KafkaSource(KafkaSettings(), IndexerSettings(), consumer=Raising(error))
    _check(lambda: SOURCE_METHODS[method](source), retriable)


@pytest.mark.parametrize("error", LOST, ids=[type(e).__name__ for e in LOST])
def test_a_commit_refused_by_a_rebalance_is_a_value(error: BaseException) -> None:
    source = KafkaSource(KafkaSettings(), IndexerSettings(), consumer=Raising(error))
    assert source.commit({0: 5}) is Commit.ASSIGNMENT_LOST


_LETTER = DeadLetter("t", 0, 1, b"k", b"v", "invalid_record", "record: bad")
DLQ_METHODS: dict[str, Callable[[KafkaDeadLetters], object]] = {
    "park": lambda d: d.park([_LETTER]),
    "close": lambda d: d.close(),
}


@pytest.mark.parametrize("method", sorted(DLQ_METHODS))
@pytest.mark.parametrize(("kind", "error", "retriable"), KAFKA_ERRORS, ids=[e[0] for e in KAFKA_ERRORS])
def test_kafka_dead_letters_translate_every_driver_error(
    method: str, kind: str, error: BaseException, retriable: bool
) -> None:
    letters = KafkaDeadLetters(KafkaSettings(), producer=Raising(error))
    _check(lambda: DLQ_METHODS[method](letters), retriable)


# -- SQLite source, view and dead letters (sqlite3) -------------------------------------------------
def _sqlite_error(kind: type[sqlite3.Error], message: str, code: int | None) -> sqlite3.Error:
    err = kind(message)
    if code is not None:
        err.sqlite_errorcode = code
    return err


SQLITE_ERRORS: list[tuple[str, BaseException, bool]] = [
    ("busy", _sqlite_error(sqlite3.OperationalError, "database is locked", 5), True),
    ("locked", _sqlite_error(sqlite3.OperationalError, "database table is locked", 6), True),
    ("busy snapshot", _sqlite_error(sqlite3.OperationalError, "database is locked", 517), True),
    ("full", _sqlite_error(sqlite3.OperationalError, "database or disk is full", 13), True),
    ("readonly", _sqlite_error(sqlite3.OperationalError, "attempt to write a readonly database", 8), False),
    ("no such table", _sqlite_error(sqlite3.OperationalError, "no such table: log", 1), False),
    ("not a database", _sqlite_error(sqlite3.DatabaseError, "file is not a database", 26), False),
    ("corrupt", _sqlite_error(sqlite3.DatabaseError, "database disk image is malformed", 11), False),
    ("closed", sqlite3.ProgrammingError("Cannot operate on a closed database."), False),
    ("io", _sqlite_error(sqlite3.OperationalError, "disk I/O error", 10), False),
]


class RaisingConn:
    """A sqlite3 connection whose every statement fails."""

    in_transaction = False

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def execute(self, *args: Any) -> Any:
        raise self.error

    def executemany(self, *args: Any) -> Any:
        raise self.error

    def close(self) -> None:
        pass


SQLITE_METHODS: dict[str, Callable[[Any], object]] = {
    "source.poll": lambda c: SQLiteSource(c, sleep=lambda _: None).poll(10, 0.0),
    "source.commit": lambda c: SQLiteSource(c).commit({0: 3}),
    "source.caught_up": lambda c: SQLiteSource(c).caught_up(),
    "source.lag": lambda c: SQLiteSource(c).lag(),
    "source.position": lambda c: SQLiteSource(c).position,
    "view.ensure_schema": lambda c: SQLiteView(conn=c).ensure_schema(),
    "view.write": lambda c: SQLiteView(conn=c).write([_ACTION]),
    "view.content_hashes": lambda c: SQLiteView(conn=c).content_hashes([_ACTION]),
    "view.get_event_source": lambda c: SQLiteView(conn=c).get_event_source("s:0", "s"),
    "view.restore_sessions": lambda c: SQLiteView(conn=c).restore_sessions(["s"]),
    "view.forget_session": lambda c: SQLiteView(conn=c).forget_session("s"),
    "letters.park": lambda c: SQLiteDeadLetters(c).park([_LETTER]),
    "letters.list": lambda c: SQLiteDeadLetters(c).list(),
    "letters.replay": lambda c: SQLiteDeadLetters(c).replay(),
}


@pytest.mark.parametrize("method", sorted(SQLITE_METHODS))
@pytest.mark.parametrize(("kind", "error", "retriable"), SQLITE_ERRORS, ids=[e[0] for e in SQLITE_ERRORS])
def test_sqlite_adapters_translate_every_driver_error(
    method: str, kind: str, error: BaseException, retriable: bool
) -> None:
    _check(lambda: SQLITE_METHODS[method](RaisingConn(error)), retriable)


def test_a_document_sqlite_refuses_is_a_rejected_outcome_not_an_error(tmp_path: Path) -> None:
    from backscroll.indexer.ports import Outcome

    with SQLiteView(tmp_path / "v.db") as view:
        view.ensure_schema()
        (result,) = view.write([Action("create", "events", "s:0", "s", {"seq": 0})])  # no fields
    assert result.outcome is Outcome.REJECTED and result.reason


class _Record:
    def __init__(self, partition: int, offset: int) -> None:
        self.topic, self.partition, self.offset = "t", partition, offset
        self.key, self.value, self.timestamp = b"k", b"{}", 0


class JoiningConsumer:
    """Joins the group during the first poll (nothing was assigned, so nothing was paused) and
    returns records from it, as kafka-python does."""

    def __init__(self) -> None:
        from kafka import TopicPartition

        self.tp = TopicPartition("t", 0)
        self.assigned: set[Any] = set()
        self.paused: set[Any] = set()
        self.seeks: list[tuple[Any, int]] = []

    def assignment(self) -> set[Any]:
        return set(self.assigned)

    def pause(self, *tps: Any) -> None:
        self.paused.update(tps)

    def resume(self, *tps: Any) -> None:
        self.paused.difference_update(tps)

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[Any, list[_Record]]:
        self.assigned.add(self.tp)
        return {self.tp: [_Record(0, 7), _Record(0, 8)]}

    def seek(self, tp: Any, offset: int) -> None:
        self.seeks.append((tp, offset))


def test_holding_never_skips_records_fetched_by_a_join() -> None:
    consumer = JoiningConsumer()
    source = KafkaSource(KafkaSettings(topic="t"), IndexerSettings(), consumer=consumer)
    source.hold(0.01)
    assert consumer.seeks == [(consumer.tp, 7)]


@pytest.mark.parametrize(
    ("error", "retriable"),
    [
        (LogUnavailable("cannot reach Kafka at 127.0.0.1:1: KafkaTimeoutError"), True),
        (IngestError("a settings problem"), False),
    ],
)
def test_ingest_errors_from_shared_kafka_helpers_are_translated(
    error: Exception, retriable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_ensure(_: object) -> None:
        raise error

    monkeypatch.setattr("backscroll.indexer.kafka.source.ensure_topics", failing_ensure)
    source = KafkaSource(KafkaSettings(), IndexerSettings())
    _check(lambda: source.poll(1, 0.01), retriable)
