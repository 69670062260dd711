"""The embedded entry log: the session log as one table of one SQLite file (WAL mode).

:class:`SQLiteEntryLog` has the surface of the Kafka :class:`~sessionlog.ingest.appender.Appender`
(``append`` / ``append_header`` / ``flush`` / ``close``, a context manager, handles whose
``result()`` is a :class:`~sessionlog.ingest.appender.Position`) and validates with the same wire
models, so an agent switches backends without touching its code. The differences:

* an append is committed (in its own ``BEGIN IMMEDIATE`` transaction) before ``append`` returns,
  so the handle is already resolved and ``flush`` has nothing to wait for;
* the log has one partition (0) and the offset is the row id (1, 2, 3, ...). Writers are serialised
  by SQLite's write lock and a row id is taken inside it, so commit order is offset order and a
  reader never sees a later offset before an earlier one;
* several processes of one host may append to (and index) the same file at once: every connection
  sets ``busy_timeout`` and takes the write lock up front with ``BEGIN IMMEDIATE``.

Table ``log(offset INTEGER PRIMARY KEY AUTOINCREMENT, session_id, key, value, time_ms)``: ``key``
and ``value`` are the bytes a Kafka record would carry (the session id in UTF-8 and the canonical
JSON), ``session_id`` the decoded key (NULL when it is not UTF-8). :func:`connect` is the one place
that opens the file; the projection and the provider use it too.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Self

from sessionlog.ingest.appender import Position
from sessionlog.ingest.errors import AppenderClosed, IngestError, LogUnavailable, RecordRejected
from sessionlog.ingest.wire import (
    MAX_RECORD_BYTES,
    EventRecord,
    HeaderRecord,
    decode_record,
    encode_key,
    encode_record,
    parse_record,
)

__all__ = [
    "LOG_TOPIC",
    "LogRecord",
    "SQLiteAppendHandle",
    "SQLiteEntryLog",
    "connect",
    "ensure_log_schema",
    "read_log",
    "rollback",
]

#: The "topic" of embedded log records (dead-letter envelopes carry it).
LOG_TOPIC: Final = "log"
DEFAULT_BUSY_TIMEOUT_S: Final = 30.0

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

Synchronous = Literal["NORMAL", "FULL"]


def connect(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    synchronous: Synchronous = "NORMAL",
) -> sqlite3.Connection:
    """Open ``path`` in WAL mode with explicit transactions (``isolation_level=None``).

    ``create=False`` refuses to create a missing file (readers); the parent directory is created
    otherwise. ``synchronous=NORMAL`` survives a process crash at any point; ``FULL`` also survives
    power loss (an fsync per commit). Raises :class:`sqlite3.Error` (callers map it to their errors).
    """
    target = Path(path).expanduser()
    if create:
        target.parent.mkdir(parents=True, exist_ok=True)
        uri = f"file:{_quote(target)}?mode=rwc"
    else:
        uri = f"file:{_quote(target)}?mode=rw"
    conn = sqlite3.connect(
        uri, uri=True, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"cannot switch {target} to WAL mode (journal_mode is {mode})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = OFF")
    except BaseException:
        conn.close()
        raise
    return conn


def _quote(path: Path) -> str:
    # A file: URI: '?' and '#' would end the path part, '%' starts an escape.
    return str(path.resolve()).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def ensure_log_schema(conn: sqlite3.Connection) -> None:
    """Create the ``log`` table if it is missing (idempotent, safe against concurrent openers)."""
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


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already done so (a failed COMMIT, a full
    disk); never masks the error being handled."""
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One log row with the attributes of a Kafka consumer record that the indexer reads."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    topic: str = LOG_TOPIC
    partition: int = 0


def read_log(
    conn: sqlite3.Connection, after: int, *, limit: int = 500, max_bytes: int = 16 * 1024 * 1024
) -> list[LogRecord]:
    """Rows with an offset above ``after``, in offset order: at most ``limit`` rows and, beyond the
    first row, about ``max_bytes`` of values."""
    out: list[LogRecord] = []
    size = 0
    cursor = conn.execute(
        "SELECT offset, key, value, time_ms FROM log WHERE offset > ? ORDER BY offset LIMIT ?", (after, limit)
    )
    for offset, key, value, time_ms in cursor:
        out.append(LogRecord(int(offset), _blob(key), _blob(value), int(time_ms)))
        size += len(value or b"")
        if size >= max_bytes:
            break
    cursor.close()
    return out


def _blob(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):  # written by a tool that bound text: still the same bytes
        return value.encode("utf-8")
    return bytes(value)


