"""encode_record writes pydantic's serializer output directly: byte for byte what
``orjson.dumps(record.model_dump(mode="json", exclude_none=True))`` wrote before, so spooled,
re-sent and replayed records keep identical bytes (the indexer's replay check compares them)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.ingest.wire import EventRecord, HeaderRecord, encode_record, parse_record


def _reference(record: EventRecord | HeaderRecord) -> bytes:
    return orjson.dumps(record.model_dump(mode="json", exclude_none=True))


#: Valid wire text: any UTF-8 character but NUL (which the wire format rejects).
_text = st.text(st.characters(codec="utf-8", blacklist_characters="\x00"), max_size=40)
_attr_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(codec="utf-8", blacklist_characters="\x00"), max_size=20),
)
_times = st.sampled_from(
    ["2026-11-30T10:00:00Z", "2026-11-30T10:00:00.123456+05:30", "1999-01-01T00:00:00.5-08:00"]
)


@settings(max_examples=300, deadline=None)
@given(
    text=_text,
    tool=st.one_of(
        st.none(), st.text(st.characters(codec="utf-8", blacklist_characters="\x00"), max_size=12)
    ),
    attrs=st.one_of(st.none(), st.dictionaries(st.sampled_from(["a", "b.c", "k:1", "x-y"]), _attr_value)),
    time=_times,
    sources=st.one_of(st.none(), st.lists(st.integers(min_value=0, max_value=2**53 - 1), max_size=5)),
)
def test_events_encode_like_the_reference(
    text: str, tool: str | None, attrs: dict[str, Any] | None, time: str, sources: list[int] | None
) -> None:
    data: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws",
        "session_id": "s-1",
        "seq": 3,
        "type": "tool/call",
        "time": time,
        "text": text,
        "tool_name": tool,
        "attrs": attrs,
        "sources": sources,
    }
    record = parse_record(data)
    assert encode_record(record) == _reference(record)


def test_headers_and_surface_ops_encode_like_the_reference() -> None:
    header = parse_record(
        {
            "v": 1,
            "kind": "header",
            "workspace_id": "ws",
            "session_id": "s-1",
            "created_at": "2026-11-30T10:00:00+01:00",
            "title": 'Zürich \u2028 \x7f \x01 "q" \\',  # NUL is not wire-valid: another control
            "seed_length": 4,
        }
    )
    event = parse_record(
        {
            "v": 1,
            "kind": "event",
            "workspace_id": "ws",
            "session_id": "s-1",
            "seq": 0,
            "type": "assistant/message",
            "time": "2026-11-30T10:00:00Z",
            "surface": {"op": "replace", "start": 0, "end": 2},
            "text": "😀 é",
        }
    )
    for record in (header, event):
        assert encode_record(record) == _reference(record)
