"""The console's operations adapter: indexer lag, watermark, dead letters, and the two writes.

Everything here calls what the indexer and ingest packages expose (the backend's dead-letter store,
``forget_session``, the embedded file's tables); it is kept in this one module so
that it is easy to re-point when those move behind the backend. Driver errors become
:class:`~backscroll.console.source.SourceUnavailable`.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from backscroll.console.source import SourceUnavailable

if TYPE_CHECKING:
    from backscroll.backend import Backend

__all__ = ["DeadLetterView", "Health", "PartitionLag", "dead_letters", "forget", "health", "replay_supported"]

DEAD_LETTERS_SHOWN = 200


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition of the log (the embedded log is one): how far the projection is behind it."""

    partition: int
    end_offset: int
    indexed_offset: int | None
    lag: int | None
    watermark_offset: int | None = None
    watermark_record_ms: int | None = None
    watermark_published_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DeadLetterView:
    """One parked record as the page shows it (the original value is not shown)."""

    dlq_offset: int
    partition: int | None
    offset: int | None
    error_class: str
    reason: str
    field: str | None
    time: str | None
    workspace_id: str | None
    session_id: str | None


@dataclass(slots=True)
class Health:
    """The health page's facts; ``problems`` lists what could not be read (shown, never hidden)."""

    backend: str
    partitions: list[PartitionLag] = field(default_factory=list)
    freshness_s: float | None = None
    oldest_pending_ms: int | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def total_lag(self) -> int | None:
        lags = [p.lag for p in self.partitions]
        return None if not lags or any(lag is None for lag in lags) else sum(lag or 0 for lag in lags)


def _origin(value: bytes | None) -> tuple[str | None, str | None]:
    """(workspace, session) of a parked record's original value, when it is a JSON object."""
    try:
        data = orjson.loads(value) if value else None
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(data, dict):
        return None, None
    ws, sid = data.get("workspace_id"), data.get("session_id")
    return (ws if isinstance(ws, str) else None, sid if isinstance(sid, str) else None)


def _view(letter: dict[str, Any]) -> DeadLetterView:
    ws, sid = _origin(letter.get("value"))
    return DeadLetterView(
        dlq_offset=int(letter.get("dlq_offset", -1)),
        partition=letter.get("partition"),
        offset=letter.get("offset"),
        error_class=str(letter.get("error_class", "")),
        reason=str(letter.get("reason", "")),
        field=letter.get("field"),
        time=letter.get("time"),
        workspace_id=ws,
        session_id=sid,
    )


# -- health ---------------------------------------------------------------------------------------
def health(backend: Backend) -> Health:
    """Lag per partition, watermark and freshness of the configured backend."""
    if backend.name == "embedded":
        return _embedded_health(backend)
    return _kafka_health(backend)


def _ro(backend: Backend) -> sqlite3.Connection | None:
    path = backend.sqlite_path
    if not path.exists():
        return None
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)


def _embedded_health(backend: Backend) -> Health:
    out = Health(backend=backend.describe())
    try:
        conn = _ro(backend)
    except sqlite3.Error as err:
        out.problems.append(f"cannot open {backend.sqlite_path}: {err}")
        return out
    if conn is None:
        out.partitions.append(PartitionLag(0, 0, 0, 0))
        return out
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        end = (
            int(conn.execute("SELECT coalesce(max(offset), 0) FROM log").fetchone()[0])
            if "log" in tables
            else 0
        )
        position = 0
        if "indexer_positions" in tables:
            row = conn.execute("SELECT offset FROM indexer_positions WHERE name = 'default'").fetchone()
            position = int(row[0]) if row else 0
        lag = max(0, end - position)
        out.partitions.append(PartitionLag(0, end, position, lag, watermark_offset=position))
        if lag and "log" in tables:
            row = conn.execute("SELECT min(time_ms) FROM log WHERE offset > ?", (position,)).fetchone()
            out.oldest_pending_ms = None if row[0] is None else int(row[0])
            if out.oldest_pending_ms is not None:
                out.freshness_s = max(0.0, time.time() - out.oldest_pending_ms / 1000.0)
        else:
            out.freshness_s = 0.0
    except sqlite3.Error as err:
        out.problems.append(f"cannot read {backend.sqlite_path}: {err}")
    finally:
        conn.close()
    return out


