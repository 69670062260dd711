"""A fake sqlite3 driver raises every error kind in every method of the SQLite log (and of the
open/identify helper and export); only ingest's typed errors come out, with the right ``retriable``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backscroll.ingest import (
    IngestError,
    LogCorrupt,
    LogFull,
    LogInaccessible,
    LogUnavailable,
    NotABackscrollFile,
    SQLiteEntryLog,
)
from backscroll.ingest.export import LogExport
from backscroll.ingest.sqlite import file as sqlite_file
from backscroll.ingest.sqlite.export import export_sqlite
from backscroll.ingest.sqlite.file import translate_sqlite_error


def _error(cls: type[sqlite3.Error], message: str, name: str | None) -> sqlite3.Error:
    err = cls(message)
    if name is not None:
        err.sqlite_errorname = name
    return err


#: Every kind of sqlite3 error and the typed error it must become.
KINDS: list[tuple[sqlite3.Error, type[IngestError]]] = [
    (_error(sqlite3.OperationalError, "database is locked", "SQLITE_BUSY"), LogUnavailable),
    (_error(sqlite3.OperationalError, "database table is locked", "SQLITE_LOCKED"), LogUnavailable),
    (_error(sqlite3.OperationalError, "disk I/O error", "SQLITE_IOERR_WRITE"), LogUnavailable),
    (_error(sqlite3.OperationalError, "database or disk is full", "SQLITE_FULL"), LogFull),
    (
        _error(sqlite3.OperationalError, "attempt to write a readonly database", "SQLITE_READONLY"),
        LogInaccessible,
    ),
    (_error(sqlite3.OperationalError, "unable to open database file", "SQLITE_CANTOPEN"), LogInaccessible),
    (_error(sqlite3.DatabaseError, "database disk image is malformed", "SQLITE_CORRUPT"), LogCorrupt),
    (_error(sqlite3.DatabaseError, "file is not a database", "SQLITE_NOTADB"), NotABackscrollFile),
    (_error(sqlite3.IntegrityError, "UNIQUE constraint failed", "SQLITE_CONSTRAINT_UNIQUE"), LogInaccessible),
    (_error(sqlite3.InterfaceError, "bad parameter", None), LogUnavailable),
    (_error(sqlite3.ProgrammingError, "cannot operate on a closed database", None), LogInaccessible),
    (_error(sqlite3.OperationalError, "database is locked", None), LogUnavailable),
    (sqlite3.Error("something else"), LogInaccessible),
]
IDS = [f"{type(err).__name__}-{getattr(err, 'sqlite_errorname', None) or 'nocode'}" for err, _ in KINDS]


def test_the_mapping_and_retriable() -> None:
    for err, typed in KINDS:
        got = translate_sqlite_error(err, "reading x")
        assert type(got) is typed, err
        assert got.retriable == issubclass(typed, LogUnavailable)
        assert "reading x" in str(got)


class FaultyConnection:
    """A real connection whose ``execute`` raises ``error`` once ``armed`` (and ``close`` too when
    ``close_fails``)."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real
        self.error: sqlite3.Error | None = None
        self.close_fails = False

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self.error is not None and not sql.startswith("ROLLBACK"):
            raise self.error
        return self.real.execute(sql, params)

    def close(self) -> None:
        if self.close_fails and self.error is not None:
            raise self.error
        self.real.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture
def faulty(monkeypatch: pytest.MonkeyPatch) -> list[FaultyConnection]:
    """Every connection ingest opens, wrapped (the newest last)."""
    opened: list[FaultyConnection] = []
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> FaultyConnection:
        conn = FaultyConnection(real_connect(*args, **kwargs))
        opened.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return opened


EVENT = {
    "v": 1,
    "kind": "event",
    "workspace_id": "ws",
    "session_id": "s",
    "seq": 0,
    "type": "user/message",
    "surface": {"op": "append"},
    "time": "2026-11-02T10:00:00Z",
    "text": "hello",
}

METHODS: dict[str, Callable[[SQLiteEntryLog], object]] = {
    "append": lambda log: log.append({**EVENT, "seq": 5}),
    "append_many": lambda log: log.append_many([{**EVENT, "seq": 5}, {**EVENT, "seq": 6}]),
    "append_header": lambda log: log.append_header(
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws",
            "session_id": "s",
            "created_at": "2026-11-02T09:00:00Z",
        }
    ),
    "append_raw": lambda log: log.append_raw(b"s", b"x"),
    "session": lambda log: log.session("ws", "s2"),
    "end_offset": lambda log: log.end_offset(),
    "read": lambda log: log.read(0),
}


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_raises_the_typed_error(
    faulty: list[FaultyConnection],
    tmp_path: Path,
    method: str,
    error: sqlite3.Error,
    typed: type[IngestError],
) -> None:
    with SQLiteEntryLog(tmp_path / "log.db") as log:
        log.append(EVENT)  # opened and working
        faulty[-1].error = error
        with pytest.raises(typed) as raised:
            METHODS[method](log)
        assert raised.value.retriable == issubclass(typed, LogUnavailable)
        assert raised.value.__cause__ is error
        faulty[-1].error = None
        assert [r.offset for r in log.read(0)] == [1], "nothing half-written"


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
def test_opening_raises_the_typed_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: sqlite3.Error, typed: type[IngestError]
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        raise error

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with SQLiteEntryLog(tmp_path / "log.db") as log, pytest.raises(typed):
        log.append(EVENT)
    (tmp_path / "there.db").touch()
    for create in (True, False):
        with pytest.raises(typed):
            sqlite_file.connect(tmp_path / "there.db", create=create)


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
def test_identifying_raises_the_typed_error(
    faulty: list[FaultyConnection],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    error: sqlite3.Error,
    typed: type[IngestError],
) -> None:
    real_identify = sqlite_file.identify

    def failing(conn: Any, path: Path) -> Any:
        conn.error = error
        try:
            return real_identify(conn, path)
        finally:
            conn.error = None

    monkeypatch.setattr(sqlite_file, "identify", failing)
    with pytest.raises(typed):
        sqlite_file.connect(tmp_path / "new.db")


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
def test_export_raises_the_typed_error(
    faulty: list[FaultyConnection],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    error: sqlite3.Error,
    typed: type[IngestError],
) -> None:
    path = tmp_path / "log.db"
    with SQLiteEntryLog(path) as log:
        log.append(EVENT)
    real_identify = sqlite_file.identify

    def arm(conn: Any, where: Path) -> Any:  # the export's connection fails right after the open
        result = real_identify(conn, where)
        conn.error = error
        return result

    monkeypatch.setattr(sqlite_file, "identify", arm)
    with pytest.raises(typed):
        list(export_sqlite(path, LogExport(session_id="s")))


@pytest.mark.parametrize(("error", "typed"), KINDS, ids=IDS)
def test_close_raises_the_typed_error(
    faulty: list[FaultyConnection], tmp_path: Path, error: sqlite3.Error, typed: type[IngestError]
) -> None:
    log = SQLiteEntryLog(tmp_path / "log.db")
    log.append(EVENT)
    faulty[-1].error, faulty[-1].close_fails = error, True
    with pytest.raises(typed):
        log.close()
    assert log.closed
