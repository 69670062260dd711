"""Prototype (measurement only, not product code): can the embedded index step overlap its Python
with its SQLite writes? On demand, never collected by pytest.

    python -m tests.benchmarks.proto_overlap APPENDED.db [--rounds 2] [--modes today,serial,overlap]
        [--check MODES | --no-check] [--workdir DIR]

``APPENDED.db`` is a file ``sessionlog append`` filled and nothing indexed yet (copied for every run,
never changed). Each round projects a fresh copy once per mode, each in its own process under
``nice -n 19``, the order rotating from round to round:

* ``today``: ``sessionlog index --until-idle`` (the product);
* ``serial``: the same projection in one thread, every view write of a batch one statement per
  table (``INSERT … SELECT … FROM json_each(?)``), rows built in Python and passed as one JSON text;
* ``overlap``: ``serial`` with the SQL of batch N on a writer thread (its own connection,
  ``BEGIN IMMEDIATE … COMMIT`` per batch, position included) while the main thread reads (its own
  connection), decodes, projects batch N+1 and builds its rows;
* ``overlap-Nms`` (e.g. ``overlap-1ms``): ``overlap`` with Python's switch interval set to N ms
  (after each of its 13 statements per batch the writer must take the GIL back from the main
  thread, which hands it over when its interval runs out);
* ``overlap-process``: the writes in a spawned process instead of a thread
  (:mod:`tests.benchmarks.proto_overlap_process`).

Printed per run: wall, process CPU (user + sys, children included), the load average before and
after, and for the prototypes the thread CPU of the Python side, of the writes and of each part,
how long each side waited for the other, and the WAL's size. The first round's files are then
compared with ``today``'s table by table (:mod:`tests.benchmarks.proto_overlap_check`; ``--check``
limits it to some modes, ``--no-check`` skips it).

The prototype assumes the load row's case only: an empty projection, one indexer, every log row a
valid record, every event a fresh create (no replays, conflicts or dead letters); it stops on
anything else rather than handling it. Shadow updates (``update`` actions) are written one by one
by the product's own method. The vocabulary cache has no size cap (the product clears its cache
past 500,000 terms; this corpus has about 456,000).
"""

from __future__ import annotations

import argparse
import os
import queue
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from sessionlog.indexer.batch import BatchProcessor
from sessionlog.indexer.collector import gc_headroom
from sessionlog.indexer.decode import decode_entry
from sessionlog.indexer.embedded import INDEXER_CACHE_KIB, INDEXER_CHECKPOINT_PAGES, open_embedded
from sessionlog.indexer.metrics import IndexerMetrics
from sessionlog.indexer.ports import Entry, RawRecord
from sessionlog.indexer.projector import Action
from sessionlog.indexer.sqlite_event_writes import event_row
from sessionlog.indexer.sqlite_rows import MAX_TERM_CHARS, text_rows
from sessionlog.indexer.sqlite_source import stored_position
from sessionlog.indexer.sqlite_view import SQLiteView
from sessionlog.ingest.sqlite_log import LOG_TOPIC, connect

__all__ = ["Job", "Parts", "build_jobs", "main", "open_writer", "write_job"]

_NAME = "default"
_BATCH = 2000
#: ``overlap-Nms`` is ``overlap`` with Python's switch interval set to N ms first.
_MODES = ("today", "serial", "overlap")

_EVENTS = (
    "INSERT INTO events (doc_id, workspace_id, session_id, seq, type, time_us, tool_name, has_text,"
    " surface_state, content_hash, log_offset, text, doc)"
    " SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7,"
    " value->>8, value->>9, value->>10, value->>11, CAST(value->>12 AS BLOB) FROM json_each(?)"
)
_WORDS = "INSERT INTO events_words (rowid, body) SELECT ?1 + key + 1, value FROM json_each(?2)"
_TRI = "INSERT INTO events_tri (rowid, body) SELECT ?1 + key + 1, ' ' || value || ' ' FROM json_each(?2)"
_SPARSE = "INSERT INTO {table} (rowid, body) SELECT ?1 + (value->>0) + 1, value->>1 FROM json_each(?2)"
_VOCAB = (
    "INSERT INTO vocab (ws, term, len, rterm) SELECT value->>0, value->>1, value->>2, value->>3"
    " FROM json_each(?) WHERE true ON CONFLICT DO NOTHING"
)
_VOCAB_TRI = "INSERT INTO vocab_tri (rowid, body) SELECT tid, ' ' || term || ' ' FROM vocab WHERE tid > ?"
_SESSIONS = (
    "INSERT INTO sessions (session_id, workspace_id, doc)"
    " SELECT value->>0, value->>1, CAST(value->>2 AS BLOB) FROM json_each(?) WHERE true"
    " ON CONFLICT (session_id) DO UPDATE SET workspace_id = excluded.workspace_id, doc = excluded.doc"
)
_POSITION = (
    "INSERT INTO indexer_positions (name, offset) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET offset = excluded.offset"
)


