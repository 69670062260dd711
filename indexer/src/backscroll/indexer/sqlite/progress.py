"""Read-only looks at an embedded file for operators: how far the projection is behind the log,
and whether any record was parked.

The file is opened with ``mode=ro``: looking never creates it nor any table (a file nothing was
appended to yet is simply empty). ``sqlite3`` errors become the indexer's typed errors at
:func:`~backscroll.indexer.sqlite.errors.sqlite_edge`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from backscroll.indexer.errors import SourceFailed, SourceUnavailable
from backscroll.indexer.sqlite.errors import sqlite_edge

__all__ = ["LogProgress", "has_dead_letters", "log_progress"]


@dataclass(frozen=True, slots=True)
class LogProgress:
    """The one log of an embedded file against the indexer's position in it."""

    end_offset: int
    indexed_offset: int
    #: Append time of the oldest record not projected yet (``None``: nothing pending).
    oldest_pending_ms: int | None

    @property
    def lag(self) -> int:
        return max(0, self.end_offset - self.indexed_offset)


@contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection | None]:
    if not path.exists():
        yield None
        return
    with sqlite_edge(f"cannot open {path}", SourceUnavailable, SourceFailed):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    try:
        with sqlite_edge(f"cannot read {path}", SourceUnavailable, SourceFailed):
            yield conn
    finally:
        conn.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def log_progress(path: Path) -> LogProgress:
    """The end of the log in ``path``, the indexer's position and the oldest pending record."""
    with _read_only(path) as conn:
        if conn is None:
            return LogProgress(0, 0, None)
        tables = _tables(conn)
        if "log" not in tables:
            return LogProgress(0, 0, None)
        end = int(conn.execute("SELECT coalesce(max(offset), 0) FROM log").fetchone()[0])
        position = 0
        if "indexer_positions" in tables:
            row = conn.execute("SELECT offset FROM indexer_positions WHERE name = 'default'").fetchone()
            position = int(row[0]) if row else 0
        oldest = None
        if end > position:
            row = conn.execute("SELECT min(time_ms) FROM log WHERE offset > ?", (position,)).fetchone()
            oldest = None if row[0] is None else int(row[0])
        return LogProgress(end, position, oldest)


def has_dead_letters(path: Path) -> bool:
    """Whether the file exists and has parked anything yet."""
    with _read_only(path) as conn:
        return conn is not None and "dead_letters" in _tables(conn)
