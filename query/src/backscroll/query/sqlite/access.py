"""SQLite access shared by the embedded search engine and the embedded session reader: one
connection per process (never one inherited through ``fork``), read snapshots bounded by the
call's :class:`Deadline`, the bounded catch-up, and the edge where ``sqlite3`` (and ingest's
file) errors become :class:`SessionQueryError`.

Bounded waits: taking the connection's lock, SQLite's busy handler (set to the time left before
every snapshot) and every statement (a progress handler interrupts it) end with the deadline; the
catch-up (e.g. the embedded indexer run until idle, which may wait for another process's write
lock) runs on a thread of its own and is waited for while the read keeps a second (or half of
the time left, if less): when it has not finished by then, the call reads the projection as it is
and the catch-up finishes in the background.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from backscroll.ingest.errors import IngestError
from backscroll.ingest.sqlite.file import connect, rollback
from backscroll.query.config import check_callable, check_path, check_timeout
from backscroll.query.deadline import Deadline
from backscroll.query.errors import ErrorCode, SessionQueryError

__all__ = [
    "CatchUp",
    "Connector",
    "SQLiteFile",
    "default_connector",
    "sqlite_file",
    "typed_sqlite_error",
]

#: Opens the file read-only-ish (never creates it) with a busy timeout in seconds.
Connector = Callable[[Path, float], sqlite3.Connection]
#: Time kept for the read after a catch-up that has not finished (when the budget allows).
_READ_RESERVE_S: Final = 1.0
#: SQLite VM instructions between two deadline checks.
_PROGRESS_STEPS: Final = 2000


def default_connector(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """Open the file for reading: never creates it, refuses another application's file."""
    return connect(path, create=False, busy_timeout_s=busy_timeout_s)


def typed_sqlite_error(err: Exception, code: ErrorCode, path: Path) -> SessionQueryError | None:
    """``err`` (``sqlite3`` or ingest's typed file error) as a typed error; ``None`` otherwise."""
    if isinstance(err, IngestError):
        return SessionQueryError(code, f"cannot use {path}: {err}")
    if not isinstance(err, sqlite3.Error):
        return None
    text = str(err)
    if "no such table" in text:
        return SessionQueryError(code, f"index missing in {path} ({text}); has the indexer run?")
    if "locked" in text or "busy" in text:
        return SessionQueryError(code, f"{path} is locked by another process ({text})")
    if "not a database" in text:
        return SessionQueryError(code, f"{path} is not a backscroll database ({text})")
    return SessionQueryError(code, f"embedded database {path} failed: {type(err).__name__}: {text}")


