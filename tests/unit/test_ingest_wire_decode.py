"""``decode_record`` validates straight from the bytes and falls back to parsing the JSON first only
to name a rejected field: both paths must accept exactly the same records, with the same values,
and reject the others with the message the parse-first path gives."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.ingest.errors import RecordRejected
from backscroll.ingest.wire import EventRecord, HeaderRecord, decode_record, parse_record

EVENT: dict[str, Any] = {
    "v": 1,
    "kind": "event",
    "workspace_id": "ws-1",
    "session_id": "s-1",
    "seq": 3,
    "type": "message",
    "time": "2026-12-05T01:02:03.456789+00:00",
    "turn": 1,
    "role": "user",
    "text": "hello there",
    "tool_name": "grep",
    "sources": [1, 2],
    "attrs": {"tokens": 12, "ratio": 0.5, "flag": True, "note": "x", "none": None},
}
HEADER: dict[str, Any] = {
    "v": 1,
    "kind": "header",
    "workspace_id": "ws-1",
    "session_id": "s-1",
    "created_at": "2026-12-05T01:00:00Z",
    "parent_session_id": "s-0",
    "seed_length": 4,
    "delegation_depth": 1,
    "origin": "cli",
    "title": "a title",
}


def parse_first(raw: bytes) -> EventRecord | HeaderRecord:
    """The decoding before the bytes were validated directly: parse the JSON, then the mapping."""
    try:
        data = orjson.loads(raw)
        attrs = data.get("attrs") if type(data) is dict else None
        if type(attrs) is dict and any(
            type(v) is float and not -(2.0**63) < v < 2.0**64 for v in attrs.values()
        ):
            data = json.loads(raw)
    except (orjson.JSONDecodeError, ValueError, RecursionError) as err:
        raise RecordRejected("record", f"not valid UTF-8 JSON: {err}") from None
    return parse_record(data)


def outcome(decode: Any, raw: bytes) -> tuple[str, Any]:
    try:
        record = decode(raw)
    except RecordRejected as err:
        return "rejected", str(err)
    return "accepted", (type(record).__name__, record.model_dump())


def same_outcome(raw: bytes) -> None:
    assert outcome(decode_record, raw) == outcome(parse_first, raw)


@pytest.mark.parametrize(
    "text",
    [
        '{"v": true}',
        '{"v": 1.0}',
        '{"v": "1"}',
        '{"seq": 1.0}',
        '{"seq": true}',
        '{"time": 1700000000}',
        '{"time": "2026-12-05T01:02:03"}',
        '{"time": "2026-12-05T01:02:03Z"}',
        '{"text": "a\\u0000b"}',
        '{"text": "a\\ud800b"}',
        '{"tool_name": "\\udfff"}',
        '{"attrs": {"k": 12345678901234567890}}',
        '{"attrs": {"k": 1e300}}',
        '{"attrs": {"k": 1e400}}',
        '{"attrs": {"k": NaN}}',
        '{"attrs": {"k": -0.0}}',
        '{"attrs": {"k": 3.0}}',
        '{"attrs": {"k": 18446744073709551616}}',
        '{"sources": [1.0]}',
        '{"sources": [true]}',
        '{"role": null}',
        '{"kind": "header"}',
        '{"surface": {"op": "append"}}',
        '{"type": "compaction", "surface": {"op": "replace", "start": 0, "end": 2}}',
        '{"type": "compaction", "surface": {"op": "replace", "start": 0.0, "end": 2}}',
    ],
)
def test_an_edge_decodes_the_same_either_way(text: str) -> None:
    changes = text[1:-1]
    raw = orjson.dumps(EVENT)[:-1] + b"," + changes.encode() + b"}"  # later keys win in both parsers
    same_outcome(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"[1]",
        b'"x"',
        b"null",
        b"\xef\xbb\xbf" + orjson.dumps(EVENT),
        orjson.dumps(EVENT) + b"x",
        orjson.dumps(EVENT) + b" \n",
        orjson.dumps(EVENT)[:-1] + b',"title":"\xff"}',
        b"[" * 5000 + b"]" * 5000,
        b'{"a":' * 3000 + b"1" + b"}" * 3000,
        orjson.dumps(HEADER),
        orjson.dumps({**HEADER, "delegation_depth": True}),
    ],
)
def test_malformed_and_whole_records_decode_the_same_either_way(raw: bytes) -> None:
    same_outcome(raw)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(
    base=st.sampled_from([EVENT, HEADER]),
    changes=st.dictionaries(
        st.sampled_from(sorted({*EVENT, *HEADER, "surface", "extra"})), _JSON_VALUES, max_size=3
    ),
    dropped=st.sets(st.sampled_from(sorted({*EVENT, *HEADER})), max_size=2),
    ascii_only=st.booleans(),
)
def test_any_change_to_a_record_decodes_the_same_either_way(
    base: dict[str, Any], changes: dict[str, Any], dropped: set[str], ascii_only: bool
) -> None:
    record = {k: v for k, v in {**base, **changes}.items() if k not in dropped}
    same_outcome(json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))
