"""The embedded event row layout: the ``doc`` JSON leaves out what the columns hold, reading puts
it back, and rows written by the older layout (whole document in ``doc``) read the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sessionlog.indexer.sqlite_docs import EVENT_COLUMNS, event_source, pack_event_doc
from sessionlog.indexer.sqlite_view import SQLiteView
from sessionlog.ingest.wire import parse_record

DOC: dict[str, Any] = {
    "schema": 1, "workspace_id": "w", "session_id": "s", "seq": 3, "type": "tool/call",
    "time": "2026-11-04T00:00:00+00:00", "has_text": True, "text_bytes": 5, "surface_state": "current",
    "content_hash": "ab" * 16, "tool_name": "grep", "args": "x=1 y", "turn": 2, "offset": 7,
}  # fmt: skip


def _columns(doc: dict[str, Any]) -> list[Any]:
    return [doc.get(name.strip()) for name in EVENT_COLUMNS.split(",")]


def test_the_doc_leaves_the_columns_and_the_text_out_and_reading_puts_them_back() -> None:
    packed = orjson.loads(pack_event_doc(DOC))
    assert set(packed) == {"schema", "time", "text_bytes", "turn", "offset"}
    assert event_source(_columns(DOC), pack_event_doc(DOC), "x=1 y") == DOC
    without_text = event_source(_columns(DOC), pack_event_doc(DOC))
    assert "args" not in without_text and without_text["tool_name"] == "grep"


def test_a_row_of_the_older_layout_reads_the_same() -> None:
    old = {key: value for key, value in DOC.items() if key != "args"} | {"text_field": "args"}
    assert event_source(_columns(DOC), orjson.dumps(old), "x=1 y") == DOC


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
