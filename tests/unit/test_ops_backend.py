"""Operator commands follow the selected backend: on the embedded backend `index`, `dlq list|replay`,
`rebuild` and `forget` work on the SQLite file and never contact the Kafka or OpenSearch addresses
that happen to be configured; a file the indexer cannot use fails with one line, at once."""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from backscroll.cli.main import app
from backscroll.cli.workload import demo_records
from backscroll.ingest.sqlite.log import SQLiteEntryLog


class Listener:
    """A listening socket that counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    yield made
    made.close()


@pytest.fixture
def embedded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listener: Listener) -> Path:
    """The embedded backend selected, with bogus server addresses pointing at ``listener``."""
    path = tmp_path / "ops.db"
    for name in list(__import__("os").environ):
        if name.startswith("BACKSCROLL_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .env from the checkout
    monkeypatch.setenv("BACKSCROLL_BACKEND", "embedded")
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(path))
    monkeypatch.setenv("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", f"127.0.0.1:{listener.port}")
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_URL", f"http://127.0.0.1:{listener.port}")
    monkeypatch.setenv("BACKSCROLL_INDEXER_IDLE_TIMEOUT_S", "20")
    return path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_operator_commands_use_the_file_and_never_the_configured_servers(
    embedded: Path, listener: Listener
) -> None:
    records = list(demo_records(workspaces=1, sessions=2))
    with SQLiteEntryLog(embedded) as log:
        for record in records:
            log.append(record)
        log.append_raw(b"other", orjson.dumps(records[1]))  # wrong key: dead-lettered
    code, out = _invoke("index", "--until-idle")
    assert code == 0 and "dead-lettered 1" in out, out
    code, out = _invoke("dlq", "list", "--json")
    assert code == 0 and orjson.loads(out.splitlines()[0])["field"] == "key", out
    code, out = _invoke("dlq", "replay")
    assert code == 0 and "re-sent 1" in out, out
    code, out = _invoke("dlq", "replay")
    assert code == 0 and "re-sent 0" in out, out
    session = records[0]["session_id"]
    code, out = _invoke("forget", session)
    assert code == 0 and f"of {session}" in out and "deleted 0 " not in out, out
    code, out = _invoke("rebuild")
    assert code == 0 and "rebuilt" in out, out
    code, out = _invoke("rebuild", "--keep")
    assert code == 2 and "embedded backend has no index versions" in out, out
    events = sum(1 for r in records if r["kind"] == "event")
    with sqlite3.connect(embedded) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == events
    assert listener.accepted == 0


def _append_demo(path: Path) -> list[dict[str, Any]]:
    """Two demo sessions appended to the file; the records."""
    records = list(demo_records(workspaces=1, sessions=2))
    with SQLiteEntryLog(path) as log:
        for record in records:
            log.append(record)
    return records


def _analyzed(path: Path) -> bool:
    """Whether ``ANALYZE`` (run by the compaction with its merges) has statistics of the events."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'events'").fetchone()[0]) > 0


def test_index_compact_merges_the_full_text_tables_after_the_catch_up(embedded: Path) -> None:
    _append_demo(embedded)
    code, out = _invoke("index", "--compact")
    assert code != 0 and "--compact needs --until-idle" in out, out
    code, out = _invoke("index", "--until-idle", "--compact")
    assert code == 0 and "compacted the view in" in out, out
    assert _analyzed(embedded)


def test_rebuild_compacts_the_projection(embedded: Path) -> None:
    _append_demo(embedded)
    code, out = _invoke("rebuild")
    assert code == 0 and "rebuilt" in out, out
    assert _analyzed(embedded)


def test_a_rebuild_whose_compaction_fails_still_completes_and_says_why(
    embedded: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from backscroll.indexer.errors import ViewFailed
    from backscroll.indexer.sqlite.operations import rebuild_embedded
    from backscroll.indexer.sqlite.view import SQLiteView

    records = _append_demo(embedded)

    def refuse(self: SQLiteView) -> None:
        raise ViewFailed("no permission to merge")

    monkeypatch.setattr(SQLiteView, "compact", refuse)
    report = rebuild_embedded(embedded)
    assert report.stats.indexed == sum(1 for r in records if r["kind"] == "event")
    assert "not compacted" in caplog.text and "no permission to merge" in caplog.text


def test_commands_on_a_missing_file_say_so_in_one_line(embedded: Path, listener: Listener) -> None:
    for args in (["dlq", "list"], ["dlq", "replay"], ["forget", "s-1"], ["rebuild"]):
        code, out = _invoke(*args)
        assert code == 1 and "does not exist" in out and len(out.strip().splitlines()) == 1, (args, out)
    assert not embedded.exists() and listener.accepted == 0


def test_index_on_a_file_with_a_foreign_schema_fails_at_once_with_one_line(embedded: Path) -> None:
    with sqlite3.connect(embedded) as conn:
        conn.execute("CREATE TABLE log (id INTEGER PRIMARY KEY, line TEXT)")
    code, out = _invoke("index", "--until-idle")
    assert code == 1 and len(out.strip().splitlines()) == 1, out
    assert "another application's SQLite database" in out or "no such column" in out, out


def test_index_on_a_file_that_is_not_a_database_fails_at_once_with_one_line(embedded: Path) -> None:
    embedded.write_bytes(b"this is not a database, just text " * 200)
    code, out = _invoke("index", "--until-idle")
    assert code == 1 and "not a database" in out and len(out.strip().splitlines()) == 1, out


def test_a_read_only_file_stops_the_runner_with_a_non_retriable_error(embedded: Path) -> None:
    """Root ignores file modes, so the file is opened read-only the way SQLite reports it."""
    from backscroll.indexer.errors import IndexerError
    from backscroll.indexer.runner import Runner
    from backscroll.indexer.sqlite.deadletters import SQLiteDeadLetters
    from backscroll.indexer.sqlite.source import SQLiteSource
    from backscroll.indexer.sqlite.view import SQLiteView

    with SQLiteEntryLog(embedded) as log:
        log.append(next(iter(demo_records(workspaces=1, sessions=1))))
    from backscroll.indexer.sqlite.runner import open_embedded

    open_embedded(embedded).close()  # every table exists; only writing is refused
    conn = sqlite3.connect(f"file:{embedded}?mode=ro", uri=True, isolation_level=None)
    runner = Runner(SQLiteSource(conn), SQLiteView(conn=conn), SQLiteDeadLetters(conn), idle_timeout_s=20)
    with pytest.raises(IndexerError) as raised:
        runner.run(until_idle=True)
    runner.close()
    assert not raised.value.retriable and "readonly" in str(raised.value)
