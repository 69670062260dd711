"""Wire format v1: every field rule, the field each rejection names, and encode → decode."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from backscroll.ingest.errors import IngestError, RecordRejected
from backscroll.ingest.wire import (
    KNOWN_EVENT_TYPES,
    MAX_ATTRS,
    MAX_INPUT_BYTES,
    MAX_RECORD_BYTES,
    MAX_TEXT_BYTES,
    SURFACE_TYPES,
    WIRE_VERSION,
    AppendOp,
    EventRecord,
    HeaderRecord,
    ReplaceOp,
    decode_record,
    encode_key,
    encode_record,
    parse_record,
)

DROP = object()  # marks a field to remove from a sample record
TIME = "2024-05-01T12:30:00Z"
SAFE_MAX = 2**53 - 1
NON_SURFACE_TYPES = [*sorted(KNOWN_EVENT_TYPES - SURFACE_TYPES), "custom/thing", "agent.x/y_z-1/q"]


def event(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-1",
        "session_id": "sess-1",
        "seq": 0,
        "type": "user/message",
        "time": TIME,
        "surface": {"op": "append"},
        "text": "hello",
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


def header(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "header",
        "workspace_id": "ws-1",
        "session_id": "sess-1",
        "created_at": TIME,
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


def rejected(data: Any) -> RecordRejected:
    """Parse ``data`` both as a Python value and, when it is JSON-encodable, as raw bytes; both must
    reject it naming the same field. Returns the error of the Python path."""
    with pytest.raises(RecordRejected) as parsed:
        parse_record(data)
    try:
        raw = orjson.dumps(data)
    except TypeError:  # not encodable as JSON (e.g. a lone surrogate): the Python path only
        return parsed.value
    with pytest.raises(RecordRejected) as decoded:
        decode_record(raw)
    assert decoded.value.field == parsed.value.field
    return parsed.value


def assert_rejected(data: Any, field: str) -> RecordRejected:
    err = rejected(data)
    assert err.field == field, str(err)
    assert str(err).startswith(f"{field}:"), "the message must start with the field it names"
    return err


# -- identifiers ------------------------------------------------------------------------------------

BAD_IDS = ["", " ", "a b", "a/b", "sess\n", "\nsess", "ü", "sess\x00", "a" * 129, "sess*"]
GOOD_IDS = ["a", "A-z_0.9:x", "a" * 128, "0", "...", "urn:x:y", "sess-01HZX3"]


@pytest.mark.parametrize("value", BAD_IDS)
@pytest.mark.parametrize("field", ["workspace_id", "session_id"])
def test_bad_ids_are_rejected_naming_the_field(field: str, value: str) -> None:
    assert_rejected(event(**{field: value}), field)
    assert_rejected(header(**{field: value}), field)


@pytest.mark.parametrize("value", BAD_IDS)
def test_bad_parent_session_id_is_rejected(value: str) -> None:
    assert_rejected(header(parent_session_id=value), "parent_session_id")


@pytest.mark.parametrize("value", GOOD_IDS)
def test_good_ids_are_accepted(value: str) -> None:
    record = parse_record(event(workspace_id=value, session_id=value))
    assert (record.workspace_id, record.session_id) == (value, value)
    parsed = parse_record(header(parent_session_id=value))
    assert isinstance(parsed, HeaderRecord) and parsed.parent_session_id == value


@pytest.mark.parametrize("field", ["workspace_id", "session_id"])
@pytest.mark.parametrize("value", [None, 7, ["a"], {"a": 1}])
def test_ids_must_be_strings(field: str, value: Any) -> None:
    assert_rejected(event(**{field: value}), field)


@pytest.mark.parametrize("field", ["workspace_id", "session_id"])
def test_ids_are_required(field: str) -> None:
    assert_rejected(event(**{field: DROP}), field)
    assert_rejected(header(**{field: DROP}), field)


# -- v and kind -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [DROP, None, 0, 2, -1, "1", True, 1.0, [1]])
def test_v_must_be_the_integer_1(value: Any) -> None:
    assert_rejected(event(v=value), "v")
    assert_rejected(header(v=value), "v")


def test_v_is_checked_before_anything_else() -> None:
    # A future version may change every other field: the reader must say "version", not "seq".
    err = assert_rejected({"v": 2, "kind": "event", "seq": "not a number"}, "v")
    assert "v1" in str(err)
    assert WIRE_VERSION == 1


@pytest.mark.parametrize("value", [DROP, None, "Event", "events", "HEADER", "", 1, True])
def test_kind_must_be_header_or_event(value: Any) -> None:
    assert_rejected(event(kind=value), "kind")


def test_kind_selects_the_model() -> None:
    assert isinstance(parse_record(event()), EventRecord)
    assert isinstance(parse_record(header()), HeaderRecord)


# -- header versus event fields ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("created_at", TIME),
        ("parent_session_id", "p-1"),
        ("seed_length", 3),
        ("delegation_depth", 1),
        ("origin", "cli"),
        ("agent_preset", "coder"),
        ("title", "A title"),
    ],
)
def test_header_fields_are_rejected_on_events(field: str, value: Any) -> None:
    err = assert_rejected(event(**{field: value}), field)
    assert "Extra inputs" in str(err)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seq", 0),
        ("type", "user/message"),
        ("time", TIME),
        ("turn", 0),
        ("role", "user"),
        ("text", "hi"),
        ("tool_name", "grep"),
        ("surface", {"op": "append"}),
        ("sources", [0]),
        ("attrs", {"a": 1}),
    ],
)
def test_event_fields_are_rejected_on_headers(field: str, value: Any) -> None:
    assert_rejected(header(**{field: value}), field)


@pytest.mark.parametrize("field", ["seq", "type", "time"])
def test_required_event_fields(field: str) -> None:
    assert_rejected(event(**{field: DROP}), field)


def test_required_header_fields_and_defaults() -> None:
    assert_rejected(header(created_at=DROP), "created_at")
    record = parse_record(header())
    assert isinstance(record, HeaderRecord)
    assert record.delegation_depth == 0
    assert record.parent_session_id is None and record.seed_length is None and record.title is None


def test_full_header_is_accepted() -> None:
    record = parse_record(
        header(
            parent_session_id="sess-0",
            seed_length=12,
            delegation_depth=2,
            origin="o" * 512,
            agent_preset="p" * 512,
            title="Đơn hàng — tháng Bảy",
        )
    )
    assert isinstance(record, HeaderRecord)
    assert (record.seed_length, record.delegation_depth, record.title) == (12, 2, "Đơn hàng — tháng Bảy")


@pytest.mark.parametrize("field", ["origin", "agent_preset", "title"])
def test_header_short_texts_are_capped_at_512_characters(field: str) -> None:
    parse_record(header(**{field: "é" * 512}))
    assert_rejected(header(**{field: "é" * 513}), field)
    assert_rejected(header(**{field: 5}), field)


@pytest.mark.parametrize("field", ["seed_length", "delegation_depth"])
@pytest.mark.parametrize("value", [-1, 2**53, True, False, 1.0, "1"])
def test_header_counters_are_bounded_integers(field: str, value: Any) -> None:
    assert_rejected(header(**{field: value}), field)


@pytest.mark.parametrize("field", ["seed_length", "delegation_depth"])
def test_header_counters_accept_their_bounds(field: str) -> None:
    assert getattr(parse_record(header(**{field: 0})), field) == 0
    assert getattr(parse_record(header(**{field: SAFE_MAX})), field) == SAFE_MAX


# -- seq and turn -----------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["seq", "turn"])
@pytest.mark.parametrize("value", [-1, 2**53, 2**64, True, False, 1.0, 1.5, "1", [1]])
def test_seq_and_turn_bounds_and_types(field: str, value: Any) -> None:
    assert_rejected(event(**{field: value}), field)


@pytest.mark.parametrize("field", ["seq", "turn"])
@pytest.mark.parametrize("value", [0, 1, SAFE_MAX])
def test_seq_and_turn_accept_their_range(field: str, value: int) -> None:
    assert getattr(parse_record(event(**{field: value})), field) == value


def test_seq_is_required_but_turn_is_optional() -> None:
    assert_rejected(event(seq=None), "seq")
    assert parse_record(event(turn=None)).turn is None  # type: ignore[union-attr]
    assert parse_record(event(turn=DROP)).turn is None  # type: ignore[union-attr]


def test_bool_is_never_an_integer_anywhere() -> None:
    assert_rejected(event(seq=True), "seq")
    assert_rejected(event(turn=True), "turn")
    assert_rejected(event(sources=[0, True]), "sources.1")
    assert_rejected(event(surface={"op": "replace", "start": True, "end": 1}), "surface.start")
    assert_rejected(header(seed_length=True), "seed_length")
    assert_rejected(header(delegation_depth=False), "delegation_depth")
    assert_rejected(event(v=True), "v")


# -- type and role ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["", "User/Message", "user message", "/user", "user/", "a//b", "a/b/c/d/e", "x" * 49, "ü/x", 5]
)
def test_bad_event_types(value: Any) -> None:
    assert_rejected(event(type=value), "type")


@pytest.mark.parametrize("value", ["x" * 48, "a/b/c/d", "custom.thing/x_y-z", "9/0"])
def test_event_type_is_an_open_vocabulary(value: str) -> None:
    assert parse_record(event(type=value, surface=DROP)).type == value  # type: ignore[union-attr]


def test_known_event_types() -> None:
    assert {
        "user/message",
        "assistant/message",
        "tool/call",
        "tool/result",
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "compaction/summary",
        "goal/set",
        "tool/disable",
        "model/change",
    } == KNOWN_EVENT_TYPES
    assert {"user/message", "assistant/message", "tool/result"} == SURFACE_TYPES
    for kind in KNOWN_EVENT_TYPES:
        surface = {"op": "append"} if kind in SURFACE_TYPES else DROP
        assert parse_record(event(type=kind, surface=surface)).type == kind  # type: ignore[union-attr]


@pytest.mark.parametrize("role", ["system", "user", "assistant", "tool", None])
def test_roles(role: str | None) -> None:
    assert parse_record(event(role=role)).role == role  # type: ignore[union-attr]


@pytest.mark.parametrize("role", ["User", "bot", "", 1])
def test_bad_roles(role: Any) -> None:
    assert_rejected(event(role=role), "role")


def test_tool_name_is_capped() -> None:
    parse_record(event(type="tool/call", surface=DROP, tool_name="t" * 512))
    assert_rejected(event(type="tool/call", surface=DROP, tool_name="t" * 513), "tool_name")


# -- time ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "2024-05-01T12:30:00",  # no offset
        "2024-05-01T12:30:00.123",
        "2024-05-01",  # a date is not a timestamp
        "yesterday",
        "",
        "2024-13-01T00:00:00Z",
        "2024-05-01T25:00:00Z",
        1714566600,
        1714566600.0,
        None,
        True,
    ],
)
def test_time_must_be_a_timestamp_with_an_offset(value: Any) -> None:
    assert_rejected(event(time=value), "time")
    assert_rejected(header(created_at=value), "created_at")


@pytest.mark.parametrize(
    ("value", "offset"),
    [
        ("2024-05-01T12:30:00Z", timedelta(0)),
        ("2024-05-01T12:30:00+00:00", timedelta(0)),
        ("2024-05-01T12:30:00.5+05:30", timedelta(hours=5, minutes=30)),
        ("2024-05-01T12:30:00.123456-08:00", timedelta(hours=-8)),
    ],
)
def test_time_keeps_its_offset(value: str, offset: timedelta) -> None:
    record = parse_record(event(time=value))
    assert isinstance(record, EventRecord)
    assert record.time.utcoffset() == offset
    assert parse_record(header(created_at=value)).created_at.utcoffset() == offset  # type: ignore[union-attr]


def test_models_take_aware_datetimes_but_not_naive_ones() -> None:
    aware = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert parse_record(event(time=aware)).time == aware  # type: ignore[union-attr]
    assert_rejected(event(time=datetime(2024, 5, 1, 12, 30)), "time")


# -- text ---------------------------------------------------------------------------------------------


def test_text_limit_is_in_utf8_bytes() -> None:
    assert len(parse_record(event(text="a" * MAX_TEXT_BYTES)).text or "") == MAX_TEXT_BYTES  # type: ignore[union-attr]
    assert_rejected(event(text="a" * (MAX_TEXT_BYTES + 1)), "text")
    two_byte = "é" * (MAX_TEXT_BYTES // 2)
    parse_record(event(text=two_byte))
    err = assert_rejected(event(text=two_byte + "é"), "text")  # 524,289 characters, 1 MiB + 2 bytes
    assert "UTF-8 bytes" in str(err)
    parse_record(event(text="😀" * (MAX_TEXT_BYTES // 4)))
    assert_rejected(event(text="😀" * (MAX_TEXT_BYTES // 4) + "a"), "text")


def test_text_is_optional_and_may_be_empty() -> None:
    assert parse_record(event(text=DROP)).text is None  # type: ignore[union-attr]
    assert parse_record(event(text="")).text == ""  # type: ignore[union-attr]


@pytest.mark.parametrize("value", [5, ["a"], {"a": "b"}, True, "\ud800"])
def test_text_must_be_valid_text(value: Any) -> None:
    assert_rejected(event(text=value), "text")


# -- surface ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SURFACE_TYPES))
def test_surface_is_required_on_surface_types(kind: str) -> None:
    err = assert_rejected(event(type=kind, surface=DROP), "surface")
    assert kind in str(err)
    assert_rejected(event(type=kind, surface=None), "surface")


@pytest.mark.parametrize("kind", NON_SURFACE_TYPES)
def test_surface_is_forbidden_elsewhere(kind: str) -> None:
    err = assert_rejected(event(type=kind, surface={"op": "append"}), "surface")
    assert kind in str(err)
    assert_rejected(event(type=kind, surface={"op": "replace", "start": 0, "end": 0}), "surface")
    assert parse_record(event(type=kind, surface=DROP)).surface is None  # type: ignore[union-attr]
    assert parse_record(event(type=kind, surface=None)).surface is None  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", sorted(SURFACE_TYPES))
def test_surface_ops(kind: str) -> None:
    append = parse_record(event(type=kind, surface={"op": "append"}))
    assert isinstance(append, EventRecord) and isinstance(append.surface, AppendOp)
    op = {"op": "replace", "start": 2, "end": 5}
    replace = parse_record(event(type=kind, seq=9, surface=op, sources=[2, 5]))
    assert isinstance(replace, EventRecord) and isinstance(replace.surface, ReplaceOp)
    assert (replace.surface.start, replace.surface.end) == (2, 5)


def test_replace_with_start_after_end_is_a_fold_matter_not_a_wire_one() -> None:
    record = parse_record(event(seq=9, surface={"op": "replace", "start": 5, "end": 2}))
    assert isinstance(record, EventRecord) and isinstance(record.surface, ReplaceOp)


@pytest.mark.parametrize(
    ("surface", "field"),
    [
        ({"op": "replace", "end": 1}, "surface.start"),
        ({"op": "replace", "start": 1}, "surface.end"),
        ({"op": "replace", "start": -1, "end": 1}, "surface.start"),
        ({"op": "replace", "start": 0, "end": 2**53}, "surface.end"),
        ({"op": "replace", "start": "0", "end": 1}, "surface.start"),
        ({"op": "replace", "start": 0.0, "end": 1}, "surface.start"),
        ({"op": "replace", "start": 0, "end": 1, "reason": "x"}, "surface.reason"),
        ({"op": "append", "start": 0}, "surface.start"),
        ({"op": "delete"}, "surface"),
        ({"op": "Append"}, "surface"),
        ({}, "surface"),
        ("append", "surface"),
        (["append"], "surface"),
        (True, "surface"),
    ],
)
def test_bad_surface_ops(surface: Any, field: str) -> None:
    assert_rejected(event(surface=surface), field)


# -- sources and attrs --------------------------------------------------------------------------------


def test_sources() -> None:
    assert parse_record(event(seq=5, sources=[0, 3, 4])).sources == [0, 3, 4]  # type: ignore[union-attr]
    assert parse_record(event(sources=[])).sources == []  # type: ignore[union-attr]
    assert len(parse_record(event(sources=[0] * 10_000)).sources or []) == 10_000  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("sources", "field"),
    [
        ([1, -1], "sources.1"),
        ([True], "sources.0"),
        ([2**53], "sources.0"),
        ([1.0], "sources.0"),
        (["1"], "sources.0"),
        ([[1]], "sources.0"),
        ("1", "sources"),
        ({"0": 1}, "sources"),
        (5, "sources"),
        ([0] * 10_001, "sources"),
    ],
)
def test_bad_sources(sources: Any, field: str) -> None:
    assert_rejected(event(sources=sources), field)


def test_attrs_scalars_are_accepted() -> None:
    attrs = {"s": "x" * 1024, "i": -(2**63), "u": 2**64 - 1, "f": 1.5, "b": False, "n": None, "a.b:c-d_e": 1}
    assert parse_record(event(attrs=attrs)).attrs == attrs  # type: ignore[union-attr]
    many = {f"k{i}": i for i in range(MAX_ATTRS)}
    assert parse_record(event(attrs=many)).attrs == many  # type: ignore[union-attr]
    assert parse_record(event(attrs={})).attrs == {}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("attrs", "field"),
    [
        ({f"k{i}": i for i in range(MAX_ATTRS + 1)}, "attrs"),
        ({"bad key": 1}, "attrs.bad key"),
        ({"": 1}, "attrs."),
        ({"k" * 65: 1}, "attrs." + "k" * 65),
        ({"ключ": 1}, "attrs.ключ"),
        ({"k": [1]}, "attrs.k"),
        ({"k": {"nested": 1}}, "attrs.k"),
        ({"k": "x" * 1025}, "attrs.k"),
        ([["k", 1]], "attrs"),
        ("k=1", "attrs"),
    ],
)
def test_bad_attrs(attrs: Any, field: str) -> None:
    assert_rejected(event(attrs=attrs), field)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_attrs_floats_must_be_finite(value: float) -> None:
    # JSON has no NaN or infinity; the encoder would silently write null, so a Python caller
    # (the appender takes mappings) is told instead.
    with pytest.raises(RecordRejected) as caught:
        parse_record(event(attrs={"k": value}))
    assert caught.value.field == "attrs.k"
    assert "finite" in str(caught.value)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**30])
def test_attrs_integers_beyond_64_bits_are_rejected_never_rounded(value: int) -> None:
    """2^64 was once stored as the float 1.8446744073709552e19."""
    assert "64-bit range" in str(assert_rejected(event(attrs={"k": value}), "attrs.k"))
    literal = orjson.dumps(event(attrs={"k": 0})).replace(b'"k":0', b'"k":' + str(value).encode())
    with pytest.raises(RecordRejected) as caught:
        decode_record(literal)
    assert caught.value.field == "attrs.k" and "64-bit range" in str(caught.value)


@pytest.mark.parametrize("value", [2**64 - 1, -(2**63), 0])
def test_attrs_integers_at_the_64_bit_edges_stay_exact(value: int) -> None:
    literal = orjson.dumps(event(attrs={"k": value}))
    record = decode_record(literal)
    assert isinstance(record, EventRecord) and record.attrs is not None
    assert record.attrs["k"] == value and type(record.attrs["k"]) is int
    assert orjson.loads(encode_record(record))["attrs"]["k"] == value


def test_large_floats_stay_floats() -> None:
    record = decode_record(orjson.dumps(event(attrs={"k": 1e19})))
    assert isinstance(record, EventRecord) and record.attrs == {"k": 1e19}


def test_a_seq_beyond_64_bits_is_rejected() -> None:
    literal = orjson.dumps(event()).replace(b'"seq":0', b'"seq":18446744073709551616')
    with pytest.raises(RecordRejected) as caught:
        decode_record(literal)
    assert caught.value.field == "seq"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"text": "a\x00b"}, "text"),
        ({"tool_name": "t\x00"}, "tool_name"),
        ({"attrs": {"k": "\x00"}}, "attrs.k"),
    ],
)
def test_nul_is_rejected_in_text_fields(fields: dict[str, Any], field: str) -> None:
    """NUL in text was once accepted although the validator said it was not."""
    assert "NUL" in str(assert_rejected(event(**fields), field))


def test_nul_is_rejected_in_header_text() -> None:
    assert "NUL" in str(assert_rejected(header(title="a\x00"), "title"))


# -- extra fields, non-objects, non-JSON, oversize ---------------------------------------------------


@pytest.mark.parametrize("field", ["foo", "Text", "surface_op", "content_hash", "V", "id"])
def test_unknown_fields_are_rejected(field: str) -> None:
    err = assert_rejected(event(**{field: 1}), field)
    assert "Extra inputs are not permitted" in str(err)
    assert_rejected(header(**{field: 1}), field)


@pytest.mark.parametrize("value", [[], [event()], 1, 1.5, "x", None, True])
def test_values_that_are_not_objects(value: Any) -> None:
    err = assert_rejected(value, "record")
    assert "JSON object" in str(err)


@pytest.mark.parametrize(
    "raw",
    [b"", b" ", b"{", b"not json", b"{'v': 1}", b'{"v": 1,}', b'{"v": NaN}', b"\xff\xfe{}", b'{"v": "\xff"}'],
)
def test_bytes_that_are_not_json(raw: bytes) -> None:
    with pytest.raises(RecordRejected) as caught:
        decode_record(raw)
    assert caught.value.field == "record"
    assert "JSON" in str(caught.value)


def test_oversize_record_is_rejected_before_parsing() -> None:
    with pytest.raises(RecordRejected) as caught:
        decode_record(b" " * (MAX_INPUT_BYTES + 1))
    assert caught.value.field == "record"
    assert str(MAX_INPUT_BYTES) in str(caught.value)
    # Any spelling of a record under the cap is read: every character of it escaped as \uXXXX.
    spelled = event(text="é" * (MAX_TEXT_BYTES // 2))
    escaped = json.dumps(spelled).encode()
    assert len(escaped) > MAX_RECORD_BYTES and decode_record(escaped) == parse_record(spelled)
    assert 6 * MAX_RECORD_BYTES < MAX_INPUT_BYTES  # a record at the cap, every byte escaped
    # The largest legal text fits well under the record cap, even with every field used.
    big = event(text="é" * (MAX_TEXT_BYTES // 2), attrs={f"k{i}": "x" * 1024 for i in range(MAX_ATTRS)})
    assert len(orjson.dumps(big)) < MAX_RECORD_BYTES
    assert decode_record(orjson.dumps(big)) == parse_record(big)


def test_first_error_names_the_field_and_the_message_lists_all() -> None:
    err = assert_rejected(event(seq=-1, time="x"), "seq")
    assert "time:" in str(err)


def test_rejection_is_a_non_retriable_value_error() -> None:
    err = rejected(event(seq=-1))
    assert isinstance(err, ValueError) and isinstance(err, IngestError)
    assert err.retriable is False
    assert err.reason and err.field == "seq"


# -- encode / decode ---------------------------------------------------------------------------------


def test_encode_omits_absent_fields_and_keys_by_session() -> None:
    record = parse_record(event())
    assert orjson.loads(encode_record(record)) == event(time="2024-05-01T12:30:00Z")
    assert encode_key(record) == b"sess-1"
    assert isinstance(record, EventRecord) and record.doc_id == "sess-1:0"
    head = parse_record(header())
    assert orjson.loads(encode_record(head)) == {**header(), "delegation_depth": 0}


def test_records_are_frozen() -> None:
    record = parse_record(event())
    with pytest.raises(ValidationError):
        record.seq = 5  # type: ignore[misc,union-attr]


ids = st.from_regex(r"[A-Za-z0-9._:-]{1,128}", fullmatch=True)
offsets = st.builds(timezone, st.integers(-18 * 60, 18 * 60).map(lambda m: timedelta(minutes=m)))


def _no_nul_text(max_size: int | None = None) -> st.SearchStrategy[str]:
    """Any text but NUL (the wire format rejects it; see test_nul_is_rejected_in_text_fields)."""
    return st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=max_size)


times = st.builds(
    lambda dt, tz: dt.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 30)),
    offsets,
)
safe_ints = st.integers(0, SAFE_MAX)
attr_values = st.one_of(
    _no_nul_text(max_size=40),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
attr_keys = st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True)
attrs = st.dictionaries(attr_keys, attr_values, max_size=MAX_ATTRS)
surfaces = st.one_of(
    st.just({"op": "append"}),
    st.builds(lambda s, e: {"op": "replace", "start": s, "end": e}, safe_ints, safe_ints),
)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from([*sorted(KNOWN_EVENT_TYPES), "custom/thing"]))
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": draw(ids),
        "session_id": draw(ids),
        "seq": draw(safe_ints),
        "type": kind,
        "time": draw(times).isoformat(),
    }
    if kind in SURFACE_TYPES:
        record["surface"] = draw(surfaces)
    optional = {
        "turn": safe_ints,
        "role": st.sampled_from(["system", "user", "assistant", "tool"]),
        "text": _no_nul_text(),
        "tool_name": _no_nul_text(max_size=512),
        "sources": st.lists(safe_ints, max_size=20),
        "attrs": attrs,
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            record[name] = draw(strategy)
    return record


@st.composite
def headers(draw: st.DrawFn) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "header",
        "workspace_id": draw(ids),
        "session_id": draw(ids),
        "created_at": draw(times).isoformat(),
    }
    optional = {
        "parent_session_id": ids,
        "seed_length": safe_ints,
        "delegation_depth": safe_ints,
        "origin": _no_nul_text(max_size=512),
        "agent_preset": _no_nul_text(max_size=512),
        "title": _no_nul_text(max_size=512),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            record[name] = draw(strategy)
    return record


@settings(max_examples=150, deadline=None)
@given(st.one_of(events(), headers()))
def test_encode_decode_round_trip(data: dict[str, Any]) -> None:
    record = decode_record(orjson.dumps(data))
    encoded = encode_record(record)
    again = decode_record(encoded)
    assert again == record
    assert encode_record(again) == encoded, "encoding is canonical"
    assert encode_key(record) == data["session_id"].encode("utf-8")
    # Times keep their instant and their offset.
    when = "time" if isinstance(record, EventRecord) else "created_at"
    original = datetime.fromisoformat(data[when])
    decoded = getattr(again, when)
    assert decoded == original and decoded.utcoffset() == original.utcoffset()
