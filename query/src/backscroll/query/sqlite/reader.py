"""``SQLiteSessionReader``: the session reads of :class:`~backscroll.query.OpenSearchSessionReader` over the
embedded projection (the ``sessions`` and ``events`` tables ``backscroll.indexer.sqlite.view``
writes: the same documents as the OpenSearch indices; like the embedded provider it reads them by
name, the query layer does not import the view).

The public methods, validation order, result models and error codes are :class:`ReaderBase`'s, shared
with the OpenSearch reader; this module only loads documents. Every statement carries the scope as
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

import dataclasses
import os
from collections.abc import Sequence
from typing import Any, Final, Unpack

import orjson

from backscroll.indexer.sqlite.docs import EVENT_COLUMNS, event_source
from backscroll.query.errors import SessionQueryError
from backscroll.query.options import SQLiteReaderOptions
from backscroll.query.reads import (
    LogEntry,
    SessionRecord,
    entry_from_source,
    record_from_source,
)
from backscroll.query.reads.flow import ReadFlow, done
from backscroll.query.reads.reader import Loaded, ReaderBase
from backscroll.query.scope import Scope
from backscroll.query.sqlite.access import sqlite_file

__all__ = ["SQLiteSessionReader"]

_CHUNK: Final = 500  # seqs per ``IN`` list (SQLite allows 32766 host parameters)


def _persistence_failed(message: str) -> SessionQueryError:
    return SessionQueryError("SESSION_QUERY_PERSISTENCE_FAILED", message)


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


class SQLiteSessionReader(ReaderBase):
    """Reads sessions of one :class:`Scope` from an embedded projection and a live source.

    Cheap to construct (the file is opened on the first read), thread-safe (one connection behind a
    lock), ``close()`` idempotent. ``read_window_max``, ``live``, ``persistence``,
    ``request_timeout_s`` and ``persisted_inspect_concurrency`` are :class:`ReaderBase`'s;
    ``catch_up`` runs before the projection is read (bounded by the read's time, see
    :mod:`backscroll.query.sqlite.access`).
    """

    def __init__(
        self, scope: Scope, path: str | os.PathLike[str], **options: Unpack[SQLiteReaderOptions]
    ) -> None:
        self.file, rest = sqlite_file(path, "SESSION_QUERY_PERSISTENCE_FAILED", options)
        super().__init__(scope, **rest)
        self.path = self.file.path

    def close(self) -> None:
        """Refuse further reads, close the connection (and an owned catch-up). Idempotent."""
        super().close()
        self.file.close()

    # -- SQL ------------------------------------------------------------------------------------
    def _scope_sql(self) -> tuple[str, list[Any]]:
        column = "session_id" if self.scope.kind == "sessions" else "workspace_id"
        return f"{column} IN ({','.join('?' * len(self.scope.ids))})", list(self.scope.ids)

    # sqlite3 blocks: the loads do their I/O on the calling thread and yield no request (the async
    # reader runs the whole read on a worker thread).
    def _persisted(
        self, session_id: str, *, with_text: bool
    ) -> ReadFlow[tuple[SessionRecord, Loaded] | None]:
        return done(self._read_persisted(session_id, with_text=with_text))

    def _with_text(
        self, session_id: str, entries: list[LogEntry], wanted: Sequence[int]
    ) -> ReadFlow[list[LogEntry]]:
        return done(self._read_text(session_id, entries, wanted))

    def _persisted_listing(self) -> ReadFlow[list[SessionRecord]]:
        return done(self._read_listing())

    def _read_persisted(self, session_id: str, *, with_text: bool) -> tuple[SessionRecord, Loaded] | None:
        """The session document and its event documents in seq order (``None`` if not in the scoped
        projection), from one snapshot; without ``with_text`` the ``text`` column is not read."""
        deadline = self._deadline()
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
        return record, Loaded(record.header, entries)

    def _read_text(self, session_id: str, entries: list[LogEntry], wanted: Sequence[int]) -> list[LogEntry]:
        missing = {entries[i].seq: i for i in wanted if entries[i].text is None}
        if not missing:
            return entries
        out = list(entries)
        pending = sorted(missing)
        scope_sql, scope_params = self._scope_sql()
        with self.file.snapshot(self._deadline()) as conn:
            for start in range(0, len(pending), _CHUNK):
                chunk = pending[start : start + _CHUNK]
                rows = conn.execute(
                    f"SELECT seq, text FROM events WHERE session_id = ? AND {scope_sql} "
                    f"AND seq IN ({','.join('?' * len(chunk))})",
                    [session_id, *scope_params, *chunk],
                )
                for seq, text in rows:
                    index = missing.get(seq)
                    if index is not None:
                        out[index] = dataclasses.replace(entries[index], text=text or "")
        unfilled = [seq for seq, index in missing.items() if out[index].text is None]
        if unfilled:
            raise _persistence_failed(
                f"session {session_id!r} changed while it was read (events {unfilled[:5]} vanished)"
            )
        return out

    def _read_listing(self) -> list[SessionRecord]:
        deadline = self._deadline()
        self.file.catch_up(deadline)
        scope_sql, scope_params = self._scope_sql()
        with self.file.snapshot(deadline) as conn:
            rows = conn.execute(
                f"SELECT session_id, doc FROM sessions WHERE {scope_sql} ORDER BY session_id", scope_params
            ).fetchall()
        return [record_from_source(_decode(sid, "the session document", doc)) for sid, doc in rows]
