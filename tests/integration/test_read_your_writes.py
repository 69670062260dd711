"""Read-your-writes: a provider built with the process's appender sees what it just appended,
before the indexer has it, and hands over to the index without duplicates once the watermark
passes (issue 3, spec D9)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conftest import Pipeline

from backscroll.ingest import Appender, AppenderSettings
from backscroll.query import Scope, SessionQueryRequest


def _event(seq: int, text: str) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-ryw",
        "session_id": "ryw-1",
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": datetime(2026, 11, 30, 10, 0, seq, tzinfo=UTC).isoformat(),
        "text": text,
    }


def test_own_appends_are_searchable_before_and_after_indexing(pipeline: Pipeline, tmp_path: Path) -> None:
    pipeline.append_all([_event(0, "an older note about the staging cluster")])
    pipeline.index()
    options = AppenderSettings(spool_dir=tmp_path / "spool")
    with Appender(pipeline.kafka, options=options) as appender:
        appender.append(_event(1, "the quarterly forecast for Zürich")).result(timeout=30)
        session = pipeline.provider(Scope.session("ryw-1"), live=appender)
        workspace = pipeline.provider(Scope.workspace("ws-ryw"), live=appender)
        other = pipeline.provider(Scope.workspace("ws-elsewhere"), live=appender)

        before = session.search(SessionQueryRequest(query="zurich forcast"))
        assert [(m.seq, m.session_id) for m in before.matches] == [(1, "ryw-1")]
        assert before.source == "persisted+live"
        assert [m.seq for m in workspace.search(SessionQueryRequest(query="")).matches] == [1, 0]
        assert other.search(SessionQueryRequest(query="zurich")).matches == ()  # never another scope

        pipeline.index()  # the worker publishes its watermark; the live entry is released
        after = session.search(SessionQueryRequest(query="zurich forcast"))
        assert [m.seq for m in after.matches] == [1]
        assert after.source == "persisted"
        assert appender.live_events("ryw-1") == []
        browse = session.search(SessionQueryRequest(query=""))
        assert [m.seq for m in browse.matches] == [1, 0]  # no duplicate of seq 1


def test_reads_merge_the_appenders_live_entries(pipeline: Pipeline, tmp_path: Path) -> None:
    from backscroll.query import OpenSearchSessionReader

    header = {
        "v": 1,
        "kind": "header",
        "workspace_id": "ws-ryw",
        "session_id": "ryw-1",
        "created_at": "2026-11-30T10:00:00Z",
    }
    pipeline.append_all([header, _event(0, "persisted first entry")])
    pipeline.index()
    options = AppenderSettings(spool_dir=tmp_path / "spool")
    with Appender(pipeline.kafka, options=options) as appender:
        appender.append(header).result(timeout=30)  # the agent re-announces its session on restart
        appender.append(_event(1, "live second entry")).result(timeout=30)
        reader = OpenSearchSessionReader(Scope.workspace("ws-ryw"), pipeline.opensearch, live=appender)
        try:
            window = reader.read_event("ryw-1", 1, before=1)
            assert [e.seq for e in window.events] == [0, 1]
            assert window.target.text == "live second entry"
            assert [e.seq for e in reader.list_events("ryw-1")] == [0, 1]
            (record,) = [r for r in reader.list_sessions() if r.header.session_id == "ryw-1"]
            assert record.live and record.persisted
        finally:
            reader.close()
