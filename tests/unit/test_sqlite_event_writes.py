"""A run of event creates is written in one statement with the outcomes the one-by-one path gives:
new entries created with their full-text rows, existing ones replayed, a second create of the same
id in the run replayed, and a run holding a malformed document written one by one."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from backscroll.indexer.ports import Outcome, WriteResult
from backscroll.indexer.projector import Action, SessionProjection
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest import EventRecord, HeaderRecord, parse_record
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.sqlite.provider import SQLiteProvider

T0 = datetime(2026, 11, 3, tzinfo=UTC)


def _creates(sid: str, n: int, word: str) -> list[Action]:
    state = SessionProjection(sid)
    header = parse_record({"v": 1, "kind": "header", "workspace_id": "ws-w", "session_id": sid,
                           "created_at": T0.isoformat()})  # fmt: skip
    assert isinstance(header, HeaderRecord)
    state.apply_header(header)
    out = []
    for seq in range(n):
        record = parse_record({
            "v": 1, "kind": "event", "workspace_id": "ws-w", "session_id": sid, "seq": seq,
            "type": "user/message", "time": (T0 + timedelta(seconds=seq)).isoformat(),
            "text": f"{word} entry {seq}", "surface": {"op": "append"},
        })  # fmt: skip
        assert isinstance(record, EventRecord)
        out.append(state.apply_event(record, 0, seq).create)
    return out


def _outcomes(results: list[WriteResult]) -> list[Outcome]:
    return [r.outcome for r in results]


def _hits(path: Path, word: str) -> list[tuple[str, int]]:
    with SQLiteProvider(Scope.workspace("ws-w"), path, scan_max_rows=0) as provider:
        found = provider.search(SessionQueryRequest(query=word, limit=50))
        return sorted((m.session_id, m.seq) for m in found.matches)


def test_a_run_of_creates_matches_the_one_by_one_outcomes(tmp_path: Path) -> None:
    run, single = tmp_path / "run.db", tmp_path / "single.db"
    first, second = _creates("s-1", 3, "alpha"), _creates("s-2", 4, "bravo")
    with SQLiteView(run) as view_run, SQLiteView(single) as view_single:
        view_run.ensure_schema()
        view_single.ensure_schema()
        assert _outcomes(view_run.write(first)) == [Outcome.CREATED] * 3
        for action in first:
            view_single.write([action])
        # Existing ids replay, new ones are created, a repeat inside the run replays the first.
        batch = [first[1], *second, second[0], first[2]]
        via_run = _outcomes(view_run.write(batch))
        via_single = [_outcomes(view_single.write([a]))[0] for a in batch]
        assert (
            via_run == via_single == [Outcome.REPLAY, *[Outcome.CREATED] * 4, Outcome.REPLAY, Outcome.REPLAY]
        )
    # The full-text rows of the run landed on the right entries.
    assert _hits(run, "bravo") == _hits(single, "bravo") == [("s-2", i) for i in range(4)]
    assert _hits(run, "alpha") == [("s-1", i) for i in range(3)]


def test_a_run_with_a_malformed_document_is_written_one_by_one(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    good = _creates("s-3", 3, "charlie")
    broken = replace(good[1], body={k: v for k, v in good[1].body.items() if k != "time"})
    with SQLiteView(path) as view:
        view.ensure_schema()
        results = view.write([good[0], broken, good[2]])
    assert _outcomes(results) == [Outcome.CREATED, Outcome.REJECTED, Outcome.CREATED]
    assert results[1].reason
    assert _hits(path, "charlie") == [("s-3", 0), ("s-3", 2)]
