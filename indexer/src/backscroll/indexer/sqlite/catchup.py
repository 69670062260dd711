"""The embedded backend's bulk catch-up: a long backlog of the log projected with the Python of
one batch (read, decode, project, build the rows) overlapping the SQL of the previous one.

One thread runs the statements the other would wait for: on this file's writer connection, a
batch is one transaction of a few statements per table, its read position stored last, so the
exactly-once effect of the serial runner holds batch by batch. The batches are read on a second,
read-only connection, after the position the previous batch will store.

Why a few statements per table: the sqlite3 module releases the GIL around every step of a
statement, and an ``executemany`` steps once per row. Beside a thread running Python, the writer
would then wait for the GIL after each row (up to the switch interval): 2,000 rows took 13 s
instead of 0.2 s (``benchmarks/bench_gil_convoy.py``). So the events go as multi-row
``VALUES`` statements of 256 rows, and the other tables' rows as one JSON text each
(``json_each``); the writer waits a few times per batch, and :meth:`SQLiteCatchUp.run` shortens
the switch interval for its duration.

It covers the common case only, a backlog of valid records whose events are new: on an invalid
record, a dead letter or a conflict, an event that already exists (a replay), a failed update,
a position moved by another indexer, or any error, it stops after the batches already committed
and the :class:`~backscroll.indexer.runner.Runner` carries on from the stored position, where
the serial path sorts such batches out as usual.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import queue
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

import orjson

from backscroll.indexer.batch import BatchProcessor
from backscroll.indexer.errors import IndexerError
from backscroll.indexer.metrics import IndexerMetrics
from backscroll.indexer.ports import Entry
from backscroll.indexer.projector import Action
from backscroll.indexer.sqlite.errors import sqlite_edge
from backscroll.indexer.sqlite.event_writes import (
    EVENT_ROW_TEXT,
    EVENT_ROW_WORKSPACE,
    INSERT_EVENTS,
    INSERT_VOCAB,
    event_row,
)
from backscroll.indexer.sqlite.rows import KnownTerms, TextRows, terms_by_workspace, text_rows, vocab_rows
from backscroll.indexer.sqlite.source import SQLiteSource, stored_position
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest.errors import IngestError
from backscroll.ingest.sqlite.log import connect, rollback

__all__ = ["CATCH_UP_BATCH_MAX", "CATCH_UP_MIN_BACKLOG", "SQLiteCatchUp"]

log = logging.getLogger("backscroll.indexer")

#: Log rows behind the position from which a run starts with the bulk catch-up (below it, the
#: reader connection and the writer thread are not worth starting).
CATCH_UP_MIN_BACKLOG: Final = 20_000
#: Records per batch (one transaction) of a catch-up. Each commit flushes a new segment into every
#: full-text table, which the automatic merges then rewrite: three times fewer commits than the
#: runner's 2,000-record batches took a 272k catch-up from 20.4 to 17.3 s on average (four
#: alternating pairs). A transaction holds the write lock about 0.3 s (0.75 s at most, with a
#: checkpoint); 10,000-record batches were no faster.
CATCH_UP_BATCH_MAX: Final = 6000
#: The switch interval during a catch-up: the writer takes the GIL back after each statement
#: from a thread running Python, which hands it over when its interval runs out.
_SWITCH_INTERVAL_S: Final = 0.001


def _field(n: int) -> str:
    return f"json_extract(value, '$[{n}]')"


#: Most rows per multi-row ``INSERT … VALUES`` statement (fewer where the SQLite build allows fewer
#: bound parameters): few statements per batch, and one compiled statement for all full chunks.
#: Each statement ends with a wait for the GIL held by the projecting thread; 256 rows a statement
#: made the writer wait 2–3 s in a 272k catch-up, 2,048 about 0.7 s.
_ROWS_CHUNK: Final = 2048
#: WAL pages between checkpoints while the catch-up writes (~160 MiB; the indexer's own setting
#: otherwise): a page several batches rewrite (the vocabulary's and the events' indexes, the
#: full-text segments) is copied into the file once instead of once per checkpoint.
CATCH_UP_CHECKPOINT_PAGES: Final = 40_000


@functools.lru_cache(maxsize=16)
def _values_sql(head: str, width: int, tail: str, rows: int) -> str:
    one = "(" + ", ".join("?" * width) + ")"
    return f"{head} VALUES " + ", ".join([one] * rows) + tail


@dataclass(frozen=True)
class _Insert:
    """A multi-row ``INSERT … VALUES`` of ``width`` columns (``tail``: what follows the rows)."""

    head: str
    width: int
    tail: str = ""

    def sql(self, rows: int) -> str:
        return _values_sql(self.head, self.width, self.tail, rows)

    def run(self, conn: sqlite3.Connection, values: list[object]) -> None:
        """Insert the rows whose values follow each other in ``values``, in order, at most
        :data:`_ROWS_CHUNK` rows per statement (fewer if the build binds fewer parameters)."""
        width, rows = self.width, len(values) // self.width
        chunk = min(_ROWS_CHUNK, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width)
        for start in range(0, rows, chunk):
            count = min(chunk, rows - start)
            conn.execute(self.sql(count), values[start * width : (start + count) * width])


# A row as a JSON text would be parsed again by each ``json_extract`` that unpacks a column of it.
_EVENTS: Final = _Insert(INSERT_EVENTS, 12)
_VOCAB: Final = _Insert(INSERT_VOCAB, 4, " ON CONFLICT DO NOTHING")
# Under the write lock a rowid table's new rows take the next rowids in order: mark + 1 + position.
_WORDS: Final = "INSERT INTO events_words (rowid, body) SELECT ?1 + key + 1, value FROM json_each(?2)"
_TRI: Final = (
    "INSERT INTO events_tri (rowid, body) SELECT ?1 + key + 1, ' ' || value || ' ' FROM json_each(?2)"
)
_SPARSE: Final = "INSERT INTO {table} (rowid, body) SELECT ?1 + {k} + 1, {body} FROM json_each(?2)"
_VOCAB_TRI: Final = (
    "INSERT INTO vocab_tri (rowid, body) SELECT tid, ' ' || term || ' ' FROM vocab WHERE tid > ?"
)
_SESSIONS: Final = (
    f"INSERT INTO sessions (session_id, workspace_id, doc) SELECT {_field(0)}, {_field(1)},"
    f" CAST({_field(2)} AS BLOB) FROM json_each(?) WHERE true"
    " ON CONFLICT (session_id) DO UPDATE SET workspace_id = excluded.workspace_id, doc = excluded.doc"
)
_POSITION: Final = (
    "INSERT INTO indexer_positions (name, offset) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET offset = excluded.offset"
)


class _Stop(Exception):
    """The catch-up hands over to the runner (the reason is the message)."""


@dataclass
class _Job:
    """One batch's writes: the events' columns row after row (bound parameters), one JSON text
    per other table, the shadow updates one by one."""

    after: int
    through: int
    consumed: int
    events: list[object]
    created: int
    words: str
    idents: str
    cjk: str
    vocab: list[object]
    sessions: str
    updates: list[Action] = field(default_factory=list)


@dataclass
class _Writer:
    """The writer thread's state: what each committed batch did (records consumed, events
    indexed, seconds), not yet reported; the first failure."""

    committed: collections.deque[tuple[int, int, float]] = field(default_factory=collections.deque)
    failure: str | None = None


class SQLiteCatchUp:
    """Projects the backlog of one indexer (``name``) of a SQLite file, Python and SQL overlapped.

    ``conn`` is the runner's writer connection (used only from the catch-up's writer thread while
    :meth:`run` runs); the log is read on a connection of its own."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        conn: sqlite3.Connection,
        *,
        name: str = "default",
        batch_max: int = CATCH_UP_BATCH_MAX,
        batch_max_bytes: int = 16 * 1024 * 1024,
        min_backlog: int = CATCH_UP_MIN_BACKLOG,
    ) -> None:
        self.path = path
        self.conn = conn
        self.name = name
        self.batch_max = batch_max
        self.batch_max_bytes = batch_max_bytes
        self.min_backlog = min_backlog
        #: Why the last run stopped before the end of the log (None: it reached it, or never ran).
        self.stopped: str | None = None

    def run(self, stop: threading.Event, progress: Callable[[int, int, float], None]) -> None:
        """Project batch after batch until the end of the log, ``stop``, or a case for the runner;
        ``progress(consumed, indexed, seconds)`` for each committed batch, in order. Raises
        nothing: whatever this leaves, the runner projects from the stored position."""
        self.stopped = None
        try:
            read = connect(self.path, create=False)
        except IngestError as err:
            self.stopped = f"cannot open a reader: {err}"
            return
        previous = sys.getswitchinterval()
        sys.setswitchinterval(_SWITCH_INTERVAL_S)
        try:
            with sqlite_edge("bulk catch-up: read the log"):
                if self._backlog(read) < self.min_backlog:
                    return
            with _checkpoints_apart(self.conn):
                self._overlapped(read, stop, progress)
        except (IndexerError, _Stop) as err:
            self.stopped = str(err)
        except Exception as err:  # whatever it is, the runner's own path meets it and reports it
            self.stopped = f"{type(err).__name__}: {err}"
        finally:
            sys.setswitchinterval(previous)
            read.close()
        if self.stopped:
            log.info("bulk catch-up handed over to the runner: %s", self.stopped)

    def _backlog(self, read: sqlite3.Connection) -> int:
        end = int(read.execute("SELECT coalesce(max(offset), 0) FROM log").fetchone()[0])
        return end - stored_position(read, self.name)

    def _overlapped(
        self, read: sqlite3.Connection, stop: threading.Event, progress: Callable[[int, int, float], None]
    ) -> None:
        builder = _Builder(read, self.name, self.batch_max, self.batch_max_bytes)
        jobs: queue.Queue[_Job | None] = queue.Queue(maxsize=1)
        state = _Writer()
        writer = threading.Thread(
            target=self._write_all, args=(jobs, state), name="backscroll-catch-up", daemon=True
        )
        writer.start()

        def report() -> None:
            while state.committed:
                progress(*state.committed.popleft())

        try:
            while not stop.is_set() and state.failure is None:
                job = builder.next_job()
                if job is None:
                    break
                jobs.put(job)
                report()
        finally:
            jobs.put(None)
            writer.join()
        report()
        if builder.stopped:
            raise _Stop(builder.stopped)
        if state.failure:
            raise _Stop(state.failure)

    def _write_all(self, jobs: queue.Queue[_Job | None], state: _Writer) -> None:
        """The writer thread: each job in its transaction; after a failure the rest is dropped."""
        view = SQLiteView(conn=self.conn)
        while (job := jobs.get()) is not None:
            if state.failure is not None:
                continue
            started = time.perf_counter()
            try:
                _write(self.conn, view, self.name, job)
            except _Stop as err:
                state.failure = str(err)
            except Exception as err:  # whatever it is, the runner's own path reports it
                state.failure = f"{type(err).__name__}: {err}"
            else:
                state.committed.append((job.consumed, job.created, time.perf_counter() - started))


