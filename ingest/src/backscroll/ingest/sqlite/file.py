"""The one place that opens the embedded SQLite file, identifies it, and translates sqlite3 errors.

A backscroll file carries ``PRAGMA application_id`` = :data:`APPLICATION_ID` and ``PRAGMA
user_version`` = the schema version (:data:`SCHEMA_VERSION`) in its header. :func:`connect` checks
them *before* writing anything: another application's database (or a file that is not SQLite at
all, or one written by a newer backscroll) is refused with :class:`NotABackscrollFile` and left
exactly as it was: no table added, journal mode not switched. A new or empty file is claimed
(identity written) in the same write transaction that checks it is still empty. A file made by a
backscroll version from before the identity existed (a ``log`` table of the expected shape, no
application id) is recognised and stamped.

``connect(path, create=False)`` is the read-only open (search, sessions, read, trace, export): it
never creates the file or its folders and never writes the header; a missing (or empty) file is
:class:`LogNotFound`. The log, the indexer's view and the query side's readers all open through
here, and every sqlite3 error that leaves it is one of ingest's typed errors
(:func:`translate_sqlite_error`).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import suppress
from pathlib import Path
from typing import Final, Literal

from backscroll.ingest.errors import (
    IngestError,
    LogCorrupt,
    LogFull,
    LogInaccessible,
    LogNotFound,
    LogUnavailable,
    NotABackscrollFile,
)

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_BUSY_TIMEOUT_S",
    "SCHEMA_VERSION",
    "Synchronous",
    "connect",
    "identify",
    "rollback",
    "translate_sqlite_error",
]

#: ``"SLOG"`` in ASCII: the header field SQLite reserves for the application that owns a file.
APPLICATION_ID: Final = 0x534C4F47
#: The layout of the tables backscroll keeps in the file; a newer file is refused, not downgraded.
#: 2: the projection's events are unique by ``(session_id, seq)``, without a ``doc_id`` column (the
#: indexer upgrades a file of version 1 in place and stamps it; the log is the same in both).
SCHEMA_VERSION: Final = 2
DEFAULT_BUSY_TIMEOUT_S: Final = 30.0
#: The columns of the log table every backscroll version has written (recognises older files).
_LEGACY_LOG_COLUMNS: Final = ("offset", "session_id", "key", "value", "time_ms")

Synchronous = Literal["NORMAL", "FULL"]

_RETRIABLE_CODES: Final = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_PROTOCOL"})
_FULL_CODES: Final = frozenset({"SQLITE_FULL"})
_ACCESS_CODES: Final = frozenset({"SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH"})
_CORRUPT_CODES: Final = frozenset({"SQLITE_CORRUPT"})
_NOT_A_DB_CODES: Final = frozenset({"SQLITE_NOTADB"})


def _code(err: sqlite3.Error) -> str:
    """The primary result code's name (``SQLITE_IOERR`` for ``SQLITE_IOERR_WRITE``)."""
    name = getattr(err, "sqlite_errorname", None) or ""
    primary = "_".join(name.split("_")[:2]) if name.startswith("SQLITE_") else ""
    if primary:
        return primary
    text = str(err).lower()  # errors raised by the sqlite3 module itself carry no code
    if "locked" in text or "busy" in text:
        return "SQLITE_BUSY"
    if "not a database" in text:
        return "SQLITE_NOTADB"
    if "malformed" in text or "corrupt" in text:
        return "SQLITE_CORRUPT"
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return "SQLITE_CANTOPEN"
    if "disk is full" in text or "database or disk is full" in text:
        return "SQLITE_FULL"
    if "disk i/o" in text:
        return "SQLITE_IOERR"
    return "SQLITE_ERROR"


