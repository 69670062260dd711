"""``SQLiteSessionReader``: the session reads of :class:`~sessionlog.query.SessionReader` over the
embedded projection (the ``sessions`` and ``events`` tables ``sessionlog.indexer.sqlite_view``
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
is read, like :class:`~sessionlog.query.sqlite_provider.SQLiteProvider` does before a search, so a
read sees every append that returned before it. The reader closes it on ``close()`` if it can.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import orjson

from sessionlog.ingest.errors import IngestError
from sessionlog.ingest.sqlite_log import connect, rollback
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.reader_base import Loaded, ReaderBase, config_error
from sessionlog.query.reads import (
    DEFAULT_READ_WINDOW_MAX,
    LiveSource,
    LogEntry,
    SessionRecord,
    entry_from_source,
    record_from_source,
)
from sessionlog.query.scope import Scope

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
    lock), ``close()`` idempotent. ``read_window_max``, ``live`` and ``persistence`` are those of
    :class:`~sessionlog.query.SessionReader`; ``request_timeout_s`` bounds each read (lock waits
    and statements); ``catch_up`` runs before the projection is read.
    """

    def __init__(
        self,
        scope: Scope,
        path: str | os.PathLike[str],
        *,
        read_window_max: int = DEFAULT_READ_WINDOW_MAX,
        live: LiveSource | None = None,
        persistence: bool = True,
        request_timeout_s: float = 5.0,
        catch_up: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(scope, read_window_max=read_window_max, live=live, persistence=persistence)
        if not isinstance(path, str | os.PathLike) or not str(path):
            raise config_error("path must name the SQLite file")
        if (
            isinstance(request_timeout_s, bool)
            or not isinstance(request_timeout_s, int | float)
            or not math.isfinite(request_timeout_s)
            or request_timeout_s <= 0
        ):
            raise config_error(f"request_timeout_s must be a positive number, got {request_timeout_s!r}")
        if catch_up is not None and not callable(catch_up):
            raise config_error("catch_up must be callable")
        self.path = Path(path).expanduser()
        self.request_timeout_s = float(request_timeout_s)
        self._catch_up = catch_up
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._deadline = 0.0

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Refuse further reads, close the connection (and an owned catch-up). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            conn.close()
        closer = getattr(self._catch_up, "close", None)
        if callable(closer):
            closer()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid != os.getpid():
            self._conn = None  # never use (nor close) a connection inherited through fork
        if self._conn is None:
            if not self.path.exists():
                raise _persistence_failed(f"no embedded database at {self.path}; has anything been appended?")
            try:
                conn = connect(self.path, create=False, busy_timeout_s=self.request_timeout_s)
            except IngestError as err:
                raise _persistence_failed(f"cannot open {self.path}: {err}") from None
            conn.set_progress_handler(self._progress, 2000)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _run_catch_up(self) -> None:
        if self._catch_up is None:
            return
        try:
            self._catch_up()
        except SessionQueryError:
            raise
        except Exception as err:
            raise _persistence_failed(f"catching up the embedded projection failed: {err}") from None

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction (a consistent snapshot) under the lock, with the request deadline."""
        with self._lock:
            self._check_open()
            conn = self._connection()
            self._deadline = time.monotonic() + self.request_timeout_s
            try:
                conn.execute("BEGIN")
                yield conn
            except sqlite3.Error as err:
                raise _persistence_failed(self._describe(err)) from None
            finally:
                rollback(conn)

    def _describe(self, err: sqlite3.Error) -> str:
        text = str(err)
        if "no such table" in text:
            return f"projection missing in {self.path} ({text}); has the indexer run?"
        if "interrupted" in text:
            return f"read took longer than {self.request_timeout_s}s"
        return f"embedded projection read failed: {text}"

    # -- SQL ------------------------------------------------------------------------------------
    def _scope_sql(self) -> tuple[str, list[Any]]:
        column = "session_id" if self.scope.kind == "sessions" else "workspace_id"
        return f"{column} IN ({','.join('?' * len(self.scope.ids))})", list(self.scope.ids)

    def _persisted(self, session_id: str, *, with_text: bool) -> tuple[SessionRecord, Loaded] | None:
        """The session document and its event documents in seq order (``None`` if not in the scoped
        projection), from one snapshot; without ``with_text`` the ``text`` column is not read."""
        self._run_catch_up()
        scope_sql, scope_params = self._scope_sql()
        text_column = "text" if with_text else "NULL"
        with self._snapshot() as conn:
            row = conn.execute(
                f"SELECT doc FROM sessions WHERE session_id = ? AND {scope_sql}", [session_id, *scope_params]
            ).fetchone()
            if row is None:
                return None
            rows = conn.execute(
                f"SELECT {text_column}, doc FROM events WHERE session_id = ? AND {scope_sql} ORDER BY seq",
                [session_id, *scope_params],
            ).fetchall()
        record = record_from_source(_decode(session_id, "the session document", row[0]))
        entries = []
        for text, doc in rows:
            source = _decode(session_id, "an event document", doc)
            field = source.pop("text_field", "text")  # the view keeps ``text`` (or ``args``) apart
            if with_text:
                source[field] = text
            entries.append(entry_from_source(session_id, source, with_text=with_text))
        return record, Loaded(record.header, entries)

    def _with_text(self, session_id: str, entries: list[LogEntry], wanted: Sequence[int]) -> list[LogEntry]:
        missing = {entries[i].seq: i for i in wanted if entries[i].text is None}
        if not missing:
            return entries
        out = list(entries)
        pending = sorted(missing)
        scope_sql, scope_params = self._scope_sql()
        with self._snapshot() as conn:
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

    def _persisted_listing(self) -> list[SessionRecord]:
        self._run_catch_up()
        scope_sql, scope_params = self._scope_sql()
        with self._snapshot() as conn:
            rows = conn.execute(
                f"SELECT session_id, doc FROM sessions WHERE {scope_sql} ORDER BY session_id", scope_params
            ).fetchall()
        return [record_from_source(_decode(sid, "the session document", doc)) for sid, doc in rows]
