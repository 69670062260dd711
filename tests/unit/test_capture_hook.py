"""The Claude Code hook: captures what is new, prints nothing, exits 0 whatever happens."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from tests.unit.capture_helpers import S1, copy_fixtures, embedded, events, logged, run_import
from typer.testing import CliRunner

from backscroll.cli.main import app


def _hook(path: Path, event: str = "PostToolUse") -> str:
    return json.dumps(
        {"session_id": S1, "transcript_path": str(path), "cwd": "/home/dev/shop", "hook_event_name": event}
    )


def test_hook_captures_new_lines_silently(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    root = copy_fixtures(tmp_path)
    transcript = root / "-home-dev-shop" / f"{S1}.jsonl"
    lines = transcript.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines[:5]))
    runner = CliRunner()
    result = runner.invoke(app, ["capture", "claude-code"], input=_hook(transcript, "UserPromptSubmit"))
    assert (result.exit_code, result.stdout) == (0, "")
    assert len(events(db, S1)) == 5
    transcript.write_bytes(b"".join(lines))
    result = runner.invoke(app, ["capture", "claude-code"], input=_hook(transcript, "Stop"))
    assert (result.exit_code, result.stdout) == (0, "")
    assert len(events(db, S1)) == 16
    assert len(events(db, f"{S1}:agent-a3f9c2")) == 4  # the session's subagent transcripts too
    count = len(logged(db))
    runner.invoke(app, ["capture", "claude-code"], input=_hook(transcript, "SessionEnd"))
    assert len(logged(db)) == count
    assert run_import("claude-code", root).entries == 6  # only the other two sessions were left


@pytest.mark.parametrize("given", ["", "not json", "[]", '{"hook_event_name": "Stop"}'])
def test_bad_hook_input_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, given: str
) -> None:
    embedded(monkeypatch, tmp_path)
    result = CliRunner().invoke(app, ["capture", "claude-code"], input=given)
    assert (result.exit_code, result.stdout) == (0, "")
    assert "capture failed" in (tmp_path / "state" / "capture.log").read_text()


def test_log_down_moves_nothing_and_the_next_event_catches_up(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = copy_fixtures(tmp_path)
    transcript = root / "-home-dev-shop" / f"{S1}.jsonl"
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the log's folder should be")
    embedded(monkeypatch, tmp_path)
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(blocked / "backscroll.db"))
    result = CliRunner().invoke(app, ["capture", "claude-code"], input=_hook(transcript))
    assert (result.exit_code, result.stdout) == (0, "")
    assert "capture failed" in (tmp_path / "state" / "capture.log").read_text()
    db = embedded(monkeypatch, tmp_path)
    CliRunner().invoke(app, ["capture", "claude-code"], input=_hook(transcript))
    assert len(events(db, S1)) == 16


def test_kafka_down_the_entries_wait_in_the_spool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    transcript = root / "-home-dev-shop" / f"{S1}.jsonl"
    monkeypatch.setenv("BACKSCROLL_BACKEND", "kafka-opensearch")
    monkeypatch.setenv("BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")  # nothing listens there
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("BACKSCROLL_APPENDER_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("BACKSCROLL_CAPTURE_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(app, ["capture", "claude-code"], input=_hook(transcript))
    assert (result.exit_code, result.stdout) == (0, "")
    assert any(p.stat().st_size for p in (tmp_path / "spool").rglob("*.seg"))
    with closing(sqlite3.connect(tmp_path / "state" / "capture.db")) as db:
        (offset,) = db.execute("SELECT offset FROM transcripts WHERE path = ?", (str(transcript),)).fetchone()
    assert offset == transcript.stat().st_size  # taken by the spool: the progress moved
