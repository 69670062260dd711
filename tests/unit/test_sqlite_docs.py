"""The embedded event row layout: the ``doc`` JSON leaves out what the columns hold or give back
exactly (a UTC time, the log position), reading puts it back, and rows written by the older layout
(whole document in ``doc``) read the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.indexer.sqlite.docs import (
    EVENT_COLUMNS,
    event_instant,
    event_source,
    pack_event_doc,
    split_entry_id,
)
from backscroll.indexer.sqlite.rows import time_us
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest.wire import entry_id, parse_record

DOC: dict[str, Any] = {
    "schema": 1, "workspace_id": "w", "session_id": "s", "seq": 3, "type": "tool/call",
    "time": "2026-11-04T00:00:00+00:00", "has_text": True, "text_bytes": 5, "surface_state": "current",
    "content_hash": "ab" * 16, "tool_name": "grep", "args": "x=1 y", "turn": 2, "offset": 7,
}  # fmt: skip


def _columns(doc: dict[str, Any]) -> list[Any]:
    row = doc | {"time_us": time_us(doc["time"]), "log_offset": int(doc.get("offset") or 0)}
    return [row.get(name.strip()) for name in EVENT_COLUMNS.split(",")]


def _packed(doc: dict[str, Any]) -> bytes:
    *_, offset = _columns(doc)
    return pack_event_doc(doc, offset)


def test_the_doc_leaves_the_columns_and_the_text_out_and_reading_puts_them_back() -> None:
    packed = orjson.loads(_packed(DOC))
    assert set(packed) == {"schema", "text_bytes", "turn", "offset"}  # no partition: the offset stays
    assert event_source(_columns(DOC), _packed(DOC), "x=1 y") == DOC
    without_text = event_source(_columns(DOC), _packed(DOC))
    assert "args" not in without_text and without_text["tool_name"] == "grep"


def test_a_utc_time_and_the_log_position_come_back_from_the_columns() -> None:
    doc = DOC | {"time": "2026-11-04T00:00:00.250000+00:00", "partition": 0}
    assert set(orjson.loads(_packed(doc))) == {"schema", "text_bytes", "turn"}
    assert event_source(_columns(doc), _packed(doc), "x=1 y") == doc


@pytest.mark.parametrize(
    "changed",
    [
        {"time": "2026-11-04T02:00:00+02:00"},  # another offset: the column holds only the instant
        {"time": "2026-11-04T00:00:00Z"},  # not as isoformat() writes it
        {"time": "2026-11-04T00:00:00.000000+00:00"},
        {"time": "2026-11-04T00:00:00.25+00:00"},
        {"partition": 3},
        {"partition": 0, "offset": 0},  # offset 0 is also the column of a document without one
        {"partition": 0, "offset": None},
    ],
)
def test_what_the_columns_cannot_give_back_exactly_stays_in_the_doc(changed: dict[str, Any]) -> None:
    doc = DOC | changed
    packed = orjson.loads(_packed(doc))
    assert {key: packed[key] for key in changed} == changed
    assert event_source(_columns(doc), _packed(doc), "x=1 y") == doc


def test_a_document_without_a_log_position_reads_back_without_one() -> None:
    doc = {key: value for key, value in DOC.items() if key != "offset"}
    assert event_source(_columns(doc), _packed(doc), "x=1 y") == doc


def test_a_row_of_the_older_layout_reads_the_same() -> None:
    old = {key: value for key, value in DOC.items() if key != "args"} | {"text_field": "args"}
    assert event_source(_columns(DOC), orjson.dumps(old), "x=1 y") == DOC


def test_an_event_id_is_its_session_and_seq() -> None:
    assert entry_id("a:b", 12) == "a:b:12"
    assert split_entry_id("a:b:12") == ("a:b", 12)
    assert event_instant(time_us("2026-11-04T00:00:00.000001+00:00")).isoformat() == (
        "2026-11-04T00:00:00.000001+00:00"
    )
    for bad in ("12", ":12", "s:x"):
        with pytest.raises(ValueError):
            split_entry_id(bad)


@pytest.fixture
def view(tmp_path: Path) -> Any:
    with SQLiteView(tmp_path / "v.db") as made:
        made.write_records(
            [
                parse_record({"v": 1, "kind": "header", "workspace_id": "w", "session_id": "s",
                              "created_at": "2026-11-04T00:00:00+00:00"}),
                parse_record({"v": 1, "kind": "event", "workspace_id": "w", "session_id": "s", "seq": 0,
                              "type": "user/message", "time": "2026-11-04T00:00:00+00:00", "text": "hello",
                              "surface": {"op": "append"}}),
            ]
        )  # fmt: skip
        yield made


def test_rows_written_in_either_layout_read_back_whole(view: SQLiteView) -> None:
    new = view.get_event_source("s:0", "s")
    assert new is not None and new["text"] == "hello" and new["session_id"] == "s" and new["seq"] == 0
    (stored,) = view.conn.execute("SELECT doc FROM events").fetchone()
    assert "session_id" not in orjson.loads(stored)
    old = {key: value for key, value in new.items() if key != "text"} | {"text_field": "text"}
    view.conn.execute("UPDATE events SET doc = ?", (orjson.dumps(old),))
    assert view.get_event_source("s:0", "s") == new
    assert view.restore_session("s").entry_count == 1


@pytest.mark.parametrize(
    "micros", [0, 1, 999_999, 1_525_860_107_000_000, 1_525_860_107_123_456, 253_402_300_799_999_999]
)
def test_every_utc_time_isoformat_writes_comes_back_exactly(micros: int) -> None:
    written = event_instant(micros).isoformat()
    doc = DOC | {"time": written}
    assert "time" not in orjson.loads(_packed(doc))
    assert event_source(_columns(doc), _packed(doc), "x=1 y")["time"] == written
