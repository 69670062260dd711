"""Per-session projection state: counters, replays, shadow updates and header conflicts. No I/O."""

from __future__ import annotations

from typing import Any

import pytest

from backscroll.indexer.document import content_hash
from backscroll.indexer.fold import FoldEvent
from backscroll.indexer.projector import MAX_RECORDED_VIOLATIONS, SessionProjection
from backscroll.ingest.wire import EventRecord, HeaderRecord, parse_record

SID = "sess-1"


def ev(seq: int, kind: str = "user/message", *, time: str | None = None, **fields: Any) -> EventRecord:
    data: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-1",
        "session_id": SID,
        "seq": seq,
        "type": kind,
        "time": time or f"2024-05-01T12:00:{seq % 60:02d}Z",
        "text": f"entry {seq}",
    }
    if kind in ("user/message", "assistant/message", "tool/result"):
        data["surface"] = {"op": "append"}
    data.update(fields)
    record = parse_record(data)
    assert isinstance(record, EventRecord)
    return record


def head(**fields: Any) -> HeaderRecord:
    data: dict[str, Any] = {
        "v": 1,
        "kind": "header",
        "workspace_id": "ws-1",
        "session_id": SID,
        "created_at": "2024-05-01T11:59:00Z",
        **fields,
    }
    record = parse_record(data)
    assert isinstance(record, HeaderRecord)
    return record


def fed(*records: EventRecord | HeaderRecord) -> SessionProjection:
    state = SessionProjection(session_id=SID)
    for offset, record in enumerate(records):
        if isinstance(record, HeaderRecord):
            state.apply_header(record)
        else:
            state.apply_event(record, partition=0, offset=offset)
    return state


# -- session document counters ----------------------------------------------------------------------


def test_session_document_counts_a_contiguous_log() -> None:
    state = fed(head(title="Quarterly numbers", delegation_depth=1), *(ev(s) for s in range(5)))
    action = state.session_action()
    assert (action.op, action.target, action.doc_id, action.routing) == ("index", "sessions", SID, SID)
    body = action.body
    assert body["last_seq"] == 4 and body["entry_count"] == 5 and body["seq_gaps"] == 0
    assert body["has_header"] is True and body["title"] == "Quarterly numbers"
    assert body["delegation_depth"] == 1
    assert body["workspace_id"] == "ws-1" and body["session_id"] == SID
    assert body["surface_valid"] is True and body["violations"] == []
    assert body["last_activity"] == ev(4).time.isoformat()


def test_session_document_without_header_or_events() -> None:
    body = SessionProjection(session_id=SID).session_action().body
    assert body["has_header"] is False and body["parent_session_id"] is None
    assert body["last_seq"] == -1 and body["entry_count"] == 0 and body["last_activity"] is None
    body = fed(ev(0)).session_action().body
    assert body["has_header"] is False and body["workspace_id"] == "ws-1" and body["entry_count"] == 1


def test_seq_gaps_are_counted_and_invalidate_the_surface() -> None:
    state = fed(ev(0), ev(1), ev(4))
    body = state.session_action().body
    assert body["last_seq"] == 4 and body["seq_gaps"] == 2 and body["entry_count"] == 3
    assert body["surface_valid"] is False
    assert [v["code"] for v in body["violations"]] == ["seq_gap"]
    assert state.next_seq == 5


def test_last_activity_compares_instants_not_strings() -> None:
    # 10:00+05:00 is 05:00Z, earlier than 06:00Z, although its text sorts after it.
    state = fed(ev(0, time="2024-05-01T10:00:00+05:00"), ev(1, time="2024-05-01T06:00:00+00:00"))
    assert state.last_activity == "2024-05-01T06:00:00+00:00"
    state.apply_event(ev(2, time="2024-05-01T01:00:00Z"), 0, 9)  # a clock that went back
    assert state.last_activity == "2024-05-01T06:00:00+00:00"


