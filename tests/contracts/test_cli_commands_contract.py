"""The query commands do what they say, on every backend: cursors carry from one command to the
next, ``--all`` streams as many rows as it reports, filters and scopes are named when nothing
matches, and unknown ids or bad arguments are typed errors in the documented order."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from backscroll.cli.main import app
from backscroll.query.cursor import MAX_PAGED

from .conftest import _PARAMS, Harness, make_harness

T0 = datetime(2026, 11, 1, tzinfo=UTC)
#: Entries that match ``needle``: more than a chain of pages may return.
NEEDLES = MAX_PAGED + 30


def _header(ws: str, sid: str) -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": T0.isoformat()}


def _event(ws: str, sid: str, seq: int, kind: str, text: str) -> dict[str, Any]:
    moment = (T0 + timedelta(seconds=seq)).isoformat()
    record: dict[str, Any] = {"v": 1, "kind": "event", "workspace_id": ws, "session_id": sid,
                              "seq": seq, "type": kind, "time": moment, "text": text}  # fmt: skip
    if kind in ("user/message", "assistant/message", "tool/result"):
        record["surface"] = {"op": "append"}
    if kind == "user/message":
        record["role"] = "user"
    return record


def _records() -> list[dict[str, Any]]:
    out = [_header("ws-1", "sess-a")]
    for seq, (kind, text) in enumerate(
        [("user/message", "plan the zeppelin launch"), ("tool/result", "zeppelin hangar report")]
    ):
        out.append(_event("ws-1", "sess-a", seq, kind, text))
    out += [_header("ws-2", "sess-000"), _event("ws-2", "sess-000", 0, "user/message", "hello")]
    out += [_header("ws-2", "sess-forget"), _event("ws-2", "sess-forget", 0, "user/message", "bye")]
    for sid in ("page-0", "page-1"):
        out.append(_header("ws-page", sid))
    out += [_event("ws-page", f"page-{i % 2}", i // 2, "user/message", f"needle {i}") for i in range(NEEDLES)]
    return out


@pytest.fixture(scope="module", params=_PARAMS)
def pipeline(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with make_harness(request.param, tmp_path_factory.mktemp(f"cli-cmds-{request.param}")) as made:
        made.append_all(_records())
        made.index()
        yield made


@pytest.fixture
def cli(pipeline: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pipeline's settings, a data directory of this test's own and no configured cursor key;
    returns the data directory."""
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name in ("BACKSCROLL_CURSOR_KEY", "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "BACKSCROLL_OPENSEARCH_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in pipeline.settings_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data" / "backscroll"


def run(*args: str, code: int = 0) -> tuple[str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (args, result.output)
    return result.stdout, result.stderr


def test_a_cursor_printed_by_one_command_is_taken_by_the_next_without_settings(cli: Path) -> None:
    out, _ = run("search", "needle", "-w", "ws-page", "--limit", "7", "--json")
    first = orjson.loads(out)
    assert first["next_cursor"]
    out, _ = run(
        "search", "needle", "-w", "ws-page", "--limit", "7", "--json", "--cursor", first["next_cursor"]
    )
    second = orjson.loads(out)
    assert len(second["matches"]) == 7
    assert not {m["entry_id"] for m in first["matches"]} & {m["entry_id"] for m in second["matches"]}
    key = cli / "cursor.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.stat().st_size == 64
    # A cursor of another query is refused, and the message names the setting that shares keys.
    out, _ = run("search", "other", "-w", "ws-page", "--json", "--cursor", first["next_cursor"], code=1)
    error = orjson.loads(out)["error"]
    assert error["code"] == "SESSION_QUERY_INVALID_CURSOR" and "BACKSCROLL_CURSOR_KEY" in error["message"]


def test_a_key_file_others_can_read_is_a_settings_error(cli: Path) -> None:
    cli.mkdir(parents=True)
    key = cli / "cursor.key"
    key.write_bytes(b"0" * 64)
    os.chmod(key, 0o644)
    out, _ = run("search", "needle", "-w", "ws-page", "--json", code=2)
    error = orjson.loads(out)["error"]
    assert error["code"] == "SESSION_QUERY_INVALID_CONFIG"
    assert str(key) in error["message"] and "644" in error["message"]
    os.chmod(key, 0o600)
    key.write_bytes(b"0" * 10)
    out, _ = run("search", "needle", "-w", "ws-page", "--json", code=2)
    assert "10 bytes" in orjson.loads(out)["error"]["message"]


def test_all_emits_as_many_rows_as_it_reports(cli: Path) -> None:
    out, err = run("search", "needle", "-w", "ws-page", "--all", "--json")
    rows = [orjson.loads(line)["entry_id"] for line in out.splitlines()]
    assert len(rows) == len(set(rows)) == MAX_PAGED
    assert f"{MAX_PAGED} matches" in err and f"paging limit of {MAX_PAGED}" in err
    # Page by page, too: the chain ends with the page that reaches the limit.
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        out, _ = run("search", "needle", "-w", "ws-page", "--limit", "30", "--json", *cursor)
        page = orjson.loads(out)
        seen += [m["entry_id"] for m in page["matches"]]
        if not page["next_cursor"]:
            break
        cursor = ["--cursor", page["next_cursor"]]
    assert len(seen) == len(set(seen)) == MAX_PAGED


def test_an_unknown_kind_is_invalid_filter_and_a_filtered_miss_names_its_filters(cli: Path) -> None:
    out, _ = run("search", "zeppelin", "-w", "ws-1", "--kind", "bogus", "--json", code=2)
    error = orjson.loads(out)["error"]
    assert error["code"] == "SESSION_QUERY_INVALID_FILTER" and "tool/result" in error["message"]
    _, err = run("search", "zeppelin", "-w", "ws-1", "--kind", "bogus", code=2)
    assert "SESSION_QUERY_INVALID_FILTER" in err
    out, _ = run("search", "launch", "-w", "ws-1", "--kind", "tool/result")
    assert "no matches for 'launch' in workspace ws-1 with kind tool/result" in out
    assert "No searchable history" not in out
    out, _ = run("search", "hangar", "-w", "ws-1", "--kind", "tool/result")
    assert "hangar" in out and "1 match" in out


def test_export_of_a_session_in_another_workspace_says_one_thing(cli: Path) -> None:
    result = CliRunner().invoke(app, ["export", "sess-000", "--workspace", "ws-1"])
    assert result.exit_code == 1, result.output
    assert result.output.count("no records of session sess-000 in workspace ws-1") == 1
    assert "exported" not in result.output and "ws-2" not in result.output
    out, err = run("export", "sess-000", "--workspace", "ws-2")
    assert len(out.splitlines()) == 2 and "exported 2 records" in err


def test_forget_of_an_unknown_session_is_session_not_found(cli: Path) -> None:
    _, err = run("forget", "nope", code=1)
    assert "SESSION_QUERY_SESSION_NOT_FOUND" in err and "deleted" not in err
    out, _ = run("forget", "sess-forget")
    assert "deleted 1 events of sess-forget" in out


def test_read_checks_the_window_before_looking_the_session_up(cli: Path) -> None:
    out, _ = run("read", "nope", "0", "--before", "51", "--json", code=2)
    assert orjson.loads(out)["error"]["code"] == "SESSION_QUERY_INVALID_WINDOW"
    out, _ = run("read", "nope", "0", "--before", "50", "--json", code=1)
    assert orjson.loads(out)["error"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_sessions_without_a_scope_lists_every_workspace_a_page_at_a_time(cli: Path) -> None:
    out, _ = run("sessions", "--json")
    listed = {(s["header"]["workspace_id"], s["header"]["session_id"]) for s in orjson.loads(out)}
    assert {("ws-1", "sess-a"), ("ws-2", "sess-000"), ("ws-page", "page-0"), ("ws-page", "page-1")} <= listed
    out, err = run("sessions", "--json", "--limit", "2")
    first = [s["header"]["session_id"] for s in orjson.loads(out)]
    assert len(first) == 2 and "next page: --offset 2" in err
    out, _ = run("sessions", "--json", "--limit", "2", "--offset", "2")
    assert not set(first) & {s["header"]["session_id"] for s in orjson.loads(out)}
    out, _ = run("sessions")
    assert "sess-a" in out and "sess-000" in out
    run("sessions", "--limit", "0", code=2)
