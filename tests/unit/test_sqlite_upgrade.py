"""A file whose ``events`` rows carry their id in a ``doc_id`` column (the layout before the id
left the table) is upgraded in place by the first writer that opens it: the same rows under the
same rowids (the full-text tables still point at them), unique by ``(session_id, seq)``."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest.sqlite.file import SCHEMA_VERSION
from backscroll.ingest.wire import EventRecord, HeaderRecord, parse_record
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.sqlite.provider import SQLiteProvider

_OLD_EVENTS = """
CREATE TABLE events (
    rid INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, workspace_id TEXT NOT NULL,
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, time_us INTEGER NOT NULL,
    tool_name TEXT, has_text INTEGER NOT NULL, surface_state TEXT NOT NULL,
    content_hash TEXT NOT NULL, log_offset INTEGER NOT NULL, text TEXT NOT NULL, doc BLOB NOT NULL
)
"""
_COLUMNS = (
    "rid, workspace_id, session_id, seq, type, time_us, tool_name, has_text, surface_state, "
    "content_hash, log_offset, text, doc"
)


def _records(session: str, texts: list[str]) -> list[HeaderRecord | EventRecord]:
    header = {"v": 1, "kind": "header", "workspace_id": "w", "session_id": session,
              "created_at": "2026-11-04T00:00:00+00:00"}  # fmt: skip
    event = {"v": 1, "kind": "event", "workspace_id": "w", "session_id": session, "type": "user/message",
             "time": "2026-11-04T00:00:00+00:00", "surface": {"op": "append"}}  # fmt: skip
    events = [event | {"seq": seq, "text": text} for seq, text in enumerate(texts)]
    return [parse_record(record) for record in [header, *events]]


def _to_old_layout(path: Path) -> list[tuple[Any, ...]]:
    """Rewrite the file's events table the way the older layout kept it; its rows, as now."""
    conn = sqlite3.connect(path, isolation_level=None)
    rows = conn.execute(f"SELECT {_COLUMNS} FROM events ORDER BY rid").fetchall()
    conn.execute("BEGIN")
    conn.execute("DROP TABLE events")
    conn.execute(_OLD_EVENTS)
    conn.execute("CREATE INDEX events_by_session ON events (session_id, seq)")
    conn.execute(
        "CREATE INDEX events_by_workspace "
        "ON events (workspace_id, time_us, seq, type, has_text, tool_name, log_offset)"
    )
    conn.executemany(
        f"INSERT INTO events (doc_id, {_COLUMNS}) VALUES (?, {', '.join('?' * 13)})",
        [(f"{row[2]}:{row[3]}", *row) for row in rows],
    )
    conn.execute("PRAGMA user_version = 1")
    conn.execute("COMMIT")
    conn.close()
    return rows


def test_an_old_events_table_is_upgraded_in_place_by_the_first_writer(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteView(path) as view:
        view.write_records(_records("s", ["hello there", "general kenobi"]))
    rows = _to_old_layout(path)

    with SQLiteView(path) as view:
        view.ensure_schema()  # what the runner does first
        conn = view.conn
        assert "doc_id" not in {row[1] for row in conn.execute("PRAGMA table_info(events)")}
        assert conn.execute(f"SELECT {_COLUMNS} FROM events ORDER BY rid").fetchall() == rows
        unique = {row[1]: row[2] for row in conn.execute("PRAGMA index_list(events)")}
        assert unique == {"events_by_session": 1, "events_by_workspace": 0}
        (rid,) = conn.execute("SELECT rowid FROM events_words WHERE events_words MATCH 'kenobi'").fetchone()
        assert conn.execute("SELECT text FROM events WHERE rid = ?", (rid,)).fetchone() == ("general kenobi",)
        source = view.get_event_source("s:1", "s")
        assert source is not None and source["text"] == "general kenobi"
        more = _records("s", ["hello there", "general kenobi", "you are a bold one"])
        assert view.write_records(more) == 2  # the session and the new event; the others replay
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (3,)
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'events_upgrade'").fetchone() is None
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_current_file_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with SQLiteView(path) as view:
        view.write_records(_records("s", ["hello"]))
    before = sqlite3.connect(path).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    with SQLiteView(path) as view:
        view.ensure_schema()
        assert view.get_event_source("s:0", "s") is not None
    with SQLiteProvider(Scope.workspace("w"), path, scan_max_rows=0) as provider:
        (match,) = provider.search(SessionQueryRequest(query="hello", limit=5)).matches
        assert (match.entry_id, match.created_at) == ("s:0", datetime(2026, 11, 4, tzinfo=UTC))
    assert sqlite3.connect(path).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == before


def test_a_reader_searches_and_reads_an_old_file_without_changing_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteView(path) as view:
        view.write_records(_records("s", ["hello there", "general kenobi"]))
    _to_old_layout(path)
    before = sqlite3.connect(path).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    with SQLiteProvider(Scope.workspace("w"), path, scan_max_rows=0) as provider:
        found = provider.search(SessionQueryRequest(query="kenobi", limit=5))
        assert [(m.session_id, m.seq, m.entry_id) for m in found.matches] == [("s", 1, "s:1")]
        assert found.matches[0].created_at == datetime(2026, 11, 4, tzinfo=UTC)
    assert sqlite3.connect(path).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == before
