"""Backend selection, and the CLI on the embedded backend: no servers, no Java, seconds."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from backscroll.backends import BackendSettings, EmbeddedBackend, current_backend, default_sqlite_path
from backscroll.cli.main import app
from backscroll.indexer.sqlite.source import SQLiteSource
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from backscroll.query.sqlite.provider import SQLiteProvider

_SERVER_VARS = ("BACKSCROLL_BACKEND", "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "BACKSCROLL_OPENSEARCH_URL")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in (*_SERVER_VARS, "BACKSCROLL_SQLITE_PATH", "BACKSCROLL_SQLITE_INDEX_ON_SEARCH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)  # no stray .env
    return tmp_path


def test_embedded_is_the_default(clean_env: Path) -> None:
    settings = BackendSettings()
    assert settings.selected() == "embedded"
    assert (
        settings.sqlite_path == clean_env / "data" / "backscroll" / "backscroll.db" == default_sqlite_path()
    )
    backend = current_backend()
    assert isinstance(backend, EmbeddedBackend) and backend.name == "embedded" and backend.index_on_search
    assert "SQLite" in backend.describe()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS": "kafka:9092"}, "kafka-opensearch"),
        ({"BACKSCROLL_OPENSEARCH_URL": "http://search:9200"}, "kafka-opensearch"),
        ({"BACKSCROLL_BACKEND": "kafka-opensearch"}, "kafka-opensearch"),
        ({"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_OPENSEARCH_URL": "http://search:9200"}, "embedded"),
    ],
)
def test_configured_servers_or_an_explicit_choice_select_the_backend(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert BackendSettings().selected() == expected
    assert current_backend().name == expected


def test_an_unknown_backend_is_a_settings_error(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_BACKEND", "cassandra")
    with pytest.raises(ValidationError):
        BackendSettings()


def test_the_path_and_catch_up_come_from_the_environment(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(clean_env / "elsewhere.db"))
    monkeypatch.setenv("BACKSCROLL_SQLITE_INDEX_ON_SEARCH", "false")
    backend = current_backend()
    assert isinstance(backend, EmbeddedBackend)
    assert backend.sqlite_path == clean_env / "elsewhere.db" and not backend.index_on_search


def test_the_embedded_factories_build_the_sqlite_pieces(tmp_path: Path) -> None:
    from backscroll.query import Scope

    backend = EmbeddedBackend(tmp_path / "f.db")
    with backend.open_log() as log, backend.open_indexer() as indexer:
        assert isinstance(log, SQLiteEntryLog) and isinstance(indexer.source, SQLiteSource)
        assert isinstance(indexer.view, SQLiteView)
        assert log.live.max_per_session > 0
    with backend.open_log(live=False) as bulk:  # a process that appends and exits keeps no live view
        assert isinstance(bulk, SQLiteEntryLog) and bulk.live.max_per_session == 0
    with backend.open_provider(Scope.workspace("w"), max_limit=20) as provider:
        assert isinstance(provider, SQLiteProvider) and provider.max_limit == 20


def test_demo_runs_embedded(clean_env: Path) -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "embedded (SQLite" in result.output and "indexed 216 events (dead-lettered 0)" in result.output
    assert (
        "revenue forecast" in result.output and "São Paulo" in result.output and "acct_9931" in result.output
    )
    assert (clean_env / "data" / "backscroll" / "demo.db").exists()
    again = CliRunner().invoke(app, ["demo"])  # a second run starts from a fresh file
    assert again.exit_code == 0 and "indexed 216 events" in again.output


def test_append_index_and_search_commands_use_the_embedded_backend(clean_env: Path) -> None:
    lines = [
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-c",
            "session_id": "cli-1",
            "created_at": "2026-11-05T10:00:00Z",
        },
        {
            "v": 1,
            "kind": "event",
            "workspace_id": "ws-c",
            "session_id": "cli-1",
            "seq": 0,
            "type": "user/message",
            "role": "user",
            "surface": {"op": "append"},
            "time": "2026-11-05T10:00:01Z",
            "text": "the Zürich invoice",
        },
        {"v": 1, "kind": "event", "workspace_id": "ws-c", "session_id": "cli-1", "seq": "one"},
    ]
    source = clean_env / "in.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    runner = CliRunner()
    appended = runner.invoke(app, ["append", str(source)])
    assert appended.exit_code == 1 and "appended 2 records, rejected 1" in appended.output
    assert "line 3: seq" in appended.output
    indexed = runner.invoke(app, ["index", "--until-idle"])
    assert indexed.exit_code == 0 and "indexed 1" in indexed.output, indexed.output
    found = runner.invoke(app, ["search", "zurich invoce", "--workspace", "ws-c", "--json"])
    assert found.exit_code == 0, found.output
    body = orjson.loads(found.output)
    assert [(m["session_id"], m["seq"]) for m in body["matches"]] == [("cli-1", 0)]
    refused = runner.invoke(app, ["search", "x", "--workspace", "ws-c", "--limit", "0"])
    # A bad argument is bad usage (exit 2, docs/errors.md "Command line"), not a failed operation.
    assert refused.exit_code == 2 and "SESSION_QUERY_INVALID_LIMIT" in refused.output
