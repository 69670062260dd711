"""The session reads on the embedded SQLite file: :class:`SQLiteReadEngine` (the read-engine
port, :mod:`backscroll.query.reads.engine`) and :class:`SQLiteSessionReader`, the reads of
:class:`~backscroll.query.reads.reader.ReaderBase` over it. The engine reads the embedded
projection (the ``sessions`` and ``events`` tables ``backscroll.indexer.sqlite.view`` writes: the
same documents as the OpenSearch indices; like the embedded provider it reads them by name, the
query layer does not import the view).

The public methods, validation order, result models and error codes are :class:`ReaderBase`'s,
shared with the OpenSearch reader; this module only loads documents. ``sqlite3`` blocks: the
asyncio reader runs each engine call on a worker thread. Every statement carries the scope as
a SQL condition (``session_id IN (…)`` or ``workspace_id IN (…)``), so a session outside the scope
reads exactly like a missing one. A session's document and its events are read in one read
transaction (a consistent snapshot); skeletons are read without the ``text`` column and the text of
the events a read returns is fetched by seq afterwards (events are append-only: a seq's text never
changes). Any SQLite failure is ``SESSION_QUERY_PERSISTENCE_FAILED``.

``catch_up`` (e.g. the backend's embedded indexer run until idle) is called before the projection
is read, like :class:`~backscroll.query.sqlite.provider.SQLiteProvider` does before a search, so a
read sees every append that returned before it. The reader closes it on ``close()`` if it can.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final, Unpack

import orjson

from backscroll.indexer.sqlite.docs import EVENT_COLUMNS, event_source
from backscroll.query.deadline import Deadline
from backscroll.query.errors import SessionQueryError
from backscroll.query.options import SQLiteReaderOptions
from backscroll.query.reads import SessionRecord, entry_from_source, record_from_source
from backscroll.query.reads.engine import StoredLog
from backscroll.query.reads.reader import ReaderBase
from backscroll.query.scope import Scope
from backscroll.query.sqlite.access import SQLiteFile, sqlite_file

__all__ = ["SQLiteReadEngine", "SQLiteSessionReader"]

_CHUNK: Final = 500  # seqs per ``IN`` list (SQLite allows 32766 host parameters)


def _decode(session_id: str, what: str, blob: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(blob)
    except orjson.JSONDecodeError as err:
        raise SessionQueryError(
            "SESSION_QUERY_CORRUPT_SESSION", f"session {session_id!r}: {what} is not JSON: {err}"
        ) from None
    if not isinstance(value, dict):
        raise SessionQueryError(
            "SESSION_QUERY_CORRUPT_SESSION", f"session {session_id!r}: {what} is not an object"
        )
    return value


class SQLiteReadEngine:
    """The embedded :class:`~backscroll.query.reads.engine.ReadEngine` of one :class:`Scope`, on
    ``file`` (whose edge types every ``sqlite3`` error). Thread-safe (one connection behind a lock)."""

    def __init__(self, scope: Scope, file: SQLiteFile) -> None:
        self.scope = scope
        self.file = file

    def _scope_sql(self) -> tuple[str, list[Any]]:
        column = "session_id" if self.scope.kind == "sessions" else "workspace_id"
        return f"{column} IN ({','.join('?' * len(self.scope.ids))})", list(self.scope.ids)

    def log(self, session_id: str, with_text: bool, deadline: Deadline) -> StoredLog | None:
        """The session document and its event documents in seq order (``None`` if not in the scoped
        projection), from one snapshot; without ``with_text`` the ``text`` column is not read."""
        self.file.catch_up(deadline)
        scope_sql, scope_params = self._scope_sql()
        text_column = "text" if with_text else "NULL"
        with self.file.snapshot(deadline) as conn:
            row = conn.execute(
                f"SELECT doc FROM sessions WHERE session_id = ? AND {scope_sql}", [session_id, *scope_params]
            ).fetchone()
            if row is None:
                return None
            rows = conn.execute(
                f"SELECT {text_column}, {EVENT_COLUMNS}, doc FROM events "
                f"WHERE session_id = ? AND {scope_sql} ORDER BY seq",
                [session_id, *scope_params],
            ).fetchall()
        record = record_from_source(_decode(session_id, "the session document", row[0]))
        entries = []
        for text, *columns, doc in rows:
            _decode(session_id, "an event document", doc)  # typed errors for a damaged document
            source = event_source(columns, doc, text if with_text else None)
            entries.append(entry_from_source(session_id, source, with_text=with_text))
        return StoredLog(record, entries)

    def texts(self, session_id: str, seqs: Sequence[int], deadline: Deadline) -> dict[int, str]:
        """The text of the events ``seqs``, by seq (events are append-only: a seq's text never
        changes, so a later snapshot than the log's is as good)."""
        texts: dict[int, str] = {}
        scope_sql, scope_params = self._scope_sql()
        with self.file.snapshot(deadline) as conn:
            for start in range(0, len(seqs), _CHUNK):
                chunk = list(seqs[start : start + _CHUNK])
                rows = conn.execute(
                    f"SELECT seq, text FROM events WHERE session_id = ? AND {scope_sql} "
                    f"AND seq IN ({','.join('?' * len(chunk))})",
                    [session_id, *scope_params, *chunk],
                )
                texts.update((seq, text or "") for seq, text in rows)
        return texts

    def listing(self, deadline: Deadline) -> list[SessionRecord]:
        """Every session document in scope."""
        self.file.catch_up(deadline)
        scope_sql, scope_params = self._scope_sql()
        with self.file.snapshot(deadline) as conn:
            rows = conn.execute(
                f"SELECT session_id, doc FROM sessions WHERE {scope_sql} ORDER BY session_id", scope_params
            ).fetchall()
        return [record_from_source(_decode(sid, "the session document", doc)) for sid, doc in rows]

    def close(self) -> None:
        """Close the connection (and an owned catch-up). Idempotent."""
        self.file.close()


class SQLiteSessionReader(ReaderBase):
    """Reads sessions of one :class:`Scope` from an embedded projection and a live source.

    Cheap to construct (the file is opened on the first read), thread-safe (one connection behind a
    lock), ``close()`` idempotent (it closes the connection and an owned catch-up).
    ``read_window_max``, ``live``, ``persistence``, ``request_timeout_s`` and
    ``persisted_inspect_concurrency`` are :class:`ReaderBase`'s; ``catch_up`` runs before the
    projection is read (bounded by the read's time, see :mod:`backscroll.query.sqlite.access`).
    """

    engine: SQLiteReadEngine

    def __init__(
        self, scope: Scope, path: str | os.PathLike[str], **options: Unpack[SQLiteReaderOptions]
    ) -> None:
        file, rest = sqlite_file(path, "SESSION_QUERY_PERSISTENCE_FAILED", options)
        super().__init__(scope, SQLiteReadEngine(scope, file), **rest)
        self.file = file
        self.path = file.path
