"""The operator operations contract: what a :class:`~backscroll.backends.Backend` does for the CLI
and the console — health, workspaces and their sessions, export, forget, rebuild, dead letters —
written once and run on every backend."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from backscroll.backends import ParkedRecord, WorkspaceCount
from backscroll.ingest.export import LogExport
from backscroll.query import SessionQueryError

from . import corpus
from .conftest import Harness


def _session(workspace: str, session: str, events: int) -> list[dict[str, Any]]:
    header = {
        "v": 1,
        "kind": "header",
        "workspace_id": workspace,
        "session_id": session,
        "created_at": "2026-11-05T10:00:00Z",
    }
    return [
        header,
        *(
            {
                "v": 1,
                "kind": "event",
                "workspace_id": workspace,
                "session_id": session,
                "seq": seq,
                "type": "user/message",
                "role": "user",
                "surface": {"op": "append"},
                "time": f"2026-11-05T10:00:{seq:02d}Z",
                "text": f"line {seq} of {session}",
            }
            for seq in range(events)
        ),
    ]


def _small(harness: Harness) -> None:
    """Two sessions in two workspaces (3 and 2 events), appended and indexed."""
    harness.append_all(_session("ws-ops-a", "s-ops-a", 3) + _session("ws-ops-b", "s-ops-b", 2))
    assert harness.index().indexed == 5


def _session_ids(harness: Harness, workspace: str) -> set[str]:
    return {record.header.session_id for record in harness.backend.sessions(workspace)}


# -- health ---------------------------------------------------------------------------------------
def test_health_shows_the_lag_before_indexing_and_none_after(harness: Harness) -> None:
    harness.append_all(_session("ws-ops-a", "s-ops-a", 3))
    assert harness.backend.missing() is None
    before = harness.backend.health()
    assert before.problems == [] and before.partitions
    assert before.total_lag is not None and before.total_lag > 0
    harness.index()
    after = harness.backend.health()
    assert after.problems == [] and after.total_lag == 0 and after.freshness_s == 0.0
    assert after.backend == harness.backend.describe()
    assert all(p.end_offset >= 0 and p.lag == 0 for p in after.partitions)


# -- workspaces and their sessions ------------------------------------------------------------------
def test_workspaces_count_their_sessions_and_events(loaded: Harness) -> None:
    expected = []
    for w in range(corpus.WORKSPACES):
        sessions = sum(1 for i in range(corpus.SESSIONS) if corpus.session(i)[0] == f"ws-{w}")
        expected.append(WorkspaceCount(f"ws-{w}", sessions, sessions * corpus.EVENTS))
    assert loaded.backend.workspaces() == expected


def test_a_workspace_lists_its_sessions_and_a_session_names_its_workspace(loaded: Harness) -> None:
    for w in range(corpus.WORKSPACES):
        expected = {corpus.session(i)[1] for i in range(corpus.SESSIONS) if corpus.session(i)[0] == f"ws-{w}"}
        assert _session_ids(loaded, f"ws-{w}") == expected
    assert _session_ids(loaded, "ws-none") == set()
    ws, sid = corpus.session(4)
    assert loaded.backend.workspace_of(sid) == ws
    assert loaded.backend.workspace_of("s-never-appended") is None


# -- export ---------------------------------------------------------------------------------------
def _exported(harness: Harness, job: LogExport) -> list[dict[str, Any]]:
    return [orjson.loads(record.value or b"{}") for record in harness.backend.export(job)]


def test_a_session_exports_its_records_in_append_order(loaded: Harness) -> None:
    ws, sid = corpus.session(1)
    job = LogExport(session_id=sid)
    got = _exported(loaded, job)
    wanted = [r for r in corpus.records() if r["session_id"] == sid]
    assert [(r["kind"], r.get("seq")) for r in got] == [(r["kind"], r.get("seq")) for r in wanted]
    assert all(r["workspace_id"] == ws for r in got)
    assert got[0].get("title") == wanted[0]["title"] and got[18]["text"] == wanted[18]["text"]
    assert job.exported == len(wanted) and job.skipped == 0


def test_a_workspace_exports_every_session_each_in_append_order(loaded: Harness) -> None:
    job = LogExport(workspace_id="ws-2")
    got = _exported(loaded, job)
    wanted = [r for r in corpus.records() if r["workspace_id"] == "ws-2"]
    assert sorted((r["session_id"], r["kind"], r.get("seq", -1)) for r in got) == sorted(
        (r["session_id"], r["kind"], r.get("seq", -1)) for r in wanted
    )
    for sid in {r["session_id"] for r in wanted}:
        seqs = [r.get("seq", -1) for r in got if r["session_id"] == sid]
        assert seqs == sorted(seqs)
    assert job.exported == len(wanted)
    assert _exported(loaded, LogExport(workspace_id="ws-none")) == []


# -- forget and rebuild ---------------------------------------------------------------------------
def test_forget_deletes_a_session_from_the_projection_only(harness: Harness) -> None:
    _small(harness)
    forgotten = harness.backend.forget("s-ops-a")
    assert forgotten.events == 3 and forgotten.session_id == "s-ops-a"
    assert "deleted 3 events of s-ops-a" in forgotten.summary() and forgotten.kept_by
    assert harness.backend.workspace_of("s-ops-a") is None
    assert _session_ids(harness, "ws-ops-a") == set() and _session_ids(harness, "ws-ops-b") == {"s-ops-b"}
    with pytest.raises(SessionQueryError) as again:  # forgotten: no longer a session of the projection
        harness.backend.forget("s-ops-a")
    assert again.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert len(_exported(harness, LogExport(session_id="s-ops-a"))) == 4  # the log keeps the records


def test_rebuild_projects_the_whole_log_again(harness: Harness) -> None:
    _small(harness)
    harness.backend.forget("s-ops-a")
    progress: list[int] = []
    rebuilt = harness.backend.rebuild(on_batch=lambda stats, remaining: progress.append(stats.consumed))
    assert rebuilt.report.stats.indexed == 5 and rebuilt.summary.startswith("rebuilt ")
    assert progress
    assert harness.backend.workspace_of("s-ops-a") == "ws-ops-a"
    assert harness.backend.workspaces() == [
        WorkspaceCount("ws-ops-a", 1, 3),
        WorkspaceCount("ws-ops-b", 1, 2),
    ]
    if not harness.backend.keeps_index_versions:
        with pytest.raises(ValueError, match="no index versions"):
            harness.backend.rebuild(keep=True)


# -- dead letters ---------------------------------------------------------------------------------
def test_dead_letters_are_listed_with_their_origin_and_replayed_once(harness: Harness) -> None:
    _small(harness)
    assert harness.backend.dead_letters() == []
    bad = {"v": 1, "kind": "event", "workspace_id": "ws-ops-b", "session_id": "s-bad"}
    harness.send_raw([(b"s-bad", orjson.dumps(bad))])
    assert harness.index().dead_lettered == 1
    (letter,) = harness.backend.dead_letters()
    assert isinstance(letter, ParkedRecord)
    assert (letter.workspace_id, letter.session_id) == ("ws-ops-b", "s-bad")
    assert letter.error_class and letter.reason and letter.dlq_offset >= 0
    assert "key" not in letter.envelope and "value" not in letter.envelope
    assert letter.envelope["reason"] == letter.reason
    assert harness.backend.replay_dead_letters() == 1
    assert harness.backend.replay_dead_letters() == 0
    assert harness.index().dead_lettered == 1  # the replayed record is still invalid: parked again
    assert len(harness.backend.dead_letters()) == 2
