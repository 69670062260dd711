"""The tables of the embedded projection (written by :class:`~backscroll.indexer.sqlite.view.SQLiteView`),
created and emptied.

The read model (``backscroll.query.sqlite.provider`` reads these tables by name):

* ``events`` — one row per event document, unique by ``(session_id, seq)`` (the event's id is
  ``session_id:seq``): the filter and sort fields as columns, the text (or a tool call's arguments)
  in ``text``, the rest of the document as JSON in ``doc`` (not repeating what the columns hold:
  :mod:`backscroll.indexer.sqlite.docs`);
* ``sessions`` — one row per session document (JSON);
* ``events_words`` — FTS5 ``unicode61 remove_diacritics 2`` over the event's folded words joined by
  single spaces (:func:`~backscroll.indexer.sqlite.rows.index_tokens`): whole-word matches;
* ``events_tri`` — FTS5 ``trigram`` over the same words padded with a space on each side: a
  word's substrings (``"9931"``), whole words (``" word "``) and folded phrases (``" a b"``);
* ``events_ident`` — FTS5 ``trigram`` over the event's identifiers (``get_type``, ``2.2.1-3``:
  :data:`~backscroll.indexer.textfold.IDENT_RE`), each padded with a space: identifier prefixes
  (``" get_t"``) and whole identifiers (``" get_type "``); only events that have identifiers;
* ``events_cjk`` — FTS5 ``unicode61`` over the character bigrams of each CJK run (runs separated by
  a ``0`` token) and then every CJK character alone: a CJK word of 3+ characters is a phrase of its
  bigrams, of 2 one bigram, of 1 one character; only events that have CJK text;
* ``vocab`` (per workspace, with ``(ws, len, term)`` and ``(ws, len, reversed term)`` indexes) and
  ``vocab_tri`` (FTS5 ``trigram`` over ``" term "``) — each workspace's vocabulary, where typo
  candidates are generated (one tenant's words never become another's candidates).

The full-text tables keep no per-row sizes (``columnsize=0``: nothing ranks by BM25). Every
contentless FTS5 row has the rowid of its ``events`` (or ``vocab``) row. (Files written before
``vocab`` existed keep their old ``terms`` tables unused: rebuild them to search the new way.)

Files written before the event id left the table (an ``events.doc_id`` column with its own unique
index) are upgraded in place by the first writer that opens them (:func:`ensure_view_schema`):
the rows are copied with their rowids, so the full-text tables stay valid, in one transaction.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Final

from backscroll.ingest.sqlite.file import SCHEMA_VERSION
from backscroll.ingest.sqlite.log import rollback

__all__ = ["EVENT_ROW_COLUMNS", "FULL_TEXT_TABLES", "clear_projection", "ensure_view_schema"]

_EVENTS_TABLE: Final = """
CREATE TABLE IF NOT EXISTS {name} (
    rid INTEGER PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    time_us INTEGER NOT NULL,
    tool_name TEXT,
    has_text INTEGER NOT NULL,
    surface_state TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    log_offset INTEGER NOT NULL,
    text TEXT NOT NULL,
    doc BLOB NOT NULL
)
"""
_VIEW_SCHEMA: Final = (
    _EVENTS_TABLE.format(name="events")
    + """;
CREATE UNIQUE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq);
CREATE INDEX IF NOT EXISTS events_by_workspace
    ON events (workspace_id, time_us, seq, type, has_text, tool_name, log_offset);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    workspace_id TEXT,
    doc BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_workspace ON sessions (workspace_id);
CREATE TABLE IF NOT EXISTS vocab (
    tid INTEGER PRIMARY KEY,
    ws TEXT NOT NULL,
    term TEXT NOT NULL,
    len INTEGER NOT NULL,
    rterm TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS vocab_by_prefix ON vocab (ws, len, term);
CREATE INDEX IF NOT EXISTS vocab_by_suffix ON vocab (ws, len, rterm);
CREATE VIRTUAL TABLE IF NOT EXISTS events_words
    USING fts5(body, content='', columnsize=0, tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS events_tri USING fts5(body, content='', columnsize=0, tokenize='trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS events_ident
    USING fts5(body, content='', columnsize=0, tokenize='trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS events_cjk
    USING fts5(body, content='', columnsize=0, tokenize='unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS vocab_tri
    USING fts5(body, content='', columnsize=0, tokenize='trigram', detail='none')
"""
)


#: The columns of an ``events`` row, in table order after ``rid``.
EVENT_ROW_COLUMNS: Final = (
    "workspace_id, session_id, seq, type, time_us, tool_name, has_text, surface_state, content_hash, "
    "log_offset, text, doc"
)


def ensure_view_schema(conn: sqlite3.Connection) -> None:
    """Create the projection's tables and indexes if missing, and upgrade an older ``events``
    layout (idempotent; takes the write lock when it changes anything)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vocab_tri'"
    ).fetchone()
    if exists and not _has_event_ids(conn):
        return
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN IMMEDIATE")
    try:
        if _has_event_ids(conn):  # checked again under the write lock: another writer may have done it
            _drop_event_ids(conn)
        for statement in _VIEW_SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        # A backscroll that knows only the older layout now refuses the file with a clear message.
        if int(conn.execute("PRAGMA user_version").fetchone()[0]) < SCHEMA_VERSION:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        if own:
            conn.execute("COMMIT")
    except BaseException:
        if own:
            rollback(conn)
        raise


def _has_event_ids(conn: sqlite3.Connection) -> bool:
    return any(row[1] == "doc_id" for row in conn.execute("PRAGMA table_info(events)"))


def _drop_event_ids(conn: sqlite3.Connection) -> None:
    """Copy the ``events`` rows of the older layout (with a ``doc_id`` column) into the current one,
    rowids kept; the indexes are created afterwards by the schema."""
    conn.execute("DROP TABLE IF EXISTS events_upgrade")
    conn.execute(_EVENTS_TABLE.format(name="events_upgrade"))
    columns = f"rid, {EVENT_ROW_COLUMNS}"
    conn.execute(f"INSERT INTO events_upgrade ({columns}) SELECT {columns} FROM events ORDER BY rid")
    conn.execute("DROP TABLE events")
    conn.execute("ALTER TABLE events_upgrade RENAME TO events")


_TABLE_RE: Final = re.compile(r"CREATE (VIRTUAL )?TABLE IF NOT EXISTS (\w+)")

#: The full-text (FTS5) tables of the projection.
FULL_TEXT_TABLES: Final = tuple(table for virtual, table in _TABLE_RE.findall(_VIEW_SCHEMA) if virtual)


def clear_projection(conn: sqlite3.Connection) -> None:
    """Empty every projection table (inside the caller's transaction); the log is not touched.
    Contentless full-text tables are emptied with their ``delete-all`` command."""
    for virtual, table in _TABLE_RE.findall(_VIEW_SCHEMA):
        if virtual:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
        else:
            conn.execute(f"DELETE FROM {table}")
