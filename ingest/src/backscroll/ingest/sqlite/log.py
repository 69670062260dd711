"""The embedded entry log: the session log as one table of one SQLite file (WAL mode).

:class:`SQLiteEntryLog` implements :class:`~backscroll.ingest.entry_log.EntryLog`, like the Kafka
:class:`~backscroll.ingest.kafka.appender.Appender`, with the same wire models, so an agent switches
backends without touching its code. The differences:

* an append is committed (in its own ``BEGIN IMMEDIATE`` transaction) before ``append`` returns,
  so the handle is already resolved and ``flush`` has nothing to wait for;
* the log has one partition (0) and the offset is the row id (1, 2, 3, ...). Writers are serialised
  by SQLite's write lock and a row id is taken inside it, so commit order is offset order and a
  reader never sees a later offset before an earlier one;
* several processes of one host may append to (and index) the same file at once: every connection
  sets ``busy_timeout`` and takes the write lock up front with ``BEGIN IMMEDIATE``.

Table ``log(offset INTEGER PRIMARY KEY AUTOINCREMENT, session_id, key, value, time_ms)``: ``key``
and ``value`` are the bytes a Kafka record would carry (the session id in UTF-8 and the canonical
JSON), ``session_id`` the decoded key (NULL when it is not UTF-8). The file is opened (and
identified as backscroll's) by :func:`backscroll.ingest.sqlite.file.connect`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from backscroll.ingest.bulk import BatchAck, EncodedRecord
from backscroll.ingest.errors import AppenderClosed, RecordRejected
from backscroll.ingest.live import LiveLog, LiveTail
from backscroll.ingest.records import AppendHandle, LogRecord, Position
from backscroll.ingest.session import LastSeqLookup, SessionWriter, WriterRegistry, resume_seq
from backscroll.ingest.sqlite.file import (
    DEFAULT_BUSY_TIMEOUT_S,
    Synchronous,
    connect,
    rollback,
    translate_sqlite_error,
)
from backscroll.ingest.wire import (
    MAX_RECORD_BYTES,
    EventRecord,
    HeaderRecord,
    decode_record,
    encode_key,
    encode_record,
    parse_record,
)

__all__ = [
    "BULK_CHECKPOINT_PAGES",
    "DEFAULT_BUSY_TIMEOUT_S",
    "LOG_TOPIC",
    "LogRecord",
    "SQLiteEntryLog",
    "Synchronous",
    "connect",
    "ensure_log_schema",
    "iter_log",
    "read_log",
    "rollback",
]

#: The "topic" of embedded log records (dead-letter envelopes and watermarks carry it).
LOG_TOPIC: Final = "log"
_LAST_SEQS_MAX: Final = 100_000
#: WAL pages between checkpoints on a bulk-loading connection (~40 MiB; SQLite's default is 1,000).
BULK_CHECKPOINT_PAGES: Final = 10_000

_LOG_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS log (
    offset INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT,
    key BLOB,
    value BLOB,
    time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS log_by_session ON log (session_id, offset);
"""


def ensure_log_schema(conn: sqlite3.Connection) -> None:
    """Create the ``log`` table if it is missing (idempotent, safe against concurrent openers).
    Raises :class:`sqlite3.Error` (the caller owns the connection and translates)."""
    if _has_table(conn, "log"):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _LOG_SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


def read_log(
    conn: sqlite3.Connection, after: int, *, limit: int = 500, max_bytes: int = 16 * 1024 * 1024
) -> list[LogRecord]:
    """Rows with an offset above ``after``, in offset order: at most ``limit`` rows and, beyond the
    first row, about ``max_bytes`` of values. Raises :class:`sqlite3.Error`."""
    out: list[LogRecord] = []
    size = 0
    cursor = conn.execute(
        "SELECT offset, key, value, time_ms FROM log WHERE offset > ? ORDER BY offset LIMIT ?", (after, limit)
    )
    for offset, key, value, time_ms in cursor:
        out.append(LogRecord(LOG_TOPIC, 0, int(offset), _blob(key), _blob(value), int(time_ms)))
        size += len(value or b"")
        if size >= max_bytes:
            break
    cursor.close()
    return out


