"""The SQLite :class:`~backscroll.indexer.ports.DeadLetters`: the ``dead_letters`` table.

Letters are inserted through the indexer's connection, inside the batch's transaction. A replay
re-appends the original bytes to the ``log`` table (as any log client would) and remembers the last
replayed letter under the position name ``dlq-replay``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any, Final

from backscroll.indexer.deadletter import DeadLetter, decode_envelope, encode_envelope
from backscroll.indexer.errors import DeadLetterUnavailable, SourceFailed
from backscroll.indexer.sqlite.errors import sqlite_edge
from backscroll.indexer.sqlite.source import stored_position
from backscroll.ingest.sqlite.log import rollback

__all__ = ["SQLiteDeadLetters", "list_dead_letters"]

_REPLAY: Final = "dlq-replay"


def list_dead_letters(
    conn: sqlite3.Connection, limit: int | None = 100, after: int = 0
) -> list[dict[str, Any]]:
    """Dead letters after row ``after``, oldest first: decoded envelopes (original bytes under
    ``key``/``value``) with their row id as ``dlq_offset``. Raises sqlite3 errors."""
    sql = "SELECT id, envelope FROM dead_letters WHERE id > ? ORDER BY id"
    params: tuple[int, ...] = (after,)
    if limit is not None:
        sql += " LIMIT ?"
        params = (after, limit)
    letters = []
    for row_id, envelope in conn.execute(sql, params):
        letter = decode_envelope(bytes(envelope))
        letter["dlq_offset"] = int(row_id)
        letters.append(letter)
    return letters


class SQLiteDeadLetters:
    """Dead letters of one SQLite file, written through ``conn`` (closed by :meth:`close` only
    with ``owns_conn``; the embedded runner shares its source's connection)."""

    def __init__(self, conn: sqlite3.Connection, *, owns_conn: bool = False) -> None:
        self.conn = conn
        self._owns_conn = owns_conn

    def park(self, letters: Sequence[DeadLetter]) -> None:
        with sqlite_edge("park dead letters", DeadLetterUnavailable, SourceFailed):
            for letter in letters:
                self.conn.execute(
                    "INSERT INTO dead_letters (log_offset, error_class, envelope) VALUES (?, ?, ?)",
                    (letter.offset, letter.error_class, encode_envelope(letter)),
                )

    def list(self, limit: int | None = 100) -> list[dict[str, Any]]:
        with sqlite_edge("read dead letters", DeadLetterUnavailable, SourceFailed):
            return list_dead_letters(self.conn, limit)

    def replay(self) -> int:
        """Re-append, in one transaction, every letter after the last replayed one to the log."""
        conn = self.conn
        with sqlite_edge("replay dead letters", DeadLetterUnavailable, SourceFailed):
            conn.execute("BEGIN IMMEDIATE")
            try:
                letters = list_dead_letters(conn, None, after=stored_position(conn, _REPLAY))
                now = int(time.time() * 1000)
                for letter in letters:
                    key: bytes | None = letter["key"]
                    try:
                        session_id = key.decode("utf-8") if key is not None else None
                    except UnicodeDecodeError:
                        session_id = None
                    conn.execute(
                        "INSERT INTO log (session_id, key, value, time_ms) VALUES (?, ?, ?, ?)",
                        (session_id, key, letter["value"], now),
                    )
                if letters:
                    conn.execute(
                        "INSERT INTO indexer_positions (name, offset) VALUES (?, ?) "
                        "ON CONFLICT (name) DO UPDATE SET offset = excluded.offset",
                        (_REPLAY, letters[-1]["dlq_offset"]),
                    )
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
        return len(letters)

    def close(self) -> None:
        """Close the connection if it is ours. Idempotent."""
        if self._owns_conn:
            self.conn.close()
