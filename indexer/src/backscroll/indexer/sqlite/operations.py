"""Operator actions on the projection of an embedded file: rebuild it from the file's log, forget a
session."""

from __future__ import annotations

import os
import time
from pathlib import Path

from backscroll.indexer.operations import Progress, RebuildReport, compact_quietly
from backscroll.indexer.runner import RunStats
from backscroll.indexer.sqlite.errors import sqlite_edge

__all__ = ["forget_embedded", "rebuild_embedded"]


def rebuild_embedded(path: str | os.PathLike[str], *, on_batch: Progress | None = None) -> RebuildReport:
    """Empty the projection of a SQLite file and project its whole log again.

    The emptying and the reset of the position are one transaction; readers see an empty (then
    growing) projection until the replay finishes (the embedded backend has no index versions).
    The projection is compacted (:meth:`~backscroll.indexer.sqlite.view.SQLiteView.compact`) at
    the end."""
    from backscroll.indexer.sqlite.runner import embedded_runner, open_embedded
    from backscroll.indexer.sqlite.view import clear_projection

    started = time.monotonic()
    conn = open_embedded(Path(path))
    try:
        with sqlite_edge(f"cannot reset the projection of {path}"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                clear_projection(conn)
                conn.execute("DELETE FROM indexer_positions WHERE name = 'default'")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    finally:
        conn.close()
    with embedded_runner(path, bulk_catch_up=True) as runner:

        def progress(stats: RunStats) -> None:
            if on_batch is not None:
                on_batch(stats, runner.last_lag or 0)

        stats = runner.run(until_idle=True, on_batch=progress)
        compact_quietly(runner.view)
    return RebuildReport(0, 0, stats, time.monotonic() - started, False)


def forget_embedded(path: str | os.PathLike[str], session_id: str) -> int:
    """Delete a session's documents from the projection of a SQLite file (the log keeps its rows,
    so a rebuild would bring them back)."""
    from backscroll.indexer.sqlite.runner import open_embedded
    from backscroll.indexer.sqlite.view import SQLiteView

    conn = open_embedded(Path(path))
    try:
        with SQLiteView(conn=conn) as view:
            return view.forget_session(session_id)
    finally:
        conn.close()
