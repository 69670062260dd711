"""The SQLite :class:`~backscroll.indexer.ports.EntrySource`: the ``log`` table of one file.

Exactly-once effect: a poll that finds rows opens a ``BEGIN IMMEDIATE`` transaction that stays open
until :meth:`SQLiteSource.commit` stores the new position and commits (or :meth:`rewind` rolls it
back). The view and the dead letters write through the same connection, inside that transaction, so a
crash anywhere leaves either all of a batch or none of it. The write lock makes several indexers on
one file (one per process) take turns; one that finds the position moved by another reports
``assignment_changed`` so cached session states are restored from the view.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from backscroll.indexer.decode import decode_entry
from backscroll.indexer.errors import SourceFailed, SourceUnavailable
from backscroll.indexer.ports import Commit, Entry, InvalidEntry, Poll, RawRecord
from backscroll.indexer.sqlite.errors import sqlite_edge
from backscroll.ingest.sqlite.log import LOG_TOPIC, rollback

__all__ = ["INDEXER_SCHEMA", "SQLiteSource", "ensure_indexer_schema", "stored_position"]

INDEXER_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS indexer_positions (name TEXT PRIMARY KEY, offset INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS dead_letters ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, log_offset INTEGER NOT NULL, error_class TEXT NOT NULL,"
    " envelope BLOB NOT NULL)",
)


def ensure_indexer_schema(conn: sqlite3.Connection) -> None:
    """Create the position and dead-letter tables if missing (raises sqlite3 errors)."""
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dead_letters'"
    ).fetchone()
    if row:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in INDEXER_SCHEMA:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def stored_position(conn: sqlite3.Connection, name: str) -> int:
    """The offset of the last log row projected by indexer ``name`` (0: none yet)."""
    row = conn.execute("SELECT offset FROM indexer_positions WHERE name = ?", (name,)).fetchone()
    return int(row[0]) if row else 0


def _blob(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):  # written by a tool that bound text: still the same bytes
        return value.encode("utf-8")
    return bytes(value)


class SQLiteSource:
    """Reads the log table after the stored position of indexer ``name``."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        name: str = "default",
        batch_max_bytes: int = 16 * 1024 * 1024,
        poll_interval_s: float = 0.2,
        sleep: Callable[[float], None] = time.sleep,
        owns_conn: bool = True,
    ) -> None:
        self.conn = conn
        self.name = name
        self.batch_max_bytes = batch_max_bytes
        self.poll_interval_s = poll_interval_s
        self._sleep = sleep
        self._owns_conn = owns_conn
        self._position: int | None = None  # the position this process last committed or saw
        self._closed = False

    @property
    def topic(self) -> str:
        return LOG_TOPIC

    def _edge(self, what: str) -> Any:
        return sqlite_edge(what, SourceUnavailable, SourceFailed)

    @property
    def position(self) -> int:
        """The stored position (offset of the last projected row)."""
        with self._edge("read the position"):
            return stored_position(self.conn, self.name)

    def _end(self) -> int:
        return int(self.conn.execute("SELECT coalesce(max(offset), 0) FROM log").fetchone()[0])

    def open(self) -> None:
        """Nothing to do: the connection is open (``open_embedded`` checked the file)."""

    def poll(self, max_records: int, timeout_s: float) -> Poll:
        conn = self.conn
        with self._edge("read the log"):
            if conn.in_transaction:  # an earlier batch was neither committed nor rewound
                rollback(conn)
            # Cheap check without the write lock, so idle pollers do not queue behind writers.
            if self._end() <= stored_position(conn, self.name):
                self._sleep(min(timeout_s, self.poll_interval_s))
                return Poll()
            conn.execute("BEGIN IMMEDIATE")
            try:
                position = stored_position(conn, self.name)
                changed = position != self._position
                self._position = position
                entries = self._read(position, max_records)
            except BaseException:
                rollback(conn)
                raise
            if not entries:
                conn.execute("COMMIT")
        return Poll(entries, changed)

    def read_after(self, after: int, limit: int) -> list[Entry | InvalidEntry]:
        """Up to ``limit`` decoded rows (and about ``batch_max_bytes``) after offset ``after``,
        outside any transaction and whatever the stored position (the bulk catch-up's reads)."""
        with self._edge("read the log"):
            return self._read(after, limit)

    def _read(self, after: int, limit: int) -> list[Entry | InvalidEntry]:
        out: list[Entry | InvalidEntry] = []
        size = 0
        cursor = self.conn.execute(
            "SELECT offset, key, value, time_ms FROM log WHERE offset > ? ORDER BY offset LIMIT ?",
            (after, limit),
        )
        for offset, key, value, time_ms in cursor:
            raw = RawRecord(LOG_TOPIC, 0, int(offset), _blob(key), _blob(value), int(time_ms))
            out.append(decode_entry(raw))
            size += len(raw.value or b"")
            if size >= self.batch_max_bytes:
                break
        cursor.close()
        return out

    def commit(self, through: Mapping[int, int]) -> Commit:
        last = through[0]
        with self._edge("store the position"):
            try:
                self.conn.execute(
                    "INSERT INTO indexer_positions (name, offset) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET offset = excluded.offset",
                    (self.name, last),
                )
                self.conn.execute("COMMIT")
            except BaseException:
                rollback(self.conn)
                self._position = None
                raise
        self._position = last
        return Commit.COMMITTED

    def rewind(self, to: Mapping[int, int]) -> None:
        rollback(self.conn)
        self._position = None

    def hold(self, seconds: float) -> None:
        self._sleep(seconds)

    def caught_up(self) -> bool:
        with self._edge("read the log end"):
            return stored_position(self.conn, self.name) >= self._end()

    def lag(self) -> dict[int, int]:
        with self._edge("read the log end"):
            return {0: max(0, self._end() - stored_position(self.conn, self.name))}

    def describe_lag(self) -> str:
        try:
            return f"log rows not projected: {self.lag()[0]}"
        except Exception as err:  # only for the message
            return f"log unreadable ({err})"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.conn.in_transaction:
            rollback(self.conn)
        if self._owns_conn:
            self.conn.close()
