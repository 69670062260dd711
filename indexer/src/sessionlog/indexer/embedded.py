"""The embedded indexer: projects the ``log`` table of a SQLite file into the same file's view.

It runs the very :class:`~sessionlog.indexer.batch.BatchProcessor` the Kafka worker runs (decode,
fold per session, documents, replays, conflicts, dead letters) over log rows adapted to what the
processor reads of a consumer record (``topic``, ``partition``, ``offset``, ``key``, ``value``,
``timestamp``).

Exactly-once effect: one batch is one ``BEGIN IMMEDIATE`` transaction that reads the stored position,
reads the rows after it, writes the documents, the dead letters and the new position, and commits —
so a crash anywhere leaves either all of it or none of it. The write lock also makes several
indexers (one per process, e.g. every agent catching up before a search) safe: they take turns, and
one that finds the position moved by another drops its cached session states and restores them
from the view inside the same transaction.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from sessionlog.indexer.batch import BatchProcessor
from sessionlog.indexer.deadletter import DeadLetter, decode_envelope, encode_envelope
from sessionlog.indexer.errors import ViewUnavailable
from sessionlog.indexer.metrics import IndexerMetrics, MetricsServer
from sessionlog.indexer.opensearch_view import OpenSearchView
from sessionlog.indexer.sqlite_view import SQLiteView, ensure_view_schema
from sessionlog.ingest.errors import IngestError
from sessionlog.ingest.sqlite_log import (
    DEFAULT_BUSY_TIMEOUT_S,
    LogRecord,
    Synchronous,
    connect,
    ensure_log_schema,
    read_log,
    rollback,
)

__all__ = ["EmbeddedIndexer", "IndexerStats", "list_dead_letters"]

log = logging.getLogger("sessionlog.indexer")

_INDEXER_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS indexer_positions (name TEXT PRIMARY KEY, offset INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS dead_letters ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, log_offset INTEGER NOT NULL, error_class TEXT NOT NULL,"
    " envelope BLOB NOT NULL)",
)


@dataclass
class IndexerStats:
    """Counters of one indexer run (the fields of the Kafka worker's ``WorkerStats``)."""

    consumed: int = 0
    indexed: int = 0
    replays: int = 0
    conflicts: int = 0
    dead_lettered: int = 0
    batches: int = 0
    view_outages: int = 0
    reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def _ensure_indexer_schema(conn: sqlite3.Connection) -> None:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dead_letters'"
    ).fetchone()
    if row:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _INDEXER_SCHEMA:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def list_dead_letters(conn: sqlite3.Connection, limit: int | None = 100) -> list[dict[str, Any]]:
    """Dead letters, oldest first: decoded envelopes (original bytes under ``key``/``value``) with
    their row id as ``dlq_offset``."""
    sql = "SELECT id, envelope FROM dead_letters ORDER BY id"
    params: tuple[int, ...] = ()
    if limit is not None:
        sql += " LIMIT ?"
        params = (limit,)
    letters = []
    for row_id, envelope in conn.execute(sql, params):
        letter = decode_envelope(bytes(envelope))
        letter["dlq_offset"] = int(row_id)
        letters.append(letter)
    return letters