@contextlib.contextmanager
def _checkpoints_apart(conn: sqlite3.Connection) -> Iterator[None]:
    """:data:`CATCH_UP_CHECKPOINT_PAGES` between checkpoints on ``conn`` while the block runs, the
    WAL file never cut back meanwhile (growing it again after each cut costs system time); then
    the connection's own settings again and a checkpoint that waits for no reader (with the
    indexer's size limit, its next commit truncates the WAL file)."""
    with sqlite_edge("bulk catch-up: space the checkpoints"):
        pages = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
        limit = int(conn.execute("PRAGMA journal_size_limit").fetchone()[0])
        conn.execute(f"PRAGMA wal_autocheckpoint = {CATCH_UP_CHECKPOINT_PAGES}")
        conn.execute("PRAGMA journal_size_limit = -1")
    try:
        yield
    finally:
        try:
            conn.execute(f"PRAGMA wal_autocheckpoint = {pages}")
            conn.execute(f"PRAGMA journal_size_limit = {limit}")
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as err:  # the indexer's next commits checkpoint as usual
            log.warning("bulk catch-up: could not checkpoint the WAL: %s", err)


class _Builder:
    """The Python side: reads, decodes and projects one batch and builds its rows."""

    def __init__(self, read: sqlite3.Connection, name: str, batch_max: int, batch_max_bytes: int) -> None:
        # Restoring a session's state reads committed documents: a session a batch in flight
        # touched is still in ``processor.states`` then, so what it reads is never behind.
        self.source = SQLiteSource(read, name=name, batch_max_bytes=batch_max_bytes, owns_conn=False)
        self.processor = BatchProcessor(SQLiteView(conn=read), IndexerMetrics())
        self.batch_max = batch_max
        self.after = stored_position(read, name)
        self.known = KnownTerms()
        #: Why the builder stopped before the end of the log (None: it reached it).
        self.stopped: str | None = None

    def next_job(self) -> _Job | None:
        """The next batch's job; None at the end of the log or at a case for the runner."""
        entries = self.source.read_after(self.after, self.batch_max)
        if not entries:
            return None
        if not all(isinstance(entry, Entry) for entry in entries):
            self.stopped = "an invalid record"
            return None
        prepared = self.processor.prepare(entries)
        if prepared.result.letters or prepared.result.conflicts:
            self.stopped = "a dead letter or a conflict"
            return None
        try:
            job = self._job(prepared.actions, self.after, entries[-1].raw.offset, len(entries))
        except (KeyError, ValueError, TypeError) as err:
            self.stopped = f"a document the bulk path cannot write: {err}"
            return None
        self.after = job.through
        return job

    def _job(self, actions: list[Action], after: int, through: int, consumed: int) -> _Job:
        events: list[object] = []
        words: list[str] = []
        idents: list[tuple[int, str]] = []
        cjk: list[tuple[int, str]] = []
        sessions: list[tuple[str, object, str]] = []
        updates: list[Action] = []
        texts: list[tuple[str, TextRows]] = []
        for action in actions:
            if action.target == "events" and action.op == "create":
                row = event_row(action)
                k = len(words)
                events.extend(row)
                text = text_rows(str(row[EVENT_ROW_TEXT]))
                words.append(text.words)
                if text.idents:
                    idents.append((k, text.idents))
                if text.cjk:
                    cjk.append((k, text.cjk))
                texts.append((str(row[EVENT_ROW_WORKSPACE]), text))
            elif action.target == "events" and action.op == "update":
                updates.append(action)
            elif action.target == "sessions" and action.op == "index":
                body = action.body
                sessions.append((action.doc_id, body.get("workspace_id"), orjson.dumps(body).decode()))
            else:
                raise ValueError(f"{action.op} on {action.target}")
        # A term sent in a batch that is not committed in the end is sent again by the runner's
        # own path, which checks the table.
        terms = self.known.unseen(terms_by_workspace(texts))
        self.known.learn(terms)
        dumps = orjson.dumps
        return _Job(
            after=after,
            through=through,
            consumed=consumed,
            events=events,
            created=len(words),
            words=dumps(words).decode(),
            idents=dumps(idents).decode(),
            cjk=dumps(cjk).decode(),
            vocab=[value for row in vocab_rows(terms) for value in row],
            sessions=dumps(sessions).decode(),
            updates=updates,
        )