class CatchUp:
    """Runs a catch-up callable on a thread of its own, one run at a time; callers wait for it
    within their own budget. Closing it closes the callable (if it can) once no run is active."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._outcome: dict[int, BaseException | None] = {}
        self._closed = False

    def run(self, wait_s: float) -> BaseException | None:
        """Start a run unless one is active; wait up to ``wait_s``. Returns the run's error when
        it failed in that time (``None``: it succeeded or is still running)."""
        with self._lock:
            if self._closed:
                return None
            thread = self._thread
            if thread is None or not thread.is_alive():
                thread = threading.Thread(target=self._body, name="backscroll-catch-up", daemon=True)
                self._thread = thread
                thread.start()
        thread.join(max(wait_s, 0.0))
        if thread.is_alive():
            return None
        with self._lock:
            return self._outcome.pop(id(thread), None)

    def _body(self) -> None:
        error: BaseException | None = None
        try:
            self._fn()
        except Exception as err:  # handed to the waiting caller, which types it
            error = err
        with self._lock:
            me = threading.current_thread()
            self._outcome = {id(me): error}
            close = self._closed
        if close:
            self._close_fn()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            busy = self._thread is not None and self._thread.is_alive()
        if not busy:
            self._close_fn()

    def _close_fn(self) -> None:
        closer = getattr(self._fn, "close", None)
        if callable(closer):
            closer()


class SQLiteFile:
    """The embedded database as one backend adapter sees it.

    ``code`` is what a failure raises (``INDEX_FAILED`` for searches, ``PERSISTENCE_FAILED`` for
    reads); ``setup`` prepares a new connection (temporary tables, pragmas); ``catch_up`` runs
    before each snapshot (see the module docstring); ``connector`` opens the file (tests inject
    failing drivers through it).
    """

    def __init__(
        self,
        path: Path,
        code: ErrorCode,
        *,
        busy_timeout_s: float,
        setup: Callable[[sqlite3.Connection], None] | None = None,
        catch_up: Callable[[], object] | None = None,
        connector: Connector = default_connector,
    ) -> None:
        self.path = path
        self.code: ErrorCode = code
        self.busy_timeout_s = busy_timeout_s
        self._setup = setup
        self._connector = connector
        self._catch_up = CatchUp(catch_up) if catch_up is not None else None
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._deadline: Deadline | None = None
        self._closed = False

    @property
    def conn(self) -> sqlite3.Connection | None:
        """The open connection, if any (tests trace its statements)."""
        return self._conn

    def close(self) -> None:
        """Close the connection (and the catch-up). Idempotent."""
        with self._lock:
            first, self._closed = not self._closed, True
            if first and self._conn is not None and self._pid == os.getpid():
                self._conn.close()  # a connection inherited through fork belongs to the parent
            self._conn = None
        if first and self._catch_up is not None:
            self._catch_up.close()

    def catch_up(self, deadline: Deadline) -> None:
        """Run the catch-up, leaving the read itself a second or half of the time left, whichever
        is less (then read what is there)."""
        if self._catch_up is None:
            return
        deadline.check()
        left = deadline.remaining()
        error = self._catch_up.run(max(left / 2, left - _READ_RESERVE_S))
        if error is not None:
            raise SessionQueryError(self.code, f"catching up the embedded index failed: {error}") from None
        deadline.check()

    def _progress(self) -> int:
        deadline = self._deadline
        return 1 if deadline is not None and deadline.stopped() else 0

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid != os.getpid():
            self._conn = None  # never use (nor close) a connection inherited through fork
        if self._conn is None:
            if not self.path.exists():
                raise SessionQueryError(
                    self.code, f"no embedded database at {self.path}; has anything been appended?"
                )
            conn = self._connector(self.path, self.busy_timeout_s)
            try:
                conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
                if self._setup is not None:
                    self._setup(conn)
            except BaseException:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    @contextmanager
    def snapshot(self, deadline: Deadline) -> Iterator[sqlite3.Connection]:
        """One read transaction (a consistent snapshot) under the lock, bounded by ``deadline``;
        only :class:`SessionQueryError` escapes (plus the caller's own exceptions)."""
        if not self._lock.acquire(timeout=max(deadline.remaining(), 0.0)):
            raise deadline.error()
        try:
            if self._closed:
                raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
            deadline.check()
            self._deadline = deadline
            conn: sqlite3.Connection | None = None
            try:
                conn = self._connection()
                conn.execute(f"PRAGMA busy_timeout = {max(1, int(deadline.remaining() * 1000))}")
                conn.execute("BEGIN")
                yield conn
            except (sqlite3.Error, IngestError) as err:
                if deadline.stopped():
                    raise deadline.error() from None
                typed = typed_sqlite_error(err, self.code, self.path)
                assert typed is not None
                raise typed from None
            finally:
                self._deadline = None
                if conn is not None:
                    rollback(conn)
        finally:
            self._lock.release()


def sqlite_file(
    path: object,
    code: ErrorCode,
    options: Mapping[str, Any],
    *,
    setup: Callable[[sqlite3.Connection], None] | None = None,
) -> tuple[SQLiteFile, dict[str, Any]]:
    """The file at ``path`` with the embedded options among ``options``
    (:class:`~backscroll.query.options.SQLiteTarget`; its busy timeout is the options'
    ``request_timeout_s``), and the other options."""
    catch_up = check_callable(options.get("catch_up"), "catch_up")
    connector = options.get("connector") or default_connector
    timeout = check_timeout(options.get("request_timeout_s", 5.0))
    made = SQLiteFile(
        check_path(path), code, busy_timeout_s=timeout, setup=setup, catch_up=catch_up, connector=connector
    )
    return made, {key: value for key, value in options.items() if key not in ("catch_up", "connector")}