class SQLiteAppendHandle:
    """An append that is already committed: the same surface as the Kafka appender's handle."""

    __slots__ = ("_position", "record")

    def __init__(self, record: HeaderRecord | EventRecord, position: Position) -> None:
        self.record = record
        self._position = position

    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = 30.0) -> Position:
        return self._position

    def exception(self, timeout: float | None = 30.0) -> IngestError | None:
        return None

    def __repr__(self) -> str:
        return f"SQLiteAppendHandle({self.record.session_id!r}, {self._position})"


class SQLiteEntryLog:
    """Thread-safe, multi-process-safe appender to the ``log`` table of one SQLite file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: Synchronous = "NORMAL",
    ) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout_s = busy_timeout_s
        self.synchronous: Synchronous = synchronous
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._closed = False

    # -- state ----------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def _connection(self) -> sqlite3.Connection:
        """The connection (opened on first use, and again in a forked child); call under ``_lock``."""
        if self._closed:
            raise AppenderClosed("append after close()")
        if self._conn is not None and self._pid != os.getpid():
            self._conn = None  # the parent's connection must not be used (nor closed) after a fork
        if self._conn is None:
            try:
                conn = connect(self.path, busy_timeout_s=self.busy_timeout_s, synchronous=self.synchronous)
            except sqlite3.Error as err:
                raise LogUnavailable(f"cannot open the embedded log {self.path}: {err}") from err
            try:
                ensure_log_schema(conn)
            except sqlite3.Error as err:
                conn.close()
                raise LogUnavailable(f"cannot create the log table in {self.path}: {err}") from err
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

    def append(self, record: HeaderRecord | EventRecord | Mapping[str, Any] | bytes) -> SQLiteAppendHandle:
        """Validate and commit one record (event or header); raises :class:`RecordRejected` naming
        the field, :class:`AppenderClosed` or :class:`LogUnavailable` (file locked past the busy
        timeout, disk full, ...)."""
        (handle,) = self.append_many([record])
        return handle

    def append_header(self, header: HeaderRecord | Mapping[str, Any]) -> SQLiteAppendHandle:
        parsed = self._coerce(header)
        if not isinstance(parsed, HeaderRecord):
            raise RecordRejected("kind", "append_header needs a header record")
        return self.append(parsed)

    def append_many(
        self, records: Iterable[HeaderRecord | EventRecord | Mapping[str, Any] | bytes]
    ) -> list[SQLiteAppendHandle]:
        """Validate every record first, then commit them all in one transaction (all or none)."""
        parsed = [self._coerce(r) for r in records]
        rows = [self._encode(r) for r in parsed]
        if not rows:
            return []
        now = int(time.time() * 1000)
        offsets = self._insert([(sid, key, value, now) for sid, key, value in rows])
        return [SQLiteAppendHandle(r, Position(0, o)) for r, o in zip(parsed, offsets, strict=True)]

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

    def _insert(self, rows: list[tuple[str | None, bytes | None, bytes | None, int]]) -> list[int]:
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    offsets = []
                    for row in rows:
                        cursor = conn.execute(
                            "INSERT INTO log (session_id, key, value, time_ms) VALUES (?, ?, ?, ?)", row
                        )
                        offsets.append(int(cursor.lastrowid or 0))
                    conn.execute("COMMIT")
                except BaseException:
                    rollback(conn)
                    raise
            except sqlite3.Error as err:
                raise LogUnavailable(f"append to {self.path} failed: {err}") from err
            return offsets

    # -- reading (tools and tests; the indexer reads inside its own transaction) -----------------
    def end_offset(self) -> int:
        """The highest offset written so far (0 for an empty log)."""
        with self._lock:
            conn = self._connection()
            try:
                row = conn.execute("SELECT max(offset) FROM log").fetchone()
            except sqlite3.Error as err:
                raise LogUnavailable(f"cannot read {self.path}: {err}") from err
        return int(row[0] or 0)

    def read(self, after: int = 0, limit: int = 500) -> list[LogRecord]:
        with self._lock:
            conn = self._connection()
            try:
                return read_log(conn, after, limit=limit)
            except sqlite3.Error as err:
                raise LogUnavailable(f"cannot read {self.path}: {err}") from err

    # -- lifecycle ------------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> None:
        """Nothing to wait for: every append was committed before it returned."""
        if self._closed:
            return

    def close(self, timeout: float | None = None) -> None:
        """Release the connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteEntryLog({str(self.path)!r}{', closed' if self._closed else ''})"
