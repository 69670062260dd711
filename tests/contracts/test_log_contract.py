"""The entry-log contract: :class:`~backscroll.ingest.EntryLog` (validated appends with positions,
session writers, the live view) on every backend."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from backscroll.ingest import (
    AppenderClosed,
    EntryLog,
    EventRecord,
    Position,
    RecordRejected,
    SequenceError,
    SessionBusy,
    parse_record,
)
from backscroll.query import Scope

from . import corpus
from .conftest import Harness


def _event(seq: int, sid: str = "log-1", **extra: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-log",
        "session_id": sid,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "surface": {"op": "append"},
        "time": "2026-11-02T10:00:00+00:00",
        "text": f"entry {seq}",
        **extra,
    }


def test_appends_return_positions_in_order_per_session(harness: Harness) -> None:
    records = [_event(seq) for seq in range(5)] + [_event(seq, sid="log-2") for seq in range(3)]
    positions = harness.append_all(records)
    assert all(isinstance(p, Position) and p.partition >= 0 and p.offset >= 0 for p in positions)
    for sid in ("log-1", "log-2"):
        mine = [p for r, p in zip(records, positions, strict=True) if r["session_id"] == sid]
        assert len({p.partition for p in mine}) == 1, "a session's records share one partition"
        offsets = [p.offset for p in mine]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)


def test_append_accepts_a_mapping_a_model_or_json_bytes(harness: Harness) -> None:
    log = harness.log()
    handles = [
        log.append(_event(0)),
        log.append(parse_record(_event(1))),
        log.append(orjson.dumps(_event(2))),
        log.append_header(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": "ws-log",
                "session_id": "log-1",
                "created_at": "2026-11-02T09:00:00Z",
            }
        ),
    ]
    log.flush(timeout=60)
    assert all(isinstance(h.result(timeout=30), Position) for h in handles)
    assert isinstance(handles[1].record, EventRecord) and handles[1].record.seq == 1
    assert harness.index().indexed == 3


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({k: v for k, v in _event(0).items() if k != "seq"}, "seq"),
        ({**_event(0), "seq": "3"}, "seq"),
        (_event(0, workspace_id="w w"), "workspace_id"),
        ({k: v for k, v in _event(0).items() if k != "surface"}, "surface"),
        (_event(0, colour="red"), "colour"),
        ({"v": 1, "kind": "header", "workspace_id": "w", "session_id": "s"}, "created_at"),
        ({**_event(0), "v": 2}, "v"),
    ],
)
def test_invalid_records_are_rejected_naming_the_field(
    harness: Harness, record: dict[str, Any], field: str
) -> None:
    log = harness.log()
    with pytest.raises(RecordRejected) as err:
        log.append(record)
    assert err.value.field == field
    assert field in str(err.value)


def test_append_header_refuses_an_event(harness: Harness) -> None:
    with pytest.raises(RecordRejected) as err:
        harness.log().append_header(_event(0))
    assert err.value.field == "kind"


def test_close_is_idempotent_and_append_after_close_fails(harness: Harness) -> None:
    log = harness.log()
    log.append(_event(0)).result(timeout=30)
    log.close()
    log.close()
    with pytest.raises(AppenderClosed):
        log.append(_event(1))


def test_a_whole_session_survives_the_round_trip_byte_for_byte(harness: Harness) -> None:
    records = [r for r in corpus.records() if r["session_id"] == "s-05"]
    harness.append_all(records)
    assert harness.index().indexed == corpus.EVENTS
    view = harness.view()
    view.refresh()
    for record in records[1:]:
        source = view.get_event_source(f"s-05:{record['seq']}", "s-05")
        assert source is not None
        assert source["seq"] == record["seq"] and source["type"] == record["type"]
        assert (source.get("text") or source.get("args") or "") == (record.get("text") or "")


def test_both_backends_implement_the_entry_log_interface(harness: Harness) -> None:
    log = harness.log()
    assert isinstance(log, EntryLog)
    assert isinstance(log.topic, str) and log.topic
    assert not log.closed


def test_append_many_validates_everything_before_appending_anything(harness: Harness) -> None:
    log = harness.log()
    with pytest.raises(RecordRejected) as err:
        log.append_many([_event(0), {**_event(1), "seq": -1}])
    assert err.value.field == "seq"
    handles = log.append_many([_event(0), _event(1, sid="log-2")])
    log.flush(timeout=60)
    assert [h.record.session_id for h in handles] == ["log-1", "log-2"]
    assert all(isinstance(h.result(timeout=30), Position) for h in handles)
    assert harness.index().indexed == 2, "the rejected batch left nothing behind"


def test_a_session_writer_sequences_and_owns_its_session(harness: Harness) -> None:
    log = harness.log()
    with log.session("ws-log", "log-w") as writer:
        first = writer.header()
        events = [
            writer.append(type="user/message", role="user", surface={"op": "append"}, text=t) for t in "abc"
        ]
        assert writer.next_seq == 3
        with pytest.raises(SessionBusy):
            log.session("ws-log", "log-w")
        with pytest.raises(SessionBusy):
            log.append(_event(3, sid="log-w"))
        with pytest.raises(SequenceError):
            writer.append(seq=7, type="user/message", role="user", surface={"op": "append"}, text="x")
    log.flush(timeout=60)
    assert isinstance(first.result(timeout=30), Position)
    assert [e.record.seq for e in events if isinstance(e.record, EventRecord)] == [0, 1, 2]
    # a new writer resumes after what this process wrote
    with log.session("ws-log", "log-w") as again:
        assert again.next_seq == 3
    assert harness.index().indexed == 3


def test_the_live_view_holds_appended_events_until_released(harness: Harness) -> None:
    log = harness.log()
    log.append_header(
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-log",
            "session_id": "log-1",
            "created_at": "2026-11-02T09:00:00Z",
        }
    )
    handles = [log.append(_event(seq)) for seq in range(3)]
    log.flush(timeout=60)
    positions = [h.result(timeout=30) for h in handles]
    assert log.live_sessions() == ["log-1"]
    assert [h.session_id for h in log.live_headers()] == ["log-1"]
    assert [e.seq for e in log.live_events("log-1")] == [0, 1, 2]
    entries = log.live_entries("log-1")
    assert [(e.partition, e.offset) for e in entries] == [(p.partition, p.offset) for p in positions]
    assert log.release_through(positions[1].partition, positions[1].offset) == 2
    assert [e.seq for e in log.live_events("log-1")] == [2]
    assert log.release_session_through("log-1", 2) == 1
    assert log.live_sessions() == [] and log.live_headers() == []


def test_a_reader_serves_this_processs_unindexed_appends_from_the_live_view(harness: Harness) -> None:
    log = harness.log()
    log.append_header(
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws-log",
            "session_id": "log-live",
            "created_at": "2026-11-02T09:00:00Z",
        }
    )
    for seq in range(3):
        log.append(_event(seq, sid="log-live"))
    log.flush(timeout=60)
    reader = harness.reader(Scope.workspace("ws-log"), live=log)  # nothing indexed yet
    window = reader.read_event("log-live", 1, before=1, after=1)
    assert [(e.seq, e.text) for e in window.events] == [(0, "entry 0"), (1, "entry 1"), (2, "entry 2")]
    assert window.target.live
