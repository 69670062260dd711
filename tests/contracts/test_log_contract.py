"""The entry-log contract: validated appends with positions, the Appender's surface on every backend."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sessionlog.ingest import AppenderClosed, EventRecord, Position, RecordRejected, parse_record

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