def _write(conn: sqlite3.Connection, view: SQLiteView, name: str, job: _Job) -> None:
    """One batch in one transaction, its position last; :class:`_Stop` (rolled back) when the
    batch is a case for the runner."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if stored_position(conn, name) != job.after:
            raise _Stop("another indexer moved the position")
        mark = int(conn.execute("SELECT coalesce(max(rid), 0) FROM events").fetchone()[0])
        try:
            _EVENTS.run(conn, job.events)
        except sqlite3.IntegrityError as err:
            raise _Stop(f"an event that already exists ({err})") from err
        conn.execute(_WORDS, (mark, job.words))
        conn.execute(_TRI, (mark, job.words))
        for table, rows in (("events_ident", job.idents), ("events_cjk", job.cjk)):
            conn.execute(_SPARSE.format(table=table, k=_field(0), body=_field(1)), (mark, rows))
        for action in job.updates:
            result = view.update_event(action)
            if result.reason:
                raise _Stop(f"an update the runner must report: {result.reason}")
        tid = int(conn.execute("SELECT coalesce(max(tid), 0) FROM vocab").fetchone()[0])
        _VOCAB.run(conn, job.vocab)
        conn.execute(_VOCAB_TRI, (tid,))
        conn.execute(_SESSIONS, (job.sessions,))
        conn.execute(_POSITION, (name, job.through))
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
