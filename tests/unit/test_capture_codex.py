"""Codex rollouts as entries: messages, calls and outputs, reasoning, compaction, events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.capture_helpers import CX, copy_fixtures, embedded, events, headers, run_import


@pytest.fixture
def imported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    db = embedded(monkeypatch, tmp_path)
    summary = run_import("codex", copy_fixtures(tmp_path, "codex"))
    assert (summary.transcripts, summary.invalid) == (1, 0)
    return db


def test_the_rollout_is_one_session_in_its_project(imported: Path) -> None:
    header = headers(imported)[CX]
    assert (header["workspace_id"], header["origin"]) == ("shop", "codex")
    assert header["created_at"].startswith("2026-11-05T14:00:00")
    entries = events(imported, CX)
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    meta = entries[0]
    assert meta["type"] == "codex/session_meta" and meta["attrs"]["cli_version"] == "0.58.0"


def test_calls_outputs_and_messages(imported: Path) -> None:
    entries = events(imported, CX)
    by_type = [(e["type"], e.get("tool_name")) for e in entries]
    assert ("tool/call", "shell") in by_type and ("tool/result", "shell") in by_type
    assert ("tool/call", "apply_patch") in by_type and ("tool/result", "apply_patch") in by_type
    result = next(e for e in entries if e["type"] == "tool/result" and e["tool_name"] == "shell")
    assert result["attrs"]["call_id"] == "call_X1" and "statement timeout" in result["text"]
    call = next(e for e in entries if e["type"] == "tool/call" and e["tool_name"] == "shell")
    assert json.loads(call["text"])["command"][-1] == "tail -n 3 logs/export.log"
    users = [e["text"] for e in entries if e["type"] == "user/message"]
    assert "Why does the nightly export job time out?" in users
    thinking = next(e for e in entries if e["type"] == "assistant/thinking")
    assert thinking.get("text") is None
    events_kept = {e["type"] for e in entries if e["type"].startswith("codex/")}
    assert {"codex/event/user_message", "codex/event/token_count", "codex/turn_context"} <= events_kept
    assert "codex/ghost_snapshot" in events_kept  # an unknown line type, kept


def test_compacted_replaces_the_surface(imported: Path) -> None:
    entries = events(imported, CX)
    summary = next(e for e in entries if (e.get("attrs") or {}).get("compact_summary"))
    before = [e["seq"] for e in entries if e["seq"] < summary["seq"] and e.get("surface")]
    assert summary["surface"] == {"op": "replace", "start": before[0], "end": before[-1]}
    assert summary["sources"] == before
    assert "lacks an index" in summary["text"]


def test_an_older_rollout_without_payloads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    path = tmp_path / "rollout-2025-05-01T10-00-00-11111111-2222-3333-4444-555555555555.jsonl"
    lines = [
        {
            "id": "11111111-2222-3333-4444-555555555555",
            "timestamp": "2025-05-01T10:00:00Z",
            "instructions": "",
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "old style"}]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_import("codex", path)
    entries = events(db, "11111111-2222-3333-4444-555555555555")
    assert [e["type"] for e in entries] == ["codex/session_meta", "user/message"]
    assert entries[1]["text"] == "old style"
