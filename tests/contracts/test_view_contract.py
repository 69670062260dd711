"""The SessionView contract: both views give the same domain outcomes for the same writes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from backscroll.indexer.ports import Outcome
from backscroll.indexer.projector import Action, SessionProjection
from backscroll.ingest import EventRecord, HeaderRecord, parse_record

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


def test_writes_report_created_written_replay_and_conflict(harness: Harness) -> None:
    view = harness.view()
    actions, _ = _actions("v-1")
    results = view.write(actions)
    expected = [Outcome.CREATED if a.op == "create" else Outcome.WRITTEN for a in actions]
    assert [r.outcome for r in results] == expected
    assert [a.op for a in actions].count("update") == 2
    creates = [a for a in actions if a.op == "create"]
    again = view.write(creates)
    assert [r.outcome for r in again] == [Outcome.REPLAY] * len(creates)
    changed = replace(creates[0], body={**creates[0].body, "content_hash": "other", "text": "other"})
    (conflict,) = view.write([changed])
    assert conflict.outcome is Outcome.CONFLICT and conflict.reason and conflict.existing is not None
    assert conflict.existing["text"] == "view entry 0" and conflict.existing["surface_state"] == "shadowed"
    assert conflict.existing["replaced_by"] == 4


def test_update_of_a_missing_document_is_rejected_with_a_reason(harness: Harness) -> None:
    view = harness.view()
    view.write([_actions("v-2")[0][0]])  # make sure the index exists
    missing = Action("update", "events", "v-2:77", "v-2", {"doc": {"surface_state": "shadowed"}})
    (result,) = view.write([missing])
    assert result.outcome is Outcome.REJECTED and result.reason


def test_restore_sessions_rebuilds_the_projection_state(harness: Harness) -> None:
    view = harness.view()
    actions, state = _actions("v-3")
    view.write(actions)
    view.refresh()
    restored = view.restore_sessions(["v-3", "v-unknown"])
    assert restored["v-3"].next_seq == state.next_seq == 5
    assert restored["v-3"].workspace_id == "ws-v"
    assert restored["v-3"].header_hash == state.header_hash
    assert restored["v-3"].fold.result().classification == state.fold.result().classification
    assert restored["v-3"].session_action().body == state.session_action().body
    empty = restored["v-unknown"]
    assert empty.next_seq == 0 and empty.header is None


def test_forget_session_deletes_its_events(harness: Harness) -> None:
    view = harness.view()
    actions, _ = _actions("v-4")
    view.write(actions)
    view.refresh()
    assert view.forget_session("v-4") == 5
    view.refresh()
    assert view.restore_sessions(["v-4"])["v-4"].next_seq == 0


def test_compact_keeps_every_document_and_can_run_twice(harness: Harness) -> None:
    view = harness.view()
    actions, state = _actions("v-5")
    view.write(actions)
    view.refresh()
    before = {a.doc_id: view.get_event_source(a.doc_id, a.routing) for a in actions if a.target == "events"}
    view.compact()
    view.compact()
    view.refresh()
    after = {a.doc_id: view.get_event_source(a.doc_id, a.routing) for a in actions if a.target == "events"}
    assert after == before and all(doc is not None for doc in after.values())
    assert view.restore_sessions(["v-5"])["v-5"].session_action().body == state.session_action().body