def iter_log(
    conn: sqlite3.Connection, *, session_id: str | None = None, batch: int = 1000
) -> Iterator[LogRecord]:
    """Every row (of one session when ``session_id`` is given) in offset order, read in batches.
    Raises :class:`sqlite3.Error`."""
    after = 0
    while True:
        if session_id is None:
            rows = read_log(conn, after, limit=batch)
        else:
            cursor = conn.execute(
                "SELECT offset, key, value, time_ms FROM log WHERE session_id = ? AND offset > ? "
                "ORDER BY offset LIMIT ?",
                (session_id, after, batch),
            )
            rows = [LogRecord(LOG_TOPIC, 0, int(o), _blob(k), _blob(v), int(t)) for o, k, v, t in cursor]
        if not rows:
            return
        yield from rows
        after = rows[-1].offset


def _blob(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):  # written by a tool that bound text: still the same bytes
        return value.encode("utf-8")
    return bytes(value)


class SQLiteEntryLog(LiveTail):
    """Thread-safe, multi-process-safe :class:`~backscroll.ingest.entry_log.EntryLog` on the
    ``log`` table of one SQLite file.

    ``last_seq_lookup`` is consulted by :meth:`session` like the appender's (the log table itself
    is consulted first). The live view keeps this process's events until the query side releases
    them by the embedded indexer's position (:meth:`release_through` with partition 0).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: Synchronous = "NORMAL",
        last_seq_lookup: LastSeqLookup | None = None,
        live_max_per_session: int = 2_000,
        live_max_total: int = 50_000,
    ) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout_s = busy_timeout_s
        self.synchronous: Synchronous = synchronous
        self._lookup = last_seq_lookup
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._closed = False
        self._writer_registry = WriterRegistry()
        self.live = LiveLog(live_max_per_session, live_max_total)
        self._live_headers: dict[str, HeaderRecord] = {}
        self._last_seqs: dict[str, int] = {}
        self._bulk_conn: sqlite3.Connection | None = None

    # -- state ----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def topic(self) -> str:
        return LOG_TOPIC

    @property
    def _generation(self) -> int:
        # Writers opened by a parent process stop working in a forked child.
        return os.getpid()

    def _connection(self) -> sqlite3.Connection:
        """The connection (opened on first use, and again in a forked child); call under ``_lock``."""
        if self._closed:
            raise AppenderClosed("append after close()")
        if self._conn is not None and self._pid != os.getpid():
            self._conn = None  # the parent's connection must not be used (nor closed) after a fork
            self.live.clear()
            self._live_headers.clear()
            self._last_seqs.clear()
        if self._conn is None:
            conn = connect(self.path, busy_timeout_s=self.busy_timeout_s, synchronous=self.synchronous)
            try:
                ensure_log_schema(conn)
            except sqlite3.Error as err:
                conn.close()
                raise translate_sqlite_error(err, f"cannot create the log table in {self.path}") from err
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    # -- appending ------------------------------------------------------------------------------
    @staticmethod
    def _coerce(record: HeaderRecord | EventRecord | Mapping[str, Any] | bytes) -> HeaderRecord | EventRecord:
        if isinstance(record, HeaderRecord | EventRecord):
            return record
        if isinstance(record, bytes | bytearray | memoryview):
            return decode_record(bytes(record))
        if isinstance(record, Mapping):
            return parse_record(dict(record))
        raise RecordRejected(
            "record", f"expected a mapping, JSON bytes or a wire record, got {type(record).__name__}"
        )

    @staticmethod
    def _encode(record: HeaderRecord | EventRecord) -> tuple[str, bytes, bytes]:
        value = encode_record(record)
        if len(value) > MAX_RECORD_BYTES:
            raise RecordRejected("record", f"encoded record is {len(value)} bytes, cap is {MAX_RECORD_BYTES}")
        return record.session_id, encode_key(record), value

    def append(self, record: HeaderRecord | EventRecord | Mapping[str, Any] | bytes) -> AppendHandle:
        """Validate and commit one record (event or header); raises :class:`RecordRejected` naming
        the field, :class:`SessionBusy`, :class:`AppenderClosed`, :class:`LogUnavailable` (file
        locked past the busy timeout, ...), :class:`LogFull`, :class:`NotABackscrollFile`, ..."""
        (handle,) = self.append_many([record])
        return handle

    def append_header(self, header: HeaderRecord | Mapping[str, Any]) -> AppendHandle:
        """:meth:`append` for a session header (an event is refused)."""
        parsed = self._coerce(header)
        if not isinstance(parsed, HeaderRecord):
            raise RecordRejected("kind", "append_header needs a header record")
        return self.append(parsed)

    def append_many(
        self, records: Iterable[HeaderRecord | EventRecord | Mapping[str, Any] | bytes]
    ) -> list[AppendHandle]:
        """Validate every record first, then commit them all in one transaction (all or none)."""
        parsed = [self._coerce(r) for r in records]
        self._writer_registry.refuse_owned((r.session_id for r in parsed), self._generation, "log")
        return self._commit(parsed)

    def append_encoded(self, records: Sequence[EncodedRecord]) -> BatchAck:
        """Bulk load: commit records already validated and encoded
        (:func:`~backscroll.ingest.bulk.prepare_lines`) in one transaction, all or none; the
        returned :class:`BatchAck` is already settled. The records do not enter the live view
        (a loader's own searches never read them). From the first bulk batch on, this log's
        connection checkpoints the WAL every :data:`BULK_CHECKPOINT_PAGES` pages instead of
        SQLite's 1,000 (each checkpoint is an fsync; closing the log checkpoints what is left).
        Raises like :meth:`append_many`."""
        self._writer_registry.refuse_owned((r[0] for r in records), self._generation, "log")
        if records:
            now = int(time.time() * 1000)
            self._insert([(sid, key, value, now) for sid, key, value, _ in records], bulk=True)
        return BatchAck(len(records), acknowledged=len(records))

    def _submit(self, record: HeaderRecord | EventRecord, *, writer: SessionWriter | None) -> AppendHandle:
        """A session writer's append (the writer checked ownership and the seq)."""
        (handle,) = self._commit([record])
        return handle

    def _commit(self, parsed: list[HeaderRecord | EventRecord]) -> list[AppendHandle]:
        rows = [self._encode(r) for r in parsed]
        if not rows:
            return []
        now = int(time.time() * 1000)
        offsets = self._insert([(sid, key, value, now) for sid, key, value in rows])
        handles = []
        acks = []
        for record, (_, _, value), offset in zip(parsed, rows, offsets, strict=True):
            handles.append(AppendHandle(record, Position(0, offset)))
            if isinstance(record, HeaderRecord):
                self._remember_header(record)
            else:
                self._remember(record, value)
                acks.append((record.session_id, record.seq, 0, offset))
        self.live.acknowledged_many(acks)
        return handles

    def _remember(self, record: EventRecord, encoded: bytes) -> None:
        """Keep a committed event (and its bytes) in the live view until the indexer's position
        passes it (the caller records its offset), and its seq for :meth:`session`."""
        sid = record.session_id
        self.live.add(record, encoded)
        if record.seq > self._last_seqs.get(sid, -1):
            self._last_seqs[sid] = record.seq
            if len(self._last_seqs) > _LAST_SEQS_MAX:
                self._last_seqs.pop(next(iter(self._last_seqs)), None)

    def append_raw(self, key: bytes | None, value: bytes | None, *, time_ms: int | None = None) -> Position:
        """Write bytes without validation, as a foreign client of the log could (tests, tools): the
        indexer must dead-letter what is not a valid record."""
        session_id: str | None
        try:
            session_id = key.decode("utf-8") if key is not None else None
        except UnicodeDecodeError:
            session_id = None
        stamp = int(time.time() * 1000) if time_ms is None else time_ms
        (offset,) = self._insert([(session_id, key, value, stamp)])
        return Position(0, offset)

    def _insert(
        self, rows: list[tuple[str | None, bytes | None, bytes | None, int]], *, bulk: bool = False
    ) -> list[int]:
        with self._lock:
            conn = self._connection()
            try:
                if bulk and self._bulk_conn is not conn:
                    conn.execute(f"PRAGMA wal_autocheckpoint = {BULK_CHECKPOINT_PAGES}")
                    self._bulk_conn = conn
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.executemany(
                        "INSERT INTO log (session_id, key, value, time_ms) VALUES (?, ?, ?, ?)", rows
                    )
                    # Under the write lock, AUTOINCREMENT gives one transaction's rows consecutive offsets.
                    last = int(conn.execute("SELECT last_insert_rowid()").fetchone()[0])
                    offsets = list(range(last - len(rows) + 1, last + 1))
                    conn.execute("COMMIT")
                except BaseException:
                    rollback(conn)
                    raise
            except sqlite3.Error as err:
                raise translate_sqlite_error(err, f"append to {self.path} failed") from err
            return offsets

    # -- sessions -------------------------------------------------------------------------------
    def session(self, workspace_id: str, session_id: str, *, next_seq: int | None = None) -> SessionWriter:
        """The writer of ``session_id`` for this process; it assigns contiguous seqs, resuming after
        the highest seq in the log, in this process, or from ``last_seq_lookup``."""
        if self._closed:
            raise AppenderClosed("session() after close()")
        return self._writer_registry.open(self, workspace_id, session_id, next_seq, self._resume_seq)

    def _resume_seq(self, workspace_id: str, session_id: str) -> int:
        with self._lock:
            conn = self._connection()
            try:
                row = conn.execute(
                    "SELECT max(json_extract(CAST(value AS TEXT), '$.seq')) FROM log "
                    "WHERE session_id = ? AND json_valid(CAST(value AS TEXT)) "
                    "AND json_extract(CAST(value AS TEXT), '$.kind') = 'event'",
                    (session_id,),
                ).fetchone()
            except sqlite3.Error as err:
                raise translate_sqlite_error(err, f"cannot read {self.path}") from err
        stored = row[0] if row is not None and isinstance(row[0], int) else None
        return resume_seq([self._last_seqs.get(session_id), stored], self._lookup, workspace_id, session_id)

    def _release_writer(self, writer: SessionWriter) -> None:
        self._writer_registry.release(writer)

    # -- reading (tools and tests; the indexer reads inside its own transaction) -----------------
    def end_offset(self) -> int:
        """The highest offset written so far (0 for an empty log)."""
        with self._lock:
            conn = self._connection()
            try:
                row = conn.execute("SELECT max(offset) FROM log").fetchone()
            except sqlite3.Error as err:
                raise translate_sqlite_error(err, f"cannot read {self.path}") from err
        return int(row[0] or 0)

    def read(self, after: int = 0, limit: int = 500) -> list[LogRecord]:
        """Rows with an offset above ``after`` in offset order."""
        with self._lock:
            conn = self._connection()
            try:
                return read_log(conn, after, limit=limit)
            except sqlite3.Error as err:
                raise translate_sqlite_error(err, f"cannot read {self.path}") from err

    # -- lifecycle ------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> None:
        """Nothing to wait for: every append was committed before it returned."""

    def close(self, timeout: float | None = None) -> None:
        """Release the connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            try:
                conn.close()
            except sqlite3.Error as err:
                raise translate_sqlite_error(err, f"closing {self.path} failed") from err

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteEntryLog({str(self.path)!r}{', closed' if self._closed else ''})"