def test_violations_are_recorded_but_capped() -> None:
    records = [ev(0)] + [ev(s, "turn/start", sources=[0]) for s in range(1, 80)]  # a fold violation each
    state = fed(*records)
    body = state.session_action().body
    assert body["surface_valid"] is False
    assert len(state.fold.violations) == 79
    assert len(body["violations"]) == MAX_RECORDED_VIOLATIONS
    first = body["violations"][0]
    assert set(first) == {"seq", "code", "message"} and first["seq"] == 1
    assert first["code"] == state.fold.violations[0].code


# -- event actions ----------------------------------------------------------------------------------


def test_event_create_action() -> None:
    state = SessionProjection(session_id=SID)
    outcome = state.apply_event(ev(0), partition=3, offset=77)
    assert not outcome.replay and outcome.updates == () and outcome.violations == ()
    create = outcome.create
    assert (create.op, create.target, create.doc_id, create.routing) == ("create", "events", f"{SID}:0", SID)
    assert create.body["surface_state"] == "current"
    assert (create.body["partition"], create.body["offset"]) == (3, 77)
    assert create.body["content_hash"] == content_hash(ev(0))
    assert state.dirty


def test_shadow_updates_carry_routing_and_the_replacer() -> None:
    state = fed(ev(0), ev(1, "assistant/message"), ev(2, "tool/call"))
    replace = ev(3, "assistant/message", surface={"op": "replace", "start": 0, "end": 1}, sources=[0, 1])
    outcome = state.apply_event(replace, partition=0, offset=3)
    assert outcome.violations == ()
    assert outcome.create.body["surface_state"] == "current"
    assert (outcome.create.body["replace_start"], outcome.create.body["replace_end"]) == (0, 1)
    assert [u.doc_id for u in outcome.updates] == [f"{SID}:0", f"{SID}:1"]
    for update in outcome.updates:
        assert (update.op, update.target, update.routing) == ("update", "events", SID)
        assert update.body == {"doc": {"surface_state": "shadowed", "replaced_by": 3}}


def test_events_off_the_surface_are_log_only() -> None:
    state = fed(ev(0))
    outcome = state.apply_event(ev(1, "model/change"), 0, 1)
    assert outcome.create.body["surface_state"] == "log-only"


# -- replays ----------------------------------------------------------------------------------------


def test_seq_below_next_is_a_replay_that_changes_nothing() -> None:
    state = fed(ev(0), ev(1), ev(2))
    before = state.session_action().body
    state.dirty = False
    outcome = state.apply_event(ev(1), partition=0, offset=99)
    assert outcome.replay and outcome.updates == () and outcome.violations == ()
    assert outcome.create.op == "create" and outcome.create.doc_id == f"{SID}:1"
    assert outcome.create.body["content_hash"] == content_hash(ev(1)), "the store compares hashes"
    assert state.next_seq == 3 and not state.dirty
    assert state.session_action().body == before


def test_a_replay_keeps_the_classification_it_had() -> None:
    replace = ev(2, "assistant/message", surface={"op": "replace", "start": 0, "end": 0}, sources=[0])
    state = fed(ev(0), ev(1, "assistant/message"), replace)
    assert state.apply_event(ev(0), 0, 10).create.body["surface_state"] == "shadowed"
    assert state.apply_event(ev(1, "assistant/message"), 0, 11).create.body["surface_state"] == "current"


def test_a_conflicting_replay_is_still_a_replay_with_its_own_hash() -> None:
    state = fed(ev(0), ev(1))
    outcome = state.apply_event(ev(1, text="different"), 0, 12)
    assert outcome.replay
    assert outcome.create.body["content_hash"] != content_hash(ev(1))


