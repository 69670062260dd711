"""Captured transcripts on every backend: an import is searchable (a typo finds what a compaction
summarised away), and the hook, an import and the watcher write identical entries (re-capturing
with another progress store only replays them: no conflict, nothing dead-lettered)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from tests.unit.capture_helpers import S1, copy_fixtures, run_import

from backscroll.capture.hook import run_hook
from backscroll.capture.runner import FORMATS, open_capture
from backscroll.capture.settings import CaptureSettings
from backscroll.query import Scope, SessionQueryRequest

from .conftest import Harness


def _select(harness: Harness, monkeypatch: pytest.MonkeyPatch, state: Path) -> None:
    for name, value in harness.settings_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BACKSCROLL_CAPTURE_STATE_DIR", str(state))


def test_import_then_search_finds_what_compaction_summarised(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _select(harness, monkeypatch, tmp_path / "state")
    summary = run_import("claude-code", copy_fixtures(tmp_path))
    assert summary.entries > 0 and summary.invalid == 0
    stats = harness.index()
    assert stats.dead_lettered == 0
    result = harness.provider(Scope.workspace("shop")).search(SessionQueryRequest(query="bankers roundng"))
    hit = next(m for m in result.matches if m.session_id == S1)
    assert "banker's rounding" in hit.excerpt
    listed = {e.seq: e for e in harness.reader(Scope.workspace("shop")).list_events(S1)}
    assert listed[hit.seq].surface == "shadowed"  # summarised away by the compaction
    summary_event = listed[listed[hit.seq].replaced_by or -1]
    assert summary_event.sources is not None and hit.seq in summary_event.sources
    child = harness.reader(Scope.workspace("shop")).list_sessions()
    parents = {s.header.session_id: s.header.parent_session_id for s in child}
    assert parents[f"{S1}:agent-a3f9c2"] == S1


def test_hook_import_and_watch_write_identical_entries(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("watchdog")
    from backscroll.capture.watch import watch

    _select(harness, monkeypatch, tmp_path / "imported")
    run_import("claude-code", copy_fixtures(tmp_path / "a"))
    first = harness.index()
    assert first.dead_lettered == 0

    # The hook, event by event, while the transcript grows (its own progress store).
    monkeypatch.setenv("BACKSCROLL_CAPTURE_STATE_DIR", str(tmp_path / "hooked"))
    root = copy_fixtures(tmp_path / "b")
    transcript = root / "-home-dev-shop" / f"{S1}.jsonl"
    lines = transcript.read_bytes().splitlines(keepends=True)
    for end in (3, 7, 12, len(lines)):
        transcript.write_bytes(b"".join(lines[:end]))
        event = {"session_id": S1, "transcript_path": str(transcript), "hook_event_name": "PostToolUse"}
        run_hook(json.dumps(event).encode(), CaptureSettings())

    # The watcher, as the lines are written (a third progress store).
    monkeypatch.setenv("BACKSCROLL_CAPTURE_STATE_DIR", str(tmp_path / "watched"))
    watched = tmp_path / "c" / "claude"
    target = watched / "-home-dev-shop" / f"{S1}.jsonl"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:4]))
    stop, ready = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def follow() -> None:
        try:
            with open_capture() as capture:
                watch(capture, [(FORMATS["claude-code"](), watched)], stop, ready=ready)
        except BaseException as err:
            failure.append(err)
            ready.set()

    thread = threading.Thread(target=follow)
    thread.start()
    try:
        assert ready.wait(60)
        with target.open("ab") as out:
            for line in lines[4:]:
                out.write(line)
                out.flush()
                time.sleep(0.02)
        time.sleep(2.0)
    finally:
        stop.set()
        thread.join(60)
    assert not failure, failure

    for state, path in (("hooked", transcript), ("watched", target)):  # both captured every line
        with closing(sqlite3.connect(tmp_path / state / "capture.db")) as db:
            offsets = dict(db.execute("SELECT path, offset FROM transcripts").fetchall())
        assert offsets[str(path.resolve())] == path.stat().st_size, state
    again = harness.index()
    assert again.dead_lettered == 0  # every re-captured entry was identical: replays, no conflict
    assert harness.dead_letters() == []
    events = harness.reader(Scope.workspace("shop")).list_events(S1)
    assert [e.seq for e in events] == list(range(16))
