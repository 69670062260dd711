"""The embedded projection (write side): event and session documents in one SQLite file, plus the
full-text indexes the embedded provider searches.

:class:`SQLiteView` implements :class:`~backscroll.indexer.ports.SessionView` with the same
outcomes as :class:`~backscroll.indexer.opensearch.view.OpenSearchView` (a ``create`` of an existing
id is a replay or a conflict, an ``update`` of a missing one is rejected), so the same projection
code runs on both; sqlite3 errors are translated at this edge. It writes inside the caller's
transaction when there is one: the embedded runner stores its read position in the same
transaction as the documents (exactly-once effect).

The tables it writes (the read model) are described in :mod:`backscroll.indexer.sqlite.schema`;
what an event's text becomes in them is :mod:`backscroll.indexer.sqlite.rows`; event creates (a
run of them in one statement) and the full-text rows are :mod:`backscroll.indexer.sqlite.event_writes`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import orjson

from backscroll.indexer.document import fold_event
from backscroll.indexer.errors import ViewFailed, ViewUnavailable
from backscroll.indexer.fold import FoldEvent
from backscroll.indexer.ports import Outcome, WriteResult
from backscroll.indexer.projector import Action, SessionProjection, project_records
from backscroll.indexer.sqlite.docs import EVENT_COLUMNS, event_source, pack_event_doc, split_entry_id
from backscroll.indexer.sqlite.errors import sqlite_edge, sqlite_error
from backscroll.indexer.sqlite.event_writes import EventWrites, stored_hashes
from backscroll.indexer.sqlite.rows import (
    MAX_TERM_CHARS,
    KnownTerms,
    TextRows,
    index_tokens,
    text_rows,
    time_us,
)
from backscroll.indexer.sqlite.schema import FULL_TEXT_TABLES, clear_projection, ensure_view_schema
from backscroll.indexer.view_writes import ViewWrites
from backscroll.ingest.errors import IngestError
from backscroll.ingest.sqlite.log import DEFAULT_BUSY_TIMEOUT_S, Synchronous, connect, rollback
from backscroll.ingest.wire import EventRecord, HeaderRecord

__all__ = [
    "MAX_TERM_CHARS",
    "SQLiteView",
    "TextRows",
    "clear_projection",
    "ensure_view_schema",
    "index_tokens",
    "text_rows",
    "time_us",
]


class SQLiteView(EventWrites, ViewWrites):
    """The event and session documents of one SQLite file, and their full-text indexes."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        conn: sqlite3.Connection | None = None,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        synchronous: Synchronous = "NORMAL",
    ) -> None:
        if (path is None) == (conn is None):
            raise ValueError("give exactly one of path or conn")
        self.path = Path(path).expanduser() if path is not None else None
        self._owns_conn = conn is None
        if conn is None:
            assert path is not None
            try:
                conn = connect(path, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
            except IngestError as err:
                kind = ViewUnavailable if err.retriable else ViewFailed
                raise kind(f"cannot open {path}: {err}") from err
        self.conn = conn
        self.attempts = 0
        #: The vocabulary known to be stored (committed), by workspace, and the terms written by
        #: the open transaction.
        self._known_terms = KnownTerms()
        self._pending_terms: dict[str, set[str]] = {}
        self._closed = False

    # -- schema and transactions ----------------------------------------------------------------
    def ensure_schema(self) -> None:
        try:
            ensure_view_schema(self.conn)
        except sqlite3.Error as err:
            raise sqlite_error(err, "cannot create the projection tables") from err

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error); joins an open transaction."""
        if self.conn.in_transaction:
            yield
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as err:
            raise sqlite_error(err, "cannot start a write transaction") from err
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            self.discard_caches()
            raise
        self.commit_caches()

    def commit_caches(self) -> None:
        """The enclosing transaction committed: terms written in it are known to exist."""
        self._known_terms.learn(self._pending_terms)
        self._pending_terms = {}

    def discard_caches(self) -> None:
        """The enclosing transaction rolled back: forget the terms written in it."""
        self._pending_terms = {}

    def refresh(self) -> None:
        """Forget the vocabulary cached as stored. A committed write is visible to every later
        read, but another process may have emptied the projection since (a rebuild): the runner
        refreshes the view after the read position moved under it, before it writes again."""
        self._known_terms.forget()

    # -- bulk -----------------------------------------------------------------------------------
    def _apply(self, actions: Sequence[Action]) -> list[WriteResult]:
        """Apply actions in order (inside the caller's transaction, or one of its own). A failing
        item is rolled back alone and returned REJECTED; a locked file raises
        ``ViewUnavailable``, an unusable one ``ViewFailed``."""
        self.attempts += 1
        results: list[WriteResult] = []
        staged: list[tuple[int, str, TextRows]] = []
        with sqlite_edge("embedded projection write"), self.transaction():
            at = 0
            while at < len(actions):
                end = at
                while end < len(actions) and actions[end].target == "events" and actions[end].op == "create":
                    end += 1
                created = self._create_events(actions[at:end], staged) if end - at > 1 else None
                if created is not None:
                    results.extend(created)
                    at = end
                else:
                    results.append(self._apply_one(actions[at], staged))
                    at += 1
            self._index_text(staged)
        return results

    def _apply_one(self, action: Action, staged: list[tuple[int, str, TextRows]]) -> WriteResult:
        self.conn.execute("SAVEPOINT item")
        try:
            if action.target == "events" and action.op == "create":
                result = self._create_event(action, staged)
            elif action.target == "events" and action.op == "update":
                result = self.update_event(action)
            elif action.target == "sessions" and action.op == "index":
                result = self._index_session(action)
            else:
                result = WriteResult(
                    action, Outcome.REJECTED, f"{action.op} on {action.target} is not supported"
                )
        except (
            sqlite3.IntegrityError,
            sqlite3.DataError,
            sqlite3.InterfaceError,
            ValueError,
            TypeError,
            KeyError,
        ) as err:
            self._undo_item()
            return WriteResult(action, Outcome.REJECTED, f"document not accepted: {err}")
        except BaseException:
            self._undo_item()
            raise
        self.conn.execute("RELEASE item")
        return result

    def _undo_item(self) -> None:
        if not self.conn.in_transaction:  # SQLite already rolled everything back (disk full, ...)
            return
        with suppress(sqlite3.Error):
            self.conn.execute("ROLLBACK TO item")
            self.conn.execute("RELEASE item")

    def update_event(self, action: Action) -> WriteResult:
        """Apply a shadow update to a stored event (REJECTED when it is missing); raises sqlite3
        errors (the caller's savepoint or transaction undoes the item)."""
        row = self.conn.execute(
            f"SELECT rid, {EVENT_COLUMNS}, doc FROM events WHERE session_id = ? AND seq = ?",
            split_entry_id(action.doc_id),
        ).fetchone()
        if row is None:
            return WriteResult(action, Outcome.REJECTED, f"document missing: {action.doc_id}")
        doc = event_source(row[1:-1], row[-1])
        doc.update(action.body.get("doc") or {})
        self.conn.execute(
            "UPDATE events SET workspace_id = ?, session_id = ?, seq = ?, type = ?, has_text = ?, "
            "surface_state = ?, content_hash = ?, tool_name = ?, doc = ? WHERE rid = ?",
            (
                doc["workspace_id"], doc["session_id"], int(doc["seq"]), doc["type"],
                1 if doc.get("has_text") else 0, doc["surface_state"], doc["content_hash"],
                doc.get("tool_name"), pack_event_doc(doc, int(row[-2])), row[0],
            ),
        )  # fmt: skip
        return WriteResult(action, Outcome.WRITTEN)

    def _index_session(self, action: Action) -> WriteResult:
        body = action.body
        self.conn.execute(
            "INSERT INTO sessions (session_id, workspace_id, doc) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET workspace_id = excluded.workspace_id, doc = excluded.doc",
            (action.doc_id, body.get("workspace_id"), orjson.dumps(body)),
        )
        return WriteResult(action, Outcome.WRITTEN)

    # -- reads the projection needs ----------------------------------------------------------------
    def content_hashes(self, actions: Iterable[Action]) -> dict[str, str | None]:
        keys = {a.doc_id: split_entry_id(a.doc_id) for a in actions}
        try:
            stored = stored_hashes(self.conn, keys.values())
        except sqlite3.Error as err:
            raise sqlite_error(err, "embedded projection read") from err
        return {doc_id: stored.get(key) for doc_id, key in keys.items()}

    def get_event_source(self, doc_id: str, routing: str) -> dict[str, Any] | None:
        """The event document as OpenSearch would return its ``_source``."""
        try:
            key = split_entry_id(doc_id)
        except ValueError:
            return None
        try:
            row = self.conn.execute(
                f"SELECT text, {EVENT_COLUMNS}, doc FROM events WHERE session_id = ? AND seq = ?", key
            ).fetchone()
        except sqlite3.Error as err:
            raise sqlite_error(err, "embedded projection read") from err
        if row is None:
            return None
        return event_source(row[1:-1], row[-1], row[0])

    def restore_session(self, session_id: str) -> SessionProjection:
        """Rebuild a session's projection state from its stored documents."""
        try:
            row = self.conn.execute("SELECT doc FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
            session_doc = orjson.loads(row[0]) if row else None
            events: list[FoldEvent] = []
            if session_doc and int(session_doc.get("last_seq", -1)) >= 0:
                cursor = self.conn.execute(
                    f"SELECT {EVENT_COLUMNS}, doc FROM events WHERE session_id = ? ORDER BY seq",
                    (session_id,),
                )
                events = [fold_event(event_source(row[:-1], row[-1])) for row in cursor]
        except sqlite3.Error as err:
            raise sqlite_error(err, "embedded projection read") from err
        return SessionProjection.restore(session_id, session_doc, events)

    def restore_sessions(self, session_ids: Sequence[str]) -> dict[str, SessionProjection]:
        """:meth:`restore_session` of each session."""
        return {sid: self.restore_session(sid) for sid in session_ids}

    def available(self) -> bool:
        try:
            self.conn.execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    def settle(self, committed: bool) -> None:
        """Keep (committed) or forget (rolled back) the vocabulary cached during the batch."""
        if committed:
            self.commit_caches()
        else:
            self.discard_caches()

    @property
    def publishes_watermarks(self) -> bool:
        """False: a committed write is visible to every later read, nothing to publish."""
        return False

    def publish_watermarks(self, topic: str, through: dict[int, tuple[int, int]]) -> None:
        """Nothing to publish (see :attr:`publishes_watermarks`)."""

    # -- bulk loads, maintenance ------------------------------------------------------------------
    def write_records(self, records: Iterable[HeaderRecord | EventRecord]) -> int:
        """Project and write records directly (no log): bulk loads into a fresh file, benchmarks."""
        self.ensure_schema()
        actions = project_records(records)
        written = 0
        for start in range(0, len(actions), 5000):
            results = self.write(actions[start : start + 5000])
            written += sum(1 for r in results if r.outcome in (Outcome.CREATED, Outcome.WRITTEN))
        return written

    def forget_session(self, session_id: str) -> int:
        """Delete every document of a session (its vocabulary terms stay; they match nothing)."""
        with sqlite_edge("forget"), self.transaction():
            rows = self.conn.execute(
                "SELECT rid, text FROM events WHERE session_id = ?", (session_id,)
            ).fetchall()
            for rid, text in rows:
                bodies = text_rows(text)
                for table, body in (
                    ("events_words", bodies.words),
                    ("events_tri", f" {bodies.words} "),
                    ("events_ident", bodies.idents),
                    ("events_cjk", bodies.cjk),
                ):
                    if table in ("events_words", "events_tri") or body:
                        self.conn.execute(
                            f"INSERT INTO {table} ({table}, rowid, body) VALUES ('delete', ?, ?)", (rid, body)
                        )
            self.conn.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            self.conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        return len(rows)

    def compact(self) -> None:
        """Merge each full-text table's segments into one (FTS5 ``optimize``) and refresh the
        planner's statistics (``ANALYZE``), in one write transaction: a catch-up leaves hundreds
        of segments per table, and a term lookup reads every one."""
        with sqlite_edge("compact the embedded projection"), self.transaction():
            for table in FULL_TEXT_TABLES:
                self.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            self.conn.execute("ANALYZE")

    def count_events(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def close(self) -> None:
        """Close the connection if this view opened it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._owns_conn:
            self.conn.close()

    def __enter__(self) -> SQLiteView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
