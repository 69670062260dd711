"""Claude Code transcripts as entries: messages, tools, compaction, subagents, resumes, odd lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.capture_helpers import S1, S2, copy_fixtures, embedded, events, headers, logged, run_import

from backscroll.capture.entries import MAX_CAPTURED_TEXT_BYTES


@pytest.fixture
def imported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    db = embedded(monkeypatch, tmp_path)
    run_import("claude-code", copy_fixtures(tmp_path))
    return db


def test_messages_and_tools(imported: Path) -> None:
    main = events(imported, S1)
    assert [e["seq"] for e in main] == list(range(len(main)))  # contiguous, from 0
    kinds = [e["type"] for e in main]
    assert kinds[:6] == [
        "session/summary",
        "user/message",
        "assistant/thinking",
        "tool/call",
        "tool/result",
        "tool/call",
    ]
    call, result = main[3], main[4]
    assert (call["tool_name"], call["attrs"]["call_id"]) == ("Grep", "toolu_01")
    assert json.loads(call["text"]) == {"pattern": "round\\(", "path": "billing/"}
    assert (result["tool_name"], result["attrs"]["call_id"], result["role"]) == ("Grep", "toolu_01", "tool")
    failed = next(e for e in main if e.get("tool_name") == "Bash" and e["type"] == "tool/result")
    assert failed["attrs"]["is_error"] is True
    image = next(e for e in main if e["type"] == "user/message" and "screenshot" in (e.get("text") or ""))
    assert (image["attrs"]["images"], image["attrs"]["image_types"]) == (1, "image/png")
    assert "iVBOR" not in json.dumps(main)  # the image bytes are not stored
    thinking = main[2]
    assert thinking.get("text") is None and thinking["attrs"]["thinking_kept"] is False
    assert main[1]["attrs"]["uuid"] == "u-01" and main[1]["turn"] == 1


def test_thinking_kept_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    monkeypatch.setenv("BACKSCROLL_CAPTURE_THINKING", "true")
    run_import("claude-code", copy_fixtures(tmp_path))
    thinking = next(e for e in events(db, S1) if e["type"] == "assistant/thinking")
    assert thinking["text"] == "Probably float rounding in totals."


def test_compaction_replaces_the_surface_and_cites_it(imported: Path) -> None:
    main = events(imported, S1)
    boundary = next(e for e in main if e["type"] == "compaction/boundary")
    assert (boundary["attrs"]["trigger"], boundary["attrs"]["pre_tokens"]) == ("auto", 155000)
    summary = next(e for e in main if (e.get("attrs") or {}).get("compact_summary"))
    on_surface = [e["seq"] for e in main if e["seq"] < summary["seq"] and e.get("surface")]
    assert summary["type"] == "user/message"
    assert summary["surface"] == {"op": "replace", "start": on_surface[0], "end": on_surface[-1]}
    assert summary["sources"] == on_surface
    after = [e for e in main if e["seq"] > summary["seq"] and e.get("surface")]
    assert all(e["surface"] == {"op": "append"} for e in after)


def test_subagent_is_a_child_session(imported: Path) -> None:
    child = f"{S1}:agent-a3f9c2"
    header = headers(imported)[child]
    assert (header["parent_session_id"], header["origin"], header["delegation_depth"]) == (S1, "subagent", 1)
    assert header["workspace_id"] == "shop"
    texts = [e.get("text") for e in events(imported, child)]
    assert texts[0] == "Find every other round() call" and len(texts) == 4


def test_resumed_session_names_its_parent_and_skips_copied_lines(imported: Path) -> None:
    header = headers(imported)[S2]
    assert (header["parent_session_id"], header["origin"]) == (S1, "resume")
    assert header["seed_length"] == 15  # the line it continues is S1's seq 14
    texts = [e.get("text") for e in events(imported, S2)]
    assert "Now open a pull request." not in texts  # copied from S1: captured once, there
    assert "The reviewer asks for a changelog line." in texts


def test_unknown_lines_are_kept_as_metadata(imported: Path) -> None:
    kept = [e for e in logged(imported) if e.get("type", "").startswith("claude/")]
    assert {e["type"] for e in kept} == {"claude/file-history-snapshot", "claude/queue-operation"}
    queued = next(e for e in kept if e["type"] == "claude/queue-operation")
    assert json.loads(queued["text"])["content"] == "and mention compaction"
    assert queued["attrs"]["x.operation"] == "enqueue"


def test_projects_decide_the_workspace_and_a_mapping_overrides(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = embedded(monkeypatch, tmp_path)
    monkeypatch.setenv("BACKSCROLL_CAPTURE_WORKSPACES", json.dumps({"/home/dev": "dev-all"}))
    run_import("claude-code", copy_fixtures(tmp_path))
    assert {h["workspace_id"] for h in headers(db).values()} == {"dev-all"}
    monkeypatch.delenv("BACKSCROLL_CAPTURE_WORKSPACES")
    other = tmp_path / "other"
    db2 = embedded(monkeypatch, other)
    run_import("claude-code", copy_fixtures(other))
    assert {h["workspace_id"] for h in headers(db2).values()} == {"shop", "blog"}


def test_a_second_import_appends_nothing_and_new_lines_continue(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = embedded(monkeypatch, tmp_path)
    root = copy_fixtures(tmp_path)
    first = run_import("claude-code", root)
    count = len(logged(db))
    again = run_import("claude-code", root)
    assert (again.entries, again.lines, len(logged(db))) == (0, 0, count)
    assert first.entries == count - len(headers(db))
    blog = next(root.glob("-home-dev-blog/*.jsonl"))
    line = {
        "type": "user",
        "uuid": "b-03",
        "sessionId": blog.stem,
        "cwd": "/home/dev/blog",
        "timestamp": "2026-11-04T08:02:00Z",
        "message": {"role": "user", "content": "And add a diagram."},
    }
    with blog.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
    more = run_import("claude-code", root)
    assert more.entries == 1
    added = events(db, blog.stem)[-1]
    assert (added["seq"], added["text"]) == (3, "And add a diagram.")


def _one_session(tmp_path: Path) -> Path:
    path = tmp_path / "proj" / "sess-odd.jsonl"
    path.parent.mkdir(parents=True)
    return path


def _user(uuid: str, text: str) -> bytes:
    line = {
        "type": "user",
        "uuid": uuid,
        "sessionId": "sess-odd",
        "cwd": "/w/odd",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(line).encode() + b"\n"


def test_a_line_without_its_newline_waits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    path = _one_session(tmp_path)
    whole = _user("o-2", "second")
    path.write_bytes(_user("o-1", "first") + whole[:20])
    summary = run_import("claude-code", path)
    assert (summary.entries, summary.waiting) == (1, 1)
    with path.open("ab") as out:
        out.write(whole[20:])
    assert run_import("claude-code", path).entries == 1
    assert [e["text"] for e in events(db, "sess-odd")] == ["first", "second"]


def test_invalid_json_and_bad_bytes_have_clear_outcomes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = embedded(monkeypatch, tmp_path)
    path = _one_session(tmp_path)
    bad_bytes = _user("o-3", "caf\u00e9").replace(b"caf\\u00e9", b"caf\xe9")
    path.write_bytes(_user("o-1", "ok") + b'{"type": "user", "uuid": \n' + b"[1, 2]\n" + bad_bytes)
    summary = run_import("claude-code", path)
    assert (summary.lines, summary.invalid) == (4, 2)
    entries = events(db, "sess-odd")
    assert [e["type"] for e in entries] == [
        "user/message",
        "capture/invalid-line",
        "capture/invalid-line",
        "user/message",
    ]
    assert entries[1]["attrs"]["reason"].startswith("not JSON") and entries[1]["attrs"]["line"] == 2
    assert "not a JSON object" in entries[2]["attrs"]["reason"]
    assert entries[3]["text"] == "caf\ufffd" and entries[3]["attrs"]["invalid_utf8"] is True


def test_a_huge_tool_output_is_cut_to_the_cap_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    db = embedded(monkeypatch, tmp_path)
    path = _one_session(tmp_path)
    huge = "x" * (50 * 1024 * 1024)
    call = {
        "type": "assistant",
        "uuid": "o-1",
        "sessionId": "sess-odd",
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat big.log"}}
            ],
        },
    }
    result = {
        "type": "user",
        "uuid": "o-2",
        "sessionId": "sess-odd",
        "timestamp": "2026-11-01T10:00:01Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": huge}],
        },
    }
    path.write_text(json.dumps(call) + "\n" + json.dumps(result) + "\n")
    del huge
    assert run_import("claude-code", path).entries == 2
    stored = events(db, "sess-odd")[1]
    assert stored["tool_name"] == "Bash" and len(stored["text"].encode()) == MAX_CAPTURED_TEXT_BYTES
    assert (stored["attrs"]["truncated"], stored["attrs"]["text_bytes"]) == (True, 50 * 1024 * 1024)


def test_a_rewritten_file_continues_its_sessions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    db = embedded(monkeypatch, tmp_path)
    path = _one_session(tmp_path)
    path.write_bytes(_user("o-1", "first") + _user("o-2", "second"))
    run_import("claude-code", path)
    rotated = path.with_name("sess-odd.jsonl.1")
    path.rename(rotated)  # rotation: the old file moves away, a new one starts
    path.write_bytes(_user("o-3", "third"))
    run_import("claude-code", path)
    again = run_import("claude-code", rotated)  # known by its first line: continues where it was
    assert (again.lines, again.duplicates) == (0, 0)
    assert [(e["seq"], e["text"]) for e in events(db, "sess-odd")] == [
        (0, "first"),
        (1, "second"),
        (2, "third"),
    ]