def translate_sqlite_error(err: sqlite3.Error, what: str) -> IngestError:
    """``err`` as ingest's typed error; ``what`` says what was being done (with the path)."""
    code = _code(err)
    message = f"{what}: {err}"
    if code in _FULL_CODES:
        return LogFull(message)
    if code in _RETRIABLE_CODES or isinstance(err, sqlite3.InterfaceError):
        return LogUnavailable(message)
    if code in _ACCESS_CODES:
        return LogInaccessible(message)
    if code in _CORRUPT_CODES:
        return LogCorrupt(message)
    if code in _NOT_A_DB_CODES:
        return NotABackscrollFile(f"{what}: not an SQLite database ({err})")
    return LogInaccessible(message)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already done so (a failed COMMIT, a full
    disk); never masks the error being handled."""
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _quote(path: Path) -> str:
    # A file: URI: '?' and '#' would end the path part, '%' starts an escape.
    return str(path.resolve()).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _objects(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return [(str(t), str(n)) for t, n in conn.execute("SELECT type, name FROM sqlite_master")]


def _is_legacy(conn: sqlite3.Connection, objects: list[tuple[str, str]]) -> bool:
    if ("table", "log") not in objects:
        return False
    columns = tuple(str(row[1]) for row in conn.execute("PRAGMA table_info(log)"))
    return columns == _LEGACY_LOG_COLUMNS


def identify(conn: sqlite3.Connection, path: Path) -> Literal["ours", "empty", "legacy"]:
    """Whether the open file is backscroll's (``ours``), empty (may be claimed) or made by a
    backscroll from before the identity (``legacy``); raises :class:`NotABackscrollFile` otherwise.
    Reads only."""
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise NotABackscrollFile(
                f"{path} was written by a newer backscroll (schema {version}, this one knows "
                f"{SCHEMA_VERSION}); upgrade backscroll to use it"
            )
        return "ours"
    if app_id != 0:
        raise NotABackscrollFile(
            f"{path} belongs to another application (SQLite application_id {app_id:#010x}); "
            "it was left untouched; point BACKSCROLL_SQLITE_PATH at a file of its own"
        )
    objects = _objects(conn)
    if not objects:
        return "empty"
    if version == 0 and _is_legacy(conn, objects):
        return "legacy"
    names = ", ".join(sorted(n for _, n in objects)[:5])
    raise NotABackscrollFile(
        f"{path} is another application's SQLite database (it holds {names}); it was left "
        "untouched; point BACKSCROLL_SQLITE_PATH at a file of its own"
    )


def _claim(conn: sqlite3.Connection, path: Path) -> None:
    """Write the identity into an empty or legacy file, re-checking under the write lock (another
    process may be claiming it, or filling it with its own tables, at the same moment)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if identify(conn, path) != "ours":
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def connect(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    synchronous: Synchronous = "NORMAL",
) -> sqlite3.Connection:
    """Open backscroll's SQLite file with explicit transactions (``isolation_level=None``).

    ``create=True`` (writers: the log, the indexer) creates the file and its folder when missing,
    claims an empty file, and switches it to WAL. ``create=False`` (readers) never creates or
    writes anything: a missing or empty file is :class:`LogNotFound`.
    Either way another application's file is refused (:class:`NotABackscrollFile`) before anything
    is written to it. ``synchronous=NORMAL`` survives a process crash at any point; ``FULL`` also
    survives power loss (an fsync per commit). Raises only :class:`~backscroll.ingest.errors.IngestError`.
    """
    target = Path(path).expanduser()
    if not create and not target.exists():
        raise LogNotFound(f"no backscroll database at {target}; has anything been appended to it?")
    try:
        if create:
            target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LogInaccessible(f"cannot create the folder of {target}: {err}") from err
    uri = f"file:{_quote(target)}?mode={'rwc' if create else 'rw'}"
    try:
        conn = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
        )
    except sqlite3.Error as err:
        raise translate_sqlite_error(err, f"cannot open {target}") from err
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        kind = identify(conn, target)
        if not create:
            if kind == "empty":
                raise LogNotFound(f"{target} is empty: nothing has been appended to it yet")
        else:
            if kind != "ours":
                _claim(conn, target)
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise LogInaccessible(f"cannot switch {target} to WAL mode (journal_mode is {mode})")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = OFF")
    except sqlite3.Error as err:
        conn.close()
        raise translate_sqlite_error(err, f"cannot open {target}") from err
    except BaseException:
        conn.close()
        raise
    return conn
