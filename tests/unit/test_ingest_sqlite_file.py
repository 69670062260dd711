"""The embedded file is identified as backscroll's before anything is written to it, and read-only
opens never create it; every sqlite3 error leaves ingest as a typed error."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from backscroll.ingest import LogNotFound, NotABackscrollFile, SQLiteEntryLog
from backscroll.ingest.sqlite.file import APPLICATION_ID, SCHEMA_VERSION, connect

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


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign(path: Path, *, app_id: int = 0, wal: bool = False) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
    conn.execute("INSERT INTO invoices (amount) VALUES (12.5)")
    if app_id:
        conn.execute(f"PRAGMA application_id = {app_id}")
    conn.commit()
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.close()


def _header(path: Path) -> tuple[int, int, str]:
    conn = sqlite3.connect(path)
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        return int(app_id), int(version), str(mode)
    finally:
        conn.close()


def test_a_new_file_is_created_identified_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "backscroll.db"
    with SQLiteEntryLog(path) as log:
        log.append(EVENT)
    assert _header(path) == (APPLICATION_ID, SCHEMA_VERSION, "wal")


@pytest.mark.parametrize("app_id", [0, 0x12345678])
def test_another_applications_database_is_refused_and_left_untouched(tmp_path: Path, app_id: int) -> None:
    path = tmp_path / "theirs.db"
    _foreign(path, app_id=app_id)
    before = _digest(path)
    with SQLiteEntryLog(path) as log, pytest.raises(NotABackscrollFile) as err:
        log.append(EVENT)
    assert "another application" in str(err.value) and str(path) in str(err.value)
    assert not err.value.retriable
    for create in (True, False):
        with pytest.raises(NotABackscrollFile):
            connect(path, create=create)
    assert _digest(path) == before, "not one byte written"
    assert _header(path) == (app_id, 0, "delete"), "journal mode not switched"
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]
    conn.close()


def test_a_foreign_wal_database_keeps_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "theirs.db"
    _foreign(path, wal=True)
    with pytest.raises(NotABackscrollFile):
        connect(path)
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]
    conn.close()


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = _digest(path)
    for create in (True, False):
        with pytest.raises(NotABackscrollFile) as err:
            connect(path, create=create)
        assert "not an SQLite database" in str(err.value)
    assert _digest(path) == before


def test_a_file_of_a_newer_backscroll_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(NotABackscrollFile, match="newer backscroll"):
        connect(path)


def test_an_empty_file_is_claimed_by_a_writer_but_not_by_a_reader(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(LogNotFound, match="empty"):
        connect(path, create=False)
    assert path.stat().st_size == 0
    connect(path).close()
    assert _header(path)[:2] == (APPLICATION_ID, SCHEMA_VERSION)
    connect(path, create=False).close()


def test_a_file_from_before_the_identity_is_recognised_and_stamped(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE log (offset INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT, key BLOB, "
        "value BLOB, time_ms INTEGER NOT NULL)"
    )
    conn.commit()
    conn.close()
    connect(path, create=False).close()  # a reader accepts it and writes nothing
    assert _header(path)[0] == 0
    with SQLiteEntryLog(path) as log:
        log.append(EVENT)
    assert _header(path)[:2] == (APPLICATION_ID, SCHEMA_VERSION)


def test_read_only_opens_never_create_the_file_or_its_folders(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "sesionlog.db"
    with pytest.raises(LogNotFound) as err:
        connect(path, create=False)
    assert str(path) in str(err.value) and not err.value.retriable
    assert not path.parent.exists()


def test_the_embedded_log_and_the_interface_load_no_kafka_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from backscroll.ingest import EntryLog, Position, SQLiteEntryLog, LogNotFound\n"
        "import backscroll.ingest.export, backscroll.ingest.sqlite.export, backscroll.ingest.sqlite.file\n"
        "assert 'kafka' not in sys.modules, sorted(m for m in sys.modules if m.startswith('kafka'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