@dataclass
class Job:
    """One batch's writes, ready for the writer: one JSON text per table."""

    through: int
    created: int
    events: str
    words: str
    idents: str
    cjk: str
    vocab: str
    sessions: str
    updates: list[Action] = field(default_factory=list)


class _Builder:
    """The Python side: read, decode, project, and build one batch's JSON texts."""

    def __init__(self, read: sqlite3.Connection, known: dict[str, set[str]], parts: Parts) -> None:
        self.read = read
        self.parts = parts
        self.processor = BatchProcessor(SQLiteView(conn=read), IndexerMetrics())
        self.known = known
        self.after = stored_position(read, _NAME)

    def next_job(self) -> Job | None:
        tick = self.parts.tick
        tick(None)
        rows = self.read.execute(
            "SELECT offset, key, value, time_ms FROM log WHERE offset > ? ORDER BY offset LIMIT ?",
            (self.after, _BATCH),
        ).fetchall()
        tick("py: read log rows")
        if not rows:
            return None
        entries = [
            decode_entry(RawRecord(LOG_TOPIC, 0, int(o), bytes(k), bytes(v), int(t))) for o, k, v, t in rows
        ]
        if not all(isinstance(e, Entry) for e in entries):
            raise SystemExit("an invalid log row: the prototype handles the load row's case only")
        tick("py: decode + validate")
        prepared = self.processor.prepare(entries)
        tick("py: projection (prepare)")
        if prepared.result.letters or prepared.result.conflicts:
            raise SystemExit("dead letters or conflicts: the prototype handles the load row's case only")
        self.after = int(rows[-1][0])
        job = self._job(prepared.actions)
        tick("py: rows, vocabulary, JSON")
        return job

    def _job(self, actions: list[Action]) -> Job:
        events: list[list[object]] = []
        words: list[str] = []
        idents: list[tuple[int, str]] = []
        cjk: list[tuple[int, str]] = []
        sessions: list[tuple[str, str | None, str]] = []
        updates: list[Action] = []
        by_ws: dict[str, set[str]] = {}
        for action in actions:
            if action.target == "events" and action.op == "create":
                row = event_row(action)
                k = len(events)
                events.append([*row[:12], row[12].decode()])
                text = text_rows(str(row[11]))
                words.append(text.words)
                if text.idents:
                    idents.append((k, text.idents))
                if text.cjk:
                    cjk.append((k, text.cjk))
                by_ws.setdefault(str(row[1]), set()).update(text.tokens)
            elif action.target == "events" and action.op == "update":
                updates.append(action)
            elif action.target == "sessions":
                body = action.body
                sessions.append((action.doc_id, body.get("workspace_id"), orjson.dumps(body).decode()))
            else:
                raise SystemExit(f"{action.op} on {action.target}: not in the load row's case")
        new: list[tuple[str, str, int, str]] = []
        for ws, terms in by_ws.items():
            known = self.known.setdefault(ws, set())
            fresh = {term for term in terms - known if len(term) <= MAX_TERM_CHARS}
            known |= fresh
            new.extend((ws, term, len(term), term[::-1]) for term in fresh)
        dumps = orjson.dumps
        return Job(
            through=self.after,
            created=len(events),
            events=dumps(events).decode(),
            words=dumps(words).decode(),
            idents=dumps(idents).decode(),
            cjk=dumps(cjk).decode(),
            vocab=dumps(new).decode(),
            sessions=dumps(sessions).decode(),
            updates=updates,
        )