def _kafka_health(backend: Backend) -> Health:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    from backscroll.indexer.opensearch.view import OpenSearchView

    assert backend.kafka is not None and backend.opensearch is not None and backend.indexer is not None
    out = Health(backend=backend.describe())
    topic = backend.kafka.topic
    ends: dict[int, int] = {}
    committed: dict[int, int | None] = {}
    try:
        # A consumer that names the indexer's group but never subscribes: it reads the group's
        # committed offsets without joining (no rebalance of the running workers).
        consumer = KafkaConsumer(
            **backend.kafka.client_config(), group_id=backend.indexer.group_id, enable_auto_commit=False
        )
        try:
            partitions = [
                TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())
            ]
            ends = {tp.partition: int(v) for tp, v in consumer.end_offsets(partitions).items()}
            for tp in partitions:
                offset = consumer.committed(tp)
                committed[tp.partition] = None if offset is None or offset < 0 else int(offset)
        finally:
            consumer.close(autocommit=False)
    except (KafkaError, OSError) as err:
        out.problems.append(f"Kafka {backend.kafka.bootstrap_servers} did not answer: {err}")
    marks: dict[int, dict[str, Any]] = {}
    try:
        view = OpenSearchView(backend.opensearch)
        try:
            marks = view.read_watermarks(topic)
        finally:
            view.close()
    except Exception as err:  # opensearch-py and the view's typed errors
        out.problems.append(f"OpenSearch {backend.opensearch.url}: cannot read the watermark: {err}")
    now_ms = time.time() * 1000
    stale: list[float] = []
    for partition in sorted(set(ends) | set(marks)):
        end, done, mark = ends.get(partition, 0), committed.get(partition), marks.get(partition, {})
        lag = None if partition not in ends else end - (done or 0)
        out.partitions.append(
            PartitionLag(
                partition,
                end,
                done,
                lag,
                watermark_offset=mark.get("offset"),
                watermark_record_ms=mark.get("record_time_ms"),
                watermark_published_ms=mark.get("published_ms"),
            )
        )
        if lag and mark.get("record_time_ms") is not None:
            stale.append(max(0.0, (now_ms - float(mark["record_time_ms"])) / 1000.0))
    if ends and not out.problems:
        out.freshness_s = max(stale) if stale else 0.0
    return out


# -- dead letters ---------------------------------------------------------------------------------
def dead_letters(backend: Backend, limit: int = DEAD_LETTERS_SHOWN) -> list[DeadLetterView]:
    """Parked records, oldest first (SourceUnavailable when the backend does not answer)."""
    if backend.name == "embedded" and not _has_dead_letter_table(backend):
        return []
    from backscroll.indexer.errors import IndexerError

    try:
        store = backend.open_dead_letters()
        try:
            return [_view(letter) for letter in store.list(limit)]
        finally:
            store.close()
    except IndexerError as err:
        raise SourceUnavailable(f"cannot read the dead letters: {err}") from err


def _has_dead_letter_table(backend: Backend) -> bool:
    """Whether the embedded file exists and has parked anything yet (a read-only look: never creates)."""
    try:
        conn = _ro(backend)
        if conn is None:
            return False
        try:
            return bool(
                conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dead_letters'"
                ).fetchone()
            )
        finally:
            conn.close()
    except sqlite3.Error as err:
        raise SourceUnavailable(f"cannot read the dead letters: {err}") from err


def replay_supported(backend: Backend) -> bool:
    """Whether this backend can re-drive dead letters from the console (both can)."""
    return True


def replay(backend: Backend) -> int:
    """Re-send the dead letters not replayed before to the log; how many were sent."""
    from backscroll.indexer.errors import IndexerError

    try:
        store = backend.open_dead_letters()
        try:
            return store.replay()
        finally:
            store.close()
    except IndexerError as err:
        raise SourceUnavailable(f"replay failed: {err}") from err


def forget(backend: Backend, session_id: str) -> int:
    """Delete one session's documents from the projection (the log keeps it); events deleted."""
    if backend.name == "embedded":
        from backscroll.indexer.sqlite.view import SQLiteView
        from backscroll.ingest.sqlite.log import connect

        try:
            conn = connect(backend.sqlite_path, create=False)
            try:
                return SQLiteView(conn=conn).forget_session(session_id)
            finally:
                conn.close()
        except sqlite3.Error as err:
            raise SourceUnavailable(f"forget failed: {err}") from err
    from backscroll.indexer.operations import forget_session

    assert backend.opensearch is not None
    try:
        return forget_session(backend.opensearch, session_id)
    except Exception as err:  # opensearch-py and the view's typed errors
        raise SourceUnavailable(f"forget failed: {err}") from err
