"""The projection-view contract: the methods BatchProcessor calls behave the same on every view."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sessionlog.indexer.projector import Action, SessionProjection
from sessionlog.ingest import EventRecord, HeaderRecord, parse_record

from .conftest import Harness

_T0 = datetime(2026, 11, 3, tzinfo=UTC)


def _records(sid: str) -> list[HeaderRecord | EventRecord]:
    out: list[HeaderRecord | EventRecord] = [
        parse_record(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": "ws-v",
                "session_id": sid,
                "created_at": _T0.isoformat(),
                "title": "view contract",
            }
        )
    ]
    for seq in range(4):
        out.append(
            parse_record(
                {
                    "v": 1,
                    "kind": "event",
                    "workspace_id": "ws-v",
                    "session_id": sid,
                    "seq": seq,
                    "type": "user/message",
                    "role": "user",
                    "surface": {"op": "append"},
                    "time": (_T0 + timedelta(seconds=seq)).isoformat(),
                    "text": f"view entry {seq}",
                }
            )
        )
    # seq 4 replaces the surface nodes 0..1 with a summary: updates to earlier documents.
    out.append(
        parse_record(
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "ws-v",
                "session_id": sid,
                "seq": 4,
                "type": "assistant/message",
                "role": "assistant",
                "surface": {"op": "replace", "start": 0, "end": 1},
                "sources": [0, 1],
                "time": (_T0 + timedelta(seconds=4)).isoformat(),
                "text": "summary of 0 and 1",
            }
        )
    )
    return out


def _actions(sid: str) -> tuple[list[Action], SessionProjection]:
    state = SessionProjection(sid)
    actions: list[Action] = []
    for record in _records(sid):
        if isinstance(record, HeaderRecord):
            state.apply_header(record)
        else:
            outcome = state.apply_event(record, 0, record.seq)
            actions.append(outcome.create)
            actions.extend(outcome.updates)
    actions.append(state.session_action())
    return actions, state


def test_bulk_creates_updates_and_reports_existing_ids(harness: Harness) -> None:
    view = harness.view()
    actions, _ = _actions("v-1")
    results = view.bulk(actions)
    assert [r.ok for r in results] == [True] * len(actions)
    assert [a.op for a in actions].count("update") == 2
    creates = [a for a in actions if a.op == "create"]
    again = view.bulk(creates)
    assert all(r.exists and r.status == 409 and not r.ok for r in again)
    view.refresh()
    hashes = view.content_hashes(creates)
    assert hashes == {a.doc_id: a.body["content_hash"] for a in creates}
    source = view.get_event_source("v-1:0", "v-1")
    assert source is not None
    assert (
        source["text"] == "view entry 0"
        and source["surface_state"] == "shadowed"
        and source["replaced_by"] == 4
    )
    assert view.get_event_source("v-1:99", "v-1") is None


def test_update_of_a_missing_document_is_a_404(harness: Harness) -> None:
    view = harness.view()
    view.bulk([_actions("v-2")[0][0]])  # make sure the index exists
    missing = Action("update", "events", "v-2:77", "v-2", {"doc": {"surface_state": "shadowed"}})
    (result,) = view.bulk([missing])
    assert result.status == 404 and not result.ok and not result.exists


def test_restore_session_rebuilds_the_projection_state(harness: Harness) -> None:
    view = harness.view()
    actions, state = _actions("v-3")
    view.bulk(actions)
    view.refresh()
    restored = view.restore_session("v-3")
    assert restored.next_seq == state.next_seq == 5
    assert restored.workspace_id == "ws-v"
    assert restored.header_hash == state.header_hash
    assert restored.fold.result().classification == state.fold.result().classification
    assert restored.session_action().body == state.session_action().body
    empty = view.restore_session("v-unknown")
    assert empty.next_seq == 0 and empty.header is None
