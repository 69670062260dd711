"""The workspace catalog of an embedded file: which workspaces the projection holds, with their
session and event counts, and the workspace of one session.

The file is opened read-only (``mode=ro``): looking never creates it nor any table; a file the
indexer has not projected into yet holds no workspaces. ``sqlite3`` errors become
:class:`~backscroll.query.errors.SessionQueryError` (``SESSION_QUERY_INDEX_FAILED``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backscroll.query.errors import SessionQueryError

__all__ = ["WorkspaceRow", "workspace_counts", "workspace_of"]

#: One workspace: its id, its session count and its event count.
WorkspaceRow = tuple[str, int, int]


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection | None]:
    """A read-only connection to ``path`` (``None`` when the file does not exist yet)."""
    if not path.exists():
        yield None
        return
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as err:
        raise SessionQueryError("SESSION_QUERY_INDEX_FAILED", f"cannot open {path}: {err}") from err
    try:
        yield conn
    except sqlite3.Error as err:
        raise SessionQueryError("SESSION_QUERY_INDEX_FAILED", f"cannot read {path}: {err}") from err
    finally:
        conn.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def workspace_counts(path: Path) -> list[WorkspaceRow]:
    """Every workspace in the projection of ``path``, by id, with its session and event counts."""
    with _read_only(path) as conn:
        if conn is None or not {"sessions", "events"} <= _tables(conn):
            return []
        sessions = dict(
            conn.execute(
                "SELECT workspace_id, count(*) FROM sessions WHERE workspace_id IS NOT NULL "
                "GROUP BY workspace_id"
            ).fetchall()
        )
        events = dict(conn.execute("SELECT workspace_id, count(*) FROM events GROUP BY workspace_id"))
    ids = sorted(set(sessions) | set(events))
    return [(ws, int(sessions.get(ws, 0)), int(events.get(ws, 0))) for ws in ids]


def workspace_of(path: Path, session_id: str) -> str | None:
    """The workspace of a projected session (``None``: not in the projection of ``path``)."""
    with _read_only(path) as conn:
        if conn is None or "sessions" not in _tables(conn):
            return None
        row = conn.execute("SELECT workspace_id FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])
