"""The embedded runner: projects the ``log`` table of a SQLite file into the same file's view.

The very :class:`~backscroll.indexer.runner.Runner` of the Kafka backend, over
:class:`~backscroll.indexer.sqlite.source.SQLiteSource`, :class:`~backscroll.indexer.sqlite.view.SQLiteView`
and :class:`~backscroll.indexer.sqlite.deadletters.SQLiteDeadLetters` sharing one connection, so a
batch (documents, dead letters, position) is one transaction.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from backscroll.indexer.errors import SourceFailed, SourceUnavailable
from backscroll.indexer.runner import Runner
from backscroll.indexer.sqlite.catchup import CATCH_UP_BATCH_MAX, SQLiteCatchUp
from backscroll.indexer.sqlite.deadletters import SQLiteDeadLetters, list_dead_letters
from backscroll.indexer.sqlite.errors import sqlite_edge, sqlite_error
from backscroll.indexer.sqlite.source import SQLiteSource, ensure_indexer_schema
from backscroll.indexer.sqlite.view import SQLiteView, ensure_view_schema
from backscroll.ingest.errors import IngestError
from backscroll.ingest.sqlite.log import DEFAULT_BUSY_TIMEOUT_S, Synchronous, connect, ensure_log_schema

__all__ = ["embedded_runner", "list_dead_letters", "open_embedded"]


def open_embedded(
    path: str | os.PathLike[str],
    *,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    synchronous: Synchronous = "NORMAL",
) -> sqlite3.Connection:
    """Open the file and create the log, view and indexer tables if missing. A file that cannot be
    used (read-only, not a database, a foreign schema) raises :class:`SourceFailed` at once."""
    target = Path(path).expanduser()
    try:
        conn = connect(target, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
    except IngestError as err:  # the ingest side translated sqlite3 already
        raise (SourceUnavailable if err.retriable else SourceFailed)(str(err)) from err
    except sqlite3.Error as err:
        raise sqlite_error(err, f"cannot open {target}", SourceUnavailable, SourceFailed) from err
    try:
        try:
            ensure_log_schema(conn)
        except IngestError as err:
            conn.close()
            raise (SourceUnavailable if err.retriable else SourceFailed)(str(err)) from err
        ensure_view_schema(conn)
        ensure_indexer_schema(conn)
        # A foreign table named "log" (or an old file) fails here rather than on every poll.
        conn.execute("SELECT offset, session_id, key, value, time_ms FROM log LIMIT 0").fetchall()
    except sqlite3.Error as err:
        conn.close()
        raise sqlite_error(err, f"cannot use {target}", SourceUnavailable, SourceFailed) from err
    return conn


#: Page cache of the indexer's connection, KiB.
INDEXER_CACHE_KIB = 128 * 1024
#: WAL pages between checkpoints on the indexer's connection (~40 MiB; SQLite's default is 1,000).
INDEXER_CHECKPOINT_PAGES = 10_000
#: The WAL file's size left after a checkpoint on the indexer's connection (SQLite keeps the file
#: at its largest otherwise): above the checkpoint interval's ~40 MiB, so only the larger WAL of a
#: bulk catch-up is cut back.
INDEXER_WAL_LIMIT_BYTES = 64 * 1024 * 1024


def embedded_runner(
    path: str | os.PathLike[str],
    *,
    name: str = "default",
    batch_max: int = 2000,
    batch_max_bytes: int = 16 * 1024 * 1024,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    synchronous: Synchronous = "NORMAL",
    poll_interval_s: float = 0.2,
    idle_timeout_s: float = 300.0,
    metrics_port: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    bulk_catch_up: bool = False,
    catch_up_batch_max: int = CATCH_UP_BATCH_MAX,
) -> Runner:
    """A :class:`Runner` keeping the projection of one SQLite file current with its log.

    A batch is one write transaction: ``batch_max`` trades how long appenders may wait for the
    write lock (well under a second per 2000 records) against the per-transaction cost that
    dominates small batches (a catch-up of 2000-record batches is ~1.6x faster than of 500).

    ``bulk_catch_up``: :meth:`Runner.run` starts with the
    :class:`~backscroll.indexer.sqlite.catchup.SQLiteCatchUp` when the backlog is long (what
    ``backscroll index`` and ``rebuild`` do; it shortens Python's switch interval while it runs),
    in batches of ``catch_up_batch_max`` records (fewer, larger full-text segments to merge)."""
    if batch_max < 1 or catch_up_batch_max < 1:
        raise ValueError("batch_max and catch_up_batch_max must be at least 1")
    conn = open_embedded(path, busy_timeout_s=busy_timeout_s, synchronous=synchronous)
    # The projection's b-trees and full-text segments outgrow SQLite's default 2 MiB page cache
    # early; with 128 MiB (an upper bound, allocated as used) a 100k-entry catch-up took 87 s
    # instead of 124 s on the benchmark machine.
    # A batch dirties thousands of pages (random b-tree inserts into the vocabulary and the event
    # indexes): with SQLite's 1,000-page checkpoint every commit checkpointed (copying the batch's
    # pages into the file and syncing it); ten times fewer checkpoints copy a page rewritten by
    # several batches once. The WAL stays bounded (~40 MiB). The log's durability is unchanged (an
    # append syncs the WAL itself); a power cut may lose more projected batches, projected again.
    with sqlite_edge(f"cannot set the page cache of {path}"):
        conn.execute(f"PRAGMA cache_size = -{INDEXER_CACHE_KIB}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {INDEXER_CHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit = {INDEXER_WAL_LIMIT_BYTES}")
    source = SQLiteSource(
        conn, name=name, batch_max_bytes=batch_max_bytes, poll_interval_s=poll_interval_s, sleep=sleep
    )
    return Runner(
        source,
        SQLiteView(conn=conn),
        SQLiteDeadLetters(conn),
        batch_max=batch_max,
        poll_timeout_s=poll_interval_s,
        idle_timeout_s=idle_timeout_s,
        metrics_port=metrics_port,
        bulk=SQLiteCatchUp(
            path, conn, name=name, batch_max=catch_up_batch_max, batch_max_bytes=batch_max_bytes
        )
        if bulk_catch_up
        else None,
    )