class Parts:
    """Thread CPU per part, by the calling thread (each thread ticks its own parts)."""

    def __init__(self, spent: dict[str, float]) -> None:
        self.spent = spent
        self._last: dict[int, float] = {}

    def tick(self, part: str | None) -> None:
        """Charge the calling thread's CPU since its last tick to ``part`` (None: just start)."""
        now, me = time.thread_time(), threading.get_ident()
        if part is not None:
            self.spent[part] = self.spent.get(part, 0.0) + now - self._last.get(me, now)
        self._last[me] = now


def build_jobs(read: sqlite3.Connection, parts: Parts) -> Iterator[Job]:
    """Every batch of the log after the stored position, as jobs (the Python side)."""
    builder = _Builder(read, {}, parts)
    while (job := builder.next_job()) is not None:
        yield job


def write_job(conn: sqlite3.Connection, view: SQLiteView, job: Job, parts: Parts) -> None:
    """One batch in one transaction: a statement per table, the position last."""
    tick = parts.tick
    tick(None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        mark = int(conn.execute("SELECT coalesce(max(rid), 0) FROM events").fetchone()[0])
        inserted = conn.execute(_EVENTS, (job.events,)).rowcount
        if inserted != job.created:
            raise SystemExit(f"{job.created - inserted} events existed: not the load row's case")
        tick("sql: events")
        # Under the write lock new rows take the next rowids in order: mark + 1 + position.
        conn.execute(_WORDS, (mark, job.words))
        conn.execute(_TRI, (mark, job.words))
        conn.execute(_SPARSE.format(table="events_ident"), (mark, job.idents))
        conn.execute(_SPARSE.format(table="events_cjk"), (mark, job.cjk))
        tick("sql: events_words/tri/ident/cjk")
        for action in job.updates:
            result = view.update_event(action)
            if result.reason:
                raise SystemExit(f"update failed: {result.reason}")
        tick("sql: updates")
        tid = int(conn.execute("SELECT coalesce(max(tid), 0) FROM vocab").fetchone()[0])
        conn.execute(_VOCAB, (job.vocab,))
        tick("sql: vocab")
        conn.execute(_VOCAB_TRI, (tid,))
        tick("sql: vocab_tri")
        conn.execute(_SESSIONS, (job.sessions,))
        conn.execute(_POSITION, (_NAME, job.through))
        tick("sql: sessions + position")
        conn.execute("COMMIT")
        tick("sql: commit")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def open_writer(path: Path) -> sqlite3.Connection:
    """The writer's connection, set up as the product's indexer sets up its own."""
    conn = open_embedded(path)
    conn.execute(f"PRAGMA cache_size = -{INDEXER_CACHE_KIB}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {INDEXER_CHECKPOINT_PAGES}")
    return conn


def _project(path: Path, overlap: bool) -> dict[str, float]:
    """Project the whole log of ``path``: thread CPU of the Python side, of the writes and of
    each part; with ``overlap``, how long each thread waited for the other (wall)."""
    write_conn = open_writer(path)
    read = connect(path, create=False)
    view = SQLiteView(conn=write_conn)
    spent: dict[str, float] = {"python_cpu_s": 0.0, "write_cpu_s": 0.0, "batches": 0.0, "entries": 0.0}
    parts = Parts(spent)
    jobs = build_jobs(read, parts)

    def produce() -> Job | None:
        started = time.thread_time()
        job = next(jobs, None)
        spent["python_cpu_s"] += time.thread_time() - started
        return job

    def write(job: Job) -> None:
        started = time.thread_time()
        write_job(write_conn, view, job, parts)
        spent["write_cpu_s"] += time.thread_time() - started
        spent["batches"] += 1
        spent["entries"] += job.created

    started = time.perf_counter()
    with gc_headroom():
        if not overlap:
            while (job := produce()) is not None:
                write(job)
        else:
            _overlapped(produce, write, spent)
    spent["projection loop: wall s"] = time.perf_counter() - started
    wal = Path(f"{path}-wal")
    spent["wal_mib_at_end"] = wal.stat().st_size / 2**20 if wal.exists() else 0.0
    read.close()
    write_conn.close()
    return spent


def _overlapped(
    produce: Callable[[], Job | None], write: Callable[[Job], None], spent: dict[str, float]
) -> None:
    """Batch N written on a writer thread while the calling thread produces batch N+1."""
    todo: queue.Queue[Job | None] = queue.Queue(maxsize=1)
    failed: list[BaseException] = []
    spent["main waits for the writer (wall s)"] = spent["writer waits for a batch (wall s)"] = 0.0

    def writer() -> None:
        try:
            while True:
                started = time.perf_counter()
                job = todo.get()
                spent["writer waits for a batch (wall s)"] += time.perf_counter() - started
                if job is None:
                    return
                if not failed:
                    write(job)
        except BaseException as err:
            failed.append(err)
            while todo.get() is not None:  # drain so the producer never blocks
                pass

    thread = threading.Thread(target=writer, name="proto-writer")
    thread.start()
    try:
        while not failed and (job := produce()) is not None:
            started = time.perf_counter()
            todo.put(job)
            spent["main waits for the writer (wall s)"] += time.perf_counter() - started
    finally:
        todo.put(None)
        thread.join()
    if failed:
        raise failed[0]


def _child(mode: str, path: Path) -> int:
    if mode == "overlap-process":
        from tests.benchmarks.proto_overlap_process import project_in_two_processes

        print(orjson.dumps(project_in_two_processes(path)).decode())
        return 0
    if mode.endswith("ms"):  # overlap-1ms: Python's switch interval (default 5 ms) set first
        sys.setswitchinterval(float(mode.split("-")[-1][:-2]) / 1000)
    spent = _project(path, overlap=mode.startswith("overlap"))
    print(orjson.dumps(spent).decode())
    return 0


def _run(mode: str, path: Path) -> dict[str, float]:
    """One mode on ``path`` in its own process under ``nice -n 19``: wall, CPU, load, thread CPU."""
    env = dict(os.environ, SESSIONLOG_BACKEND="embedded", SESSIONLOG_SQLITE_PATH=str(path))
    if mode == "today":
        sessionlog = Path(sys.executable).with_name("sessionlog")
        command = [str(sessionlog), "index", "--until-idle"]
    else:
        command = [sys.executable, "-m", "tests.benchmarks.proto_overlap", "--child", mode, str(path)]
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(["nice", "-n", "19", *command], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    out: dict[str, float] = {
        "wall_s": wall,
        "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    if mode != "today":
        out.update(orjson.loads(done.stdout.strip().splitlines()[-1]))
    return out


def _report(mode: str, round_: int, got: dict[str, float]) -> None:
    line = (
        f"round {round_} {mode:8} wall {got['wall_s']:6.1f} s  CPU {got['cpu_s']:6.1f} s  "
        f"load {got['load_before']:.2f} -> {got['load_after']:.2f}"
    )
    if "python_cpu_s" in got:
        line += (
            f"  | Python side {got['python_cpu_s']:.1f} s, writes {got['write_cpu_s']:.1f} s (thread CPU),"
            f" {int(got['entries'])} events in {int(got['batches'])} batches,"
            f" WAL {got['wal_mib_at_end']:.0f} MiB at the end"
        )
    for key in sorted(k for k in got if ":" in k or "waits" in k):
        line += f"\n      {got[key]:6.2f} s  {key}"
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("appended", type=Path, nargs="?")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--modes", default=",".join(_MODES))
    parser.add_argument("--no-check", action="store_true", help="skip comparing the projections")
    parser.add_argument("--check", default="", help="compare only these modes' files (default: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where the copies go (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    if args.appended is None:
        parser.error("APPENDED.db is required")
    if args.child:
        return _child(args.child, args.appended)
    modes = [m for m in args.modes.split(",") if m]
    from tests.benchmarks.proto_overlap_check import compare

    with tempfile.TemporaryDirectory(prefix="sessionlog-overlap-", dir=args.workdir) as tmp:
        for round_ in range(1, args.rounds + 1):
            shift = (round_ - 1) % len(modes)
            kept: dict[str, Path] = {}
            for mode in modes[shift:] + modes[:shift]:
                copy = Path(tmp) / f"{mode}-{round_}.db"
                shutil.copyfile(args.appended, copy)
                _report(mode, round_, _run(mode, copy))
                kept[mode] = copy
            if round_ == 1 and not args.no_check and "today" in kept:
                for mode, path in kept.items():
                    if mode != "today" and (not args.check or mode in args.check.split(",")):
                        print(f"projection of {mode} vs today: {compare(kept['today'], path)}", flush=True)
            for path in kept.values():
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