def test_a_late_seq_into_a_gap_fills_it_log_only() -> None:
    state = fed(ev(0), ev(3))
    assert (state.seq_gaps, state.entry_count) == (2, 2)
    outcome = state.apply_event(ev(1), 0, 5)
    # A new entry (not a replay: nothing was indexed under that seq), outside the folded surface.
    assert not outcome.replay and outcome.create.body["surface_state"] == "log-only"
    assert (state.seq_gaps, state.entry_count) == (1, 3)
    again = state.apply_event(ev(1), 0, 6)
    assert again.replay and (state.seq_gaps, state.entry_count) == (1, 3)


def test_seqs_out_of_order_count_every_entry_once() -> None:
    """Appending seq 1, 0, 2 indexes three entries and leaves no gap."""
    state = fed(ev(1), ev(0), ev(2))
    body = state.session_action().body
    assert (body["entry_count"], body["seq_gaps"], body["last_seq"]) == (3, 0, 2)


def test_restore_derives_the_gaps_from_the_stored_events() -> None:
    state = fed(ev(0), ev(4), ev(2))
    doc = state.session_action().body
    events = [FoldEvent.from_record(ev(seq)) for seq in (0, 2, 4)]
    restored = SessionProjection.restore(SID, doc, events)
    assert restored.missing == [(1, 2), (3, 4)]
    assert (restored.seq_gaps, restored.entry_count) == (2, 3) == (doc["seq_gaps"], doc["entry_count"])
    assert not restored.apply_event(ev(3), 0, 9).replay
    assert restored.seq_gaps == 1


# -- headers ----------------------------------------------------------------------------------------


def test_header_new_same_conflict() -> None:
    state = SessionProjection(session_id=SID)
    assert state.apply_header(head(title="A")) == "new"
    assert state.dirty and state.workspace_id == "ws-1"
    assert state.apply_header(head(title="A")) == "same"
    assert state.apply_header(head(title="B")) == "conflict"
    assert state.apply_header(head(title="A", seed_length=3)) == "conflict"
    assert state.header is not None and state.header["title"] == "A", "a conflict never overwrites"


def test_same_instant_in_another_offset_is_a_different_header() -> None:
    state = fed(head())
    assert state.apply_header(head(created_at="2024-05-01T13:59:00+02:00")) == "conflict"


@pytest.mark.parametrize(
    "fields", [{}, {"title": "T", "seed_length": 4, "parent_session_id": "p-1", "origin": "o"}]
)
def test_restore_recognises_the_header_it_wrote(fields: dict[str, Any]) -> None:
    state = fed(head(**fields), ev(0), ev(1, "assistant/message"))
    doc = state.session_action().body
    restored = SessionProjection.restore(
        SID, doc, [FoldEvent.from_record(ev(0)), FoldEvent.from_record(ev(1, "assistant/message"))]
    )
    assert restored.apply_header(head(**fields)) == "same"
    assert restored.apply_header(head(title="other")) == "conflict"
    assert restored.next_seq == 2 and restored.workspace_id == "ws-1"
    assert restored.apply_event(ev(1, "assistant/message"), 0, 5).replay
    assert restored.session_action().body == doc


def test_restore_without_a_session_document() -> None:
    restored = SessionProjection.restore(SID, None, [])
    assert restored.next_seq == 0 and restored.header is None
    assert restored.apply_header(head()) == "new"


def test_last_activity_set_from_outside_is_what_the_next_event_compares_with() -> None:
    state = fed(ev(0, time="2024-05-01T06:00:00+00:00"))
    state.last_activity = "2024-05-02T00:00:00+00:00"  # a restored session document
    state.apply_event(ev(1, time="2024-05-01T07:00:00+00:00"), 0, 1)
    assert state.last_activity == "2024-05-02T00:00:00+00:00"
    state.apply_event(ev(2, time="2024-05-02T01:00:00+02:00"), 0, 2)  # 23:00Z, earlier
    assert state.last_activity == "2024-05-02T00:00:00+00:00"
    state.apply_event(ev(3, time="2024-05-02T03:00:00+02:00"), 0, 3)  # 01:00Z, later
    assert state.last_activity == "2024-05-02T03:00:00+02:00"
