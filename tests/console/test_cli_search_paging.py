"""``backscroll search --cursor / --all`` and ``BACKSCROLL_CURSOR_KEY`` on the embedded backend."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from tests.console.conftest import PAGING_MATCHES, build_corpus
from typer.testing import CliRunner

from backscroll.cli.main import app


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = build_corpus(tmp_path / "cli.db")
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("BACKSCROLL_BACKEND", "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "BACKSCROLL_OPENSEARCH_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # the per-user cursor key's place
    return path


def search(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["search", *args])
    return result.exit_code, result.stdout


def test_all_streams_every_match_once_as_jsonl(cli_env: Path) -> None:
    code, out = search("zeppelin", "-w", "ws-page", "--all", "--json")
    assert code == 0
    ids = [orjson.loads(line)["entry_id"] for line in out.splitlines()]
    assert len(ids) == PAGING_MATCHES == len(set(ids))


def test_a_cursor_from_one_process_works_in_the_next_with_a_configured_key(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_CURSOR_KEY", "a-shared-secret-for-cursors")
    code, out = search("zeppelin", "-w", "ws-page", "--limit", "50", "--json")
    first = orjson.loads(out)
    assert code == 0 and first["next_cursor"]
    code, out = search(
        "zeppelin", "-w", "ws-page", "--limit", "50", "--json", "--cursor", first["next_cursor"]
    )
    second = orjson.loads(out)
    assert code == 0
    page_one = {m["entry_id"] for m in first["matches"]}
    page_two = {m["entry_id"] for m in second["matches"]}
    assert len(page_two) == 50 and not page_one & page_two
    # --all continues from a cursor, too: the rest, without the first page.
    code, out = search(
        "zeppelin", "-w", "ws-page", "--limit", "50", "--all", "--json", "--cursor", first["next_cursor"]
    )
    rest = [orjson.loads(line)["entry_id"] for line in out.splitlines()]
    assert len(rest) == PAGING_MATCHES - 50 and not page_one & set(rest)
    # Another key (or none: the user's own key file) refuses it.
    monkeypatch.setenv("BACKSCROLL_CURSOR_KEY", "another-secret-for-cursors")
    code, out = search("zeppelin", "-w", "ws-page", "--limit", "50", "--cursor", first["next_cursor"])
    assert code == 1
    monkeypatch.delenv("BACKSCROLL_CURSOR_KEY")
    code, _ = search("zeppelin", "-w", "ws-page", "--limit", "50", "--cursor", first["next_cursor"])
    assert code == 1


def test_a_cursor_for_another_query_or_scope_is_refused(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_CURSOR_KEY", "a-shared-secret-for-cursors")
    _, out = search("zeppelin", "-w", "ws-page", "--limit", "50", "--json")
    cursor = orjson.loads(out)["next_cursor"]
    assert search("zeppelin", "-w", "ws-a", "--limit", "50", "--cursor", cursor)[0] == 1
    assert search("inventory", "-w", "ws-page", "--limit", "50", "--cursor", cursor)[0] == 1


def test_a_short_cursor_key_is_a_configuration_error(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_CURSOR_KEY", "short")
    result = CliRunner().invoke(app, ["search", "zeppelin", "-w", "ws-page"])
    assert result.exit_code != 0 and "BACKSCROLL_CURSOR_KEY" in result.output


def test_the_console_refuses_a_public_address_without_a_token(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("BACKSCROLL_CONSOLE_TOKEN", "BACKSCROLL_CONSOLE_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(app, ["console", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2 and "BACKSCROLL_CONSOLE_TOKEN" in result.output
    monkeypatch.setenv("BACKSCROLL_CONSOLE_TOKENS", '{"too-short": ["ws-a"]}')
    result = CliRunner().invoke(app, ["console", "--port", "1"])
    assert result.exit_code == 2 and "16 characters" in result.output and "too-short" not in result.output
    monkeypatch.delenv("BACKSCROLL_CONSOLE_TOKENS")
    monkeypatch.setenv("BACKSCROLL_CURSOR_KEY", "short")
    result = CliRunner().invoke(app, ["console", "--port", "1"])
    assert result.exit_code == 2 and "BACKSCROLL_CURSOR_KEY" in result.output


def test_since_and_until_bound_the_search(cli_env: Path) -> None:
    # Entry k of the paging corpus is written at 09:(k // 3):01; minutes 10 to 19 hold 30 of them.
    code, out = search(
        "zeppelin", "-w", "ws-page", "--since", "2026-11-30T09:10", "--until", "2026-11-30T09:19:59",
        "--all", "--json",
    )  # fmt: skip
    assert code == 0
    matches = [orjson.loads(line) for line in out.splitlines()]
    assert len(matches) == 30 == len({m["entry_id"] for m in matches})
    assert {m["created_at"][11:16] for m in matches} == {f"09:{minute}" for minute in range(10, 20)}
    code, out = search("zeppelin", "-w", "ws-page", "--until", "2026-11-29", "--json")
    assert code == 0 and orjson.loads(out)["matches"] == []


def test_a_malformed_time_bound_is_one_line_and_exit_2(cli_env: Path) -> None:
    result = CliRunner().invoke(app, ["search", "zeppelin", "-w", "ws-page", "--since", "yesterday"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "--since" in result.output