class EmbeddedIndexer:
    """Keeps the projection of one SQLite file current with its log."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        name: str = "default",
        batch_max: int = 500,
        batch_max_bytes: int = 16 * 1024 * 1024,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: Synchronous = "NORMAL",
        poll_interval_s: float = 0.2,
        metrics_port: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_max < 1:
            raise ValueError("batch_max must be at least 1")
        self.path = Path(path).expanduser()
        self.name = name
        self.batch_max = batch_max
        self.batch_max_bytes = batch_max_bytes
        self.poll_interval_s = poll_interval_s
        self._sleep = sleep
        try:
            self.conn = connect(self.path, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
        except IngestError as err:
            raise ViewUnavailable(f"cannot open {self.path}: {err}") from err
        try:
            ensure_log_schema(self.conn)
            ensure_view_schema(self.conn)
            _ensure_indexer_schema(self.conn)
        except sqlite3.Error as err:
            self.conn.close()
            raise ViewUnavailable(f"cannot create the embedded tables in {self.path}: {err}") from err
        self.view = SQLiteView(conn=self.conn)
        self.metrics = IndexerMetrics()
        # BatchProcessor is annotated with the OpenSearch view; SQLiteView has every method it
        # calls (checked against sqlite_view.ProjectionView), so the same projection code runs here.
        self.batch = BatchProcessor(cast(OpenSearchView, self.view), self.metrics)
        self.stats = IndexerStats()
        self._lock = threading.Lock()
        self._position: int | None = None  # the position this process last committed or saw
        self._server = MetricsServer(self.metrics, metrics_port) if metrics_port is not None else None
        self._closed = False

    # -- position -------------------------------------------------------------------------------
    def _stored_position(self) -> int:
        row = self.conn.execute(
            "SELECT offset FROM indexer_positions WHERE name = ?", (self.name,)
        ).fetchone()
        return int(row[0]) if row else 0

    @property
    def position(self) -> int:
        """The offset of the last log row projected (0: none yet)."""
        with self._lock:
            self._check_open()
            return self._stored_position()

    def lag(self) -> int:
        """Log rows written but not projected yet."""
        with self._lock:
            self._check_open()
            end = int(self.conn.execute("SELECT coalesce(max(offset), 0) FROM log").fetchone()[0])
            return max(0, end - self._stored_position())

    def _check_open(self) -> None:
        if self._closed:
            raise ViewUnavailable("the embedded indexer was closed")

    # -- one batch ------------------------------------------------------------------------------
    def step(self) -> int:
        """Project the next batch of log rows in one transaction; the number of rows consumed (0
        when caught up). Raises :class:`ViewUnavailable` when the file stays locked or unwritable."""
        with self._lock:
            self._check_open()
            try:
                return self._step()
            except sqlite3.OperationalError as err:
                raise ViewUnavailable(f"embedded indexing failed: {err}") from err

    def _step(self) -> int:
        conn = self.conn
        # Cheap check without the write lock, so idle pollers do not queue behind writers.
        end = int(conn.execute("SELECT coalesce(max(offset), 0) FROM log").fetchone()[0])
        if end <= self._stored_position():
            return 0
        started = time.monotonic()
        conn.execute("BEGIN IMMEDIATE")
        try:
            position = self._stored_position()
            if position != self._position:
                self.batch.forget_states()  # another indexer moved on: restore states from the view
            records = read_log(conn, position, limit=self.batch_max, max_bytes=self.batch_max_bytes)
            if not records:
                conn.execute("COMMIT")
                self._position = position
                return 0
            result = self.batch.process(records)
            for letter in result.letters:
                self._park(letter)
            last = records[-1].offset
            conn.execute(
                "INSERT INTO indexer_positions (name, offset) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET offset = excluded.offset",
                (self.name, last),
            )
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            self.view.discard_caches()
            self.batch.forget_states()
            self._position = None
            raise
        self.view.commit_caches()
        self._position = last
        self._count(records, result, time.monotonic() - started)
        return len(records)

    def _park(self, letter: DeadLetter) -> None:
        self.conn.execute(
            "INSERT INTO dead_letters (log_offset, error_class, envelope) VALUES (?, ?, ?)",
            (letter.offset, letter.error_class, encode_envelope(letter)),
        )
        log.warning("dead-lettered %s@%d: %s", letter.topic, letter.offset, letter.reason)

    def _count(self, records: list[LogRecord], result: Any, seconds: float) -> None:
        stats, metrics = self.stats, self.metrics
        stats.consumed += len(records)
        stats.batches += 1
        stats.indexed += result.indexed
        stats.replays += result.replays
        stats.conflicts += result.conflicts
        for letter in result.letters:
            stats.dead_lettered += 1
            stats.reasons[letter.error_class] += 1
            metrics.dead_lettered.labels(reason=letter.error_class).inc()
        metrics.consumed.inc(len(records))
        metrics.indexed.inc(result.indexed)
        metrics.replays.inc(result.replays)
        metrics.conflicts.inc(result.conflicts)
        metrics.first_attempt.inc()
        metrics.batch_seconds.observe(seconds)

    # -- loops ----------------------------------------------------------------------------------
    def run_until_idle(self) -> IndexerStats:
        """Project everything written so far, then return the run's counters."""
        return self.run(until_idle=True)

    def run(
        self,
        *,
        until_idle: bool = False,
        stop: threading.Event | None = None,
        on_batch: Callable[[IndexerStats], None] | None = None,
    ) -> IndexerStats:
        """Project batches until ``stop`` is set (or, with ``until_idle``, until caught up). While the
        file stays locked past the busy timeout the batch is retried after a pause."""
        stop = stop or threading.Event()
        self.metrics.ready = True
        while not stop.is_set():
            self.metrics.beat()
            try:
                consumed = self.step()
            except ViewUnavailable as err:
                self.stats.view_outages += 1
                self.metrics.errors.labels(error_class="view_unavailable").inc()
                log.warning("embedded view unavailable, retrying: %s", err)
                stop.wait(1.0)
                continue
            if consumed:
                if on_batch:
                    on_batch(self.stats)
                continue
            if until_idle:
                break
            stop.wait(self.poll_interval_s)
        return self.stats

    # -- dead letters ---------------------------------------------------------------------------
    def dead_letters(self, limit: int | None = 100) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            return list_dead_letters(self.conn, limit)

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection and the metrics server. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._server is not None:
            self._server.close()
        self.view.close()
        self.conn.close()

    def __enter__(self) -> EmbeddedIndexer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EmbeddedIndexer({str(self.path)!r}, name={self.name!r})"
