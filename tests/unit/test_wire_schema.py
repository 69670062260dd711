"""The committed JSON Schema of wire format v1 is the generated one, and agrees with the models."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.ingest import schema as schema_module
from backscroll.ingest.errors import RecordRejected
from backscroll.ingest.schema import SCHEMA_ID, wire_json_schema
from backscroll.ingest.wire import KNOWN_EVENT_TYPES, MAX_ATTRS, MAX_TEXT_BYTES, SURFACE_TYPES, decode_record

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "wire-v1.schema.json"
VALIDATOR = jsonschema.Draft202012Validator(wire_json_schema())
DROP = object()


def _text(max_size: int) -> st.SearchStrategy[str]:
    """Text a valid record may hold: anything but NUL (and lone surrogates, which JSON cannot carry)."""
    return st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=max_size)


def event(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": "ws-1",
        "session_id": "sess-1",
        "seq": 0,
        "type": "user/message",
        "time": "2024-05-01T12:30:00Z",
        "surface": {"op": "append"},
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


def header(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "header",
        "workspace_id": "ws-1",
        "session_id": "sess-1",
        "created_at": "2024-05-01T12:30:00Z",
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not DROP}


def models_accept(value: Any) -> bool:
    try:
        decode_record(orjson.dumps(value))
    except RecordRejected:
        return False
    return True


def schema_accepts(value: Any) -> bool:
    return bool(VALIDATOR.is_valid(value))


# -- the committed file ------------------------------------------------------------------------------


def test_committed_schema_is_the_generated_one() -> None:
    committed = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert committed == wire_json_schema(), (
        "schemas/wire-v1.schema.json is stale; regenerate it with "
        "python -m backscroll.ingest.schema > schemas/wire-v1.schema.json"
    )


def test_committed_file_is_byte_for_byte_the_module_output(capsys: pytest.CaptureFixture[str]) -> None:
    schema_module.main()
    assert capsys.readouterr().out == SCHEMA_FILE.read_text(encoding="utf-8")


def test_schema_is_a_valid_2020_12_schema_with_identity() -> None:
    schema = wire_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == SCHEMA_ID == "urn:backscroll:schema:wire-v1"
    assert schema["title"] and "wire format v1" in schema["description"]
    assert {"HeaderRecord", "EventRecord", "AppendOp", "ReplaceOp"} <= set(schema["$defs"])


def test_generation_is_deterministic_and_not_shared() -> None:
    first = wire_json_schema()
    first["$defs"]["EventRecord"]["properties"].clear()
    assert wire_json_schema()["$defs"]["EventRecord"]["properties"], "each call builds a fresh schema"


# -- agreement with the models -------------------------------------------------------------------------

GOOD = [
    event(),
    event(text="hello", turn=0, role="user"),
    event(
        seq=9,
        type="assistant/message",
        time="2024-05-01T12:30:00.123456+05:30",
        turn=2,
        role="assistant",
        text="Đơn hàng",
        surface={"op": "replace", "start": 3, "end": 8},
        sources=[3, 5, 8],
        attrs={"s": "x" * 1024, "i": -5, "f": 1.5, "b": True, "n": None, "call_id": "c-1"},
    ),
    event(type="tool/call", surface=DROP, tool_name="grep", text='{"q": "x"}'),
    event(type="tool/result", tool_name="grep", role="tool", text="", surface={"op": "append"}),
    event(type="model/change", surface=None),
    event(type="custom.agent/thing_1", surface=DROP, attrs={}),
    event(seq=2**53 - 1, turn=2**53 - 1, time="1999-12-31T23:59:59-08:00"),
    event(time="0001-01-01T00:00:00Z"),
    event(time="0001-01-01T01:00:00+01:00"),
    event(time="2024-05-01T12:30:00+18:00"),
    event(time="2024-05-01T12:30:00-18:00"),
    event(time="9999-12-31T23:59:59.999999Z"),
    header(created_at="9999-12-31T22:59:59-01:00"),
    event(workspace_id="w" * 128, session_id="A-z_0.9:x"),
    event(attrs={f"k{i}": i for i in range(MAX_ATTRS)}),
    event(sources=[]),
    header(),
    header(parent_session_id=None, seed_length=0, delegation_depth=0),
    header(
        parent_session_id="sess-0",
        seed_length=12,
        delegation_depth=3,
        origin="cli",
        agent_preset="coder",
        title="t" * 512,
        created_at="2024-05-01T12:30:00.5+00:00",
    ),
    *(
        event(type=kind, surface={"op": "append"} if kind in SURFACE_TYPES else DROP)
        for kind in KNOWN_EVENT_TYPES
    ),
]

BAD = {
    "v missing": event(v=DROP),
    "v 2": event(v=2),
    "v string": event(v="1"),
    "v bool": event(v=True),
    "v null": header(v=None),
    "kind missing": event(kind=DROP),
    "kind unknown": event(kind="Event"),
    "workspace_id missing": event(workspace_id=DROP),
    "session_id missing": header(session_id=DROP),
    "seq missing": event(seq=DROP),
    "type missing": event(type=DROP),
    "time missing": event(time=DROP),
    "created_at missing": header(created_at=DROP),
    "id empty": event(session_id=""),
    "id space": event(workspace_id="a b"),
    "id long": event(session_id="s" * 129),
    "id non-ascii": header(session_id="ü"),
    "parent id bad": header(parent_session_id="a/b"),
    "seq negative": event(seq=-1),
    "seq too big": event(seq=2**53),
    "seq string": event(seq="1"),
    "seq bool": event(seq=True),
    "seq null": event(seq=None),
    "seq fraction": event(seq=1.5),
    "turn negative": event(turn=-1),
    "turn bool": event(turn=False),
    "type uppercase": event(type="User/Message"),
    "type too deep": event(type="a/b/c/d/e", surface=DROP),
    "role unknown": event(role="bot"),
    "time naive": event(time="2024-05-01T12:30:00"),
    "time date only": event(time="2024-05-01"),
    "time number": event(time=1714566600),
    "time words": header(created_at="yesterday"),
    "time in year 0": event(time="0000-06-01T00:00:00Z"),
    "offset past 18 hours": event(time="2024-05-01T12:30:00+18:01"),
    "offset of 23:59": header(created_at="2024-05-01T12:30:00-23:59"),
    "text number": event(text=5),
    "text over 1 MiB characters": event(text="a" * (MAX_TEXT_BYTES + 1)),
    "text with NUL": event(text="a\x00b"),
    "title with NUL": header(title="\x00"),
    "attrs string with NUL": event(attrs={"k": "\x00"}),
    "tool_name long": event(type="tool/call", surface=DROP, tool_name="t" * 513),
    "surface missing": event(surface=DROP),
    "surface null on a surface type": event(type="tool/result", surface=None),
    "surface on tool/call": event(type="tool/call", surface={"op": "append"}),
    "surface on a custom type": event(type="custom/x", surface={"op": "replace", "start": 0, "end": 0}),
    "op unknown": event(surface={"op": "delete"}),
    "op missing": event(surface={}),
    "surface string": event(surface="append"),
    "replace without end": event(surface={"op": "replace", "start": 1}),
    "replace negative": event(surface={"op": "replace", "start": -1, "end": 1}),
    "replace too big": event(surface={"op": "replace", "start": 0, "end": 2**53}),
    "replace extra key": event(surface={"op": "replace", "start": 0, "end": 1, "x": 1}),
    "append extra key": event(surface={"op": "append", "start": 0}),
    "sources negative": event(sources=[-1]),
    "sources bool": event(sources=[True]),
    "sources string": event(sources="1"),
    "sources too many": event(sources=[0] * 10_001),
    "attrs too many": event(attrs={f"k{i}": i for i in range(MAX_ATTRS + 1)}),
    "attrs bad key": event(attrs={"a b": 1}),
    "attrs empty key": event(attrs={"": 1}),
    "attrs nested list": event(attrs={"k": [1]}),
    "attrs nested object": event(attrs={"k": {"a": 1}}),
    "attrs long string": event(attrs={"k": "x" * 1025}),
    "attrs not an object": event(attrs=[["k", 1]]),
    "extra field": event(foo=1),
    "header field on event": event(created_at="2024-05-01T12:30:00Z"),
    "event field on header": header(seq=0),
    "seed_length negative": header(seed_length=-1),
    "seed_length too big": header(seed_length=2**53),
    "delegation_depth bool": header(delegation_depth=True),
    "title long": header(title="t" * 513),
    "array": [event()],
    "string": "sess-1",
    "number": 1,
    "null": None,
}


@pytest.mark.parametrize("record", GOOD, ids=lambda r: f"{r['kind']}-{r.get('type', '')}-{len(str(r))}")
def test_good_records_pass_both(record: dict[str, Any]) -> None:
    assert models_accept(record)
    errors = [e.message for e in VALIDATOR.iter_errors(record)]
    assert errors == []


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_records_fail_both(name: str) -> None:
    record = BAD[name]
    assert not models_accept(record), "the models accept it"
    assert not schema_accepts(record), "the schema accepts it"


#: Where JSON Schema cannot say what the models check. The schema is looser: an integral float is an
#: "integer" to JSON Schema; it counts characters, not bytes; Python's ``re`` (used by the jsonschema
#: package, unlike ECMA-262) lets ``$`` match before a final newline; a pattern cannot know month lengths.
SCHEMA_LOOSER = {
    "v 1.0": event(v=1.0),
    "seq 1.0": event(seq=1.0),
    "text over 1 MiB of UTF-8 under 1 Mi characters": event(text="é" * (MAX_TEXT_BYTES // 2 + 1)),
    "id with a final newline": event(session_id="sess-1\n"),
    "february 30": event(time="2024-02-30T00:00:00Z"),
    "time in year 10000 in UTC": event(time="9999-12-31T23:59:59-01:00"),
    "created_at in year 0 in UTC": header(created_at="0001-01-01T00:59:59+01:00"),
}
#: The schema states what writers must write (RFC 3339, upper-case T and Z); the decoder is lenient.
SCHEMA_STRICTER = {
    "offset without colon": event(time="2024-05-01T12:30:00+0530"),
    "space separator": event(time="2024-05-01 12:30:00Z"),
    "no seconds": event(time="2024-05-01T12:30Z"),
    "basic format": header(created_at="20240501T123000Z"),
}


@pytest.mark.parametrize("name", sorted(SCHEMA_LOOSER))
def test_known_gaps_where_the_schema_is_looser(name: str) -> None:
    record = SCHEMA_LOOSER[name]
    assert schema_accepts(record) and not models_accept(record)


@pytest.mark.parametrize("name", sorted(SCHEMA_STRICTER))
def test_known_gaps_where_the_decoder_is_more_lenient(name: str) -> None:
    record = SCHEMA_STRICTER[name]
    assert models_accept(record) and not schema_accepts(record)


# -- random valid records pass the schema; random single-field damage is judged alike -------------------

ids = st.from_regex(r"[A-Za-z0-9._:-]{1,128}", fullmatch=True)
safe_ints = st.integers(0, 2**53 - 1)
times = st.builds(
    lambda dt, minutes: dt.replace(tzinfo=timezone(timedelta(minutes=minutes))).isoformat(),
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 30)),
    st.integers(-18 * 60, 18 * 60),
)
scalars = st.one_of(
    _text(max_size=30),
    st.integers(-(2**63), 2**64 - 1),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        record = header(workspace_id=draw(ids), session_id=draw(ids), created_at=draw(times))
        for name, strategy in {
            "parent_session_id": ids,
            "seed_length": safe_ints,
            "delegation_depth": safe_ints,
            "title": _text(max_size=512),
        }.items():
            if draw(st.booleans()):
                record[name] = draw(strategy)
        return record
    kind = draw(st.sampled_from([*sorted(KNOWN_EVENT_TYPES), "custom/kind"]))
    surface = draw(
        st.one_of(
            st.just({"op": "append"}),
            st.builds(lambda s, e: {"op": "replace", "start": s, "end": e}, safe_ints, safe_ints),
        )
    )
    record = event(
        workspace_id=draw(ids),
        session_id=draw(ids),
        seq=draw(safe_ints),
        type=kind,
        time=draw(times),
        surface=surface if kind in SURFACE_TYPES else DROP,
    )
    optional = {
        "turn": safe_ints,
        "role": st.sampled_from(["system", "user", "assistant", "tool"]),
        "text": _text(max_size=200),
        "tool_name": _text(max_size=512),
        "sources": st.lists(safe_ints, max_size=10),
        "attrs": st.dictionaries(
            st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True), scalars, max_size=8
        ),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            record[name] = draw(strategy)
    return record


@settings(max_examples=200, deadline=None)
@given(records())
def test_random_valid_records_pass_both(record: dict[str, Any]) -> None:
    assert models_accept(record)
    assert schema_accepts(record)


DAMAGE: list[Any] = [None, -1, "", "x y", True, [], {}, "ü" * 3, 2**53, 0, "user/message", {"op": "append"}]


@settings(max_examples=300, deadline=None)
@given(records(), st.data())
def test_damaging_one_field_is_judged_alike(record: dict[str, Any], data: st.DataObject) -> None:
    damaged = copy.deepcopy(record)
    field = data.draw(st.sampled_from([*sorted(damaged), "unknown_field"]))
    action = data.draw(st.sampled_from(["drop", "replace"]))
    if action == "drop":
        damaged.pop(field, None)
    else:
        damaged[field] = data.draw(st.sampled_from(DAMAGE))
    assert models_accept(damaged) == schema_accepts(damaged), (field, damaged.get(field, "<dropped>"))


# -- the documentation's examples are valid records ----------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "wire-format.md"


def test_the_documented_kcat_examples_are_valid() -> None:
    examples = re.findall(r"printf '([^\\']+)\\t(\{.*?\})\\n'", DOC.read_text(encoding="utf-8"))
    assert len(examples) >= 2
    for key, value in examples:
        record = decode_record(value.encode("utf-8"))
        assert record.session_id == key
        assert schema_accepts(json.loads(value))


# -- ajv (JavaScript) agrees: the schema compiles in ajv's strict mode ----------------------------------

JS_DIR = Path(__file__).resolve().parents[2] / "schemas" / "js"
#: Where ajv sides with the decoder against Python's jsonschema: ECMA-262 ``$`` does not match before
#: a final newline, and ajv-formats checks the calendar (February 30).
AJV_LIKE_THE_DECODER = {"id with a final newline", "february 30"}


def ajv_verdicts(records: list[Any], tmp_path: Path) -> list[bool]:
    """Whether ajv (strict mode, ajv-formats) accepts each record, via ``schemas/js/validate.mjs``."""
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "ajv").is_dir():
        message = "node and schemas/js/node_modules are needed: bash scripts/setup --stack installs them"
        if os.environ.get("BACKSCROLL_REQUIRE_STACK") == "1":
            pytest.fail(message)
        pytest.skip(message)
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(records), encoding="utf-8")
    done = subprocess.run(
        [node, str(JS_DIR / "validate.mjs"), str(SCHEMA_FILE), str(corpus)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    verdicts: list[bool] = json.loads(done.stdout)
    assert len(verdicts) == len(records)
    return verdicts


def test_ajv_strict_compiles_and_agrees_with_the_decoder_and_jsonschema(tmp_path: Path) -> None:
    named: list[tuple[str, Any]] = [
        *((f"good {i}", record) for i, record in enumerate(GOOD)),
        *((f"bad {name}", record) for name, record in sorted(BAD.items())),
        *((f"looser {name}", record) for name, record in sorted(SCHEMA_LOOSER.items())),
        *((f"stricter {name}", record) for name, record in sorted(SCHEMA_STRICTER.items())),
    ]
    verdicts = ajv_verdicts([record for _, record in named], tmp_path)
    for (name, record), ajv in zip(named, verdicts, strict=True):
        decoder, python = models_accept(record), schema_accepts(record)
        if name.removeprefix("looser ") in AJV_LIKE_THE_DECODER:
            assert ajv == decoder != python, name
        else:
            assert ajv == python, name
        if name.startswith(("good ", "bad ")):
            assert ajv == decoder, name


def test_the_schema_has_no_keyword_outside_draft_2020_12() -> None:
    assert '"discriminator"' not in SCHEMA_FILE.read_text(encoding="utf-8")
