"""The reads contract: what a session reader (``Backend.open_reader``) returns and refuses, identical
on every backend — listings, windows, surfaces after a compaction (as the indexer stored them),
event and session traces (cycles and deep chains too), long logs in any page size, surface-invalid
and gapped logs, reads that follow the projection, scope isolation and detached results."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from backscroll.backends import EmbeddedBackend
from backscroll.query import (
    AbortSignal,
    OpenSearchSessionReader,
    Scope,
    SessionQueryError,
    SQLiteSessionReader,
)
from backscroll.query.opensearch.async_reader import AsyncOpenSearchReader
from backscroll.query.reads.async_reader import AsyncSessionReader

from .conftest import _PARAMS, Harness, make_harness

T0 = datetime(2026, 11, 1, tzinfo=UTC)
#: Sessions in the lineage chain of ``ws-deep``: more than a page of session listings.
DEEP = 3000
ELIGIBLE = ("user/message", "assistant/message", "tool/result")
AUTO: Any = object()

#: Every harness test runs with the synchronous and the asyncio API (conftest).
BOTH_APIS = True


def hdr(ws: str, sid: str, hours: int = 0, **kw: Any) -> dict[str, Any]:
    created = (T0 + timedelta(hours=hours)).isoformat()
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": created, **kw}


def R(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def session(ws: str, sid: str, hours: int, events: Sequence[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """A header and events given as ``(type, text, surface, sources, extra)`` prefixes."""
    out = [hdr(ws, sid, hours)]
    for seq, spec in enumerate(events):
        kind, text, surface, sources, extra = (*spec, *([AUTO] * 5))[:5]
        moment = (T0 + timedelta(hours=hours, seconds=seq)).isoformat()
        record: dict[str, Any] = {"v": 1, "kind": "event", "workspace_id": ws, "session_id": sid,
                                  "seq": seq, "type": kind, "time": moment}  # fmt: skip
        if text is not AUTO and text:
            record["text"] = text
        if surface is AUTO:
            surface = {"op": "append"} if kind in ELIGIBLE else None
        if surface is not None:
            record["surface"] = surface
        if sources is not AUTO:
            record["sources"] = sources
        if extra is not AUTO:
            record.update(extra)
        out.append(record)
    return out


GREP = {"attrs": {"call_id": "c2"}, "tool_name": "grep", "role": "tool"}
RECORDS = [
    *session("ws-r", "basic", 1, [
        ("user/message", "zero"), ("assistant/message", "one"), ("tool/result", "two", AUTO, AUTO, GREP),
        ("user/message", "three"),
    ]),
    # A compaction: seq 2 replaces 0, seq 4 replaces the checkpoint and the retained tail (2..3).
    *session("ws-r", "s44", 3, [
        ("user/message", "old"), ("assistant/chunk", "chunk"), ("user/message", "checkpoint", R(0, 0), [0]),
        ("user/message", "retained tail"), ("user/message", "latest checkpoint", R(2, 3), [2, 3]),
        ("assistant/message", "latest answer"),
    ]),
    *session("ws-r", "s47", 5, [
        ("turn/start",), ("step/start",), ("assistant/chunk", "chunk"), ("user/message", "u", AUTO, [2]),
        ("assistant/message", "a", R(3, 3), [3, 2]), ("user/message", "later"), ("step/end",),
        ("step/start",), ("assistant/message", "final", R(4, 4), [2, 4]),
    ]),
    hdr("ws-r", "empty", 7),
    *session("ws-other", "foreign", 0, [("user/message", "elsewhere")]),
    hdr("ws-lin", "root", 0), hdr("ws-lin", "parent", 1, parent_session_id="root"),
    hdr("ws-lin", "target", 2, parent_session_id="parent"), hdr("ws-lin", "b", 4, parent_session_id="target"),
    hdr("ws-lin", "a", 4, parent_session_id="target"), hdr("ws-lin", "older", 3, parent_session_id="target"),
    hdr("ws-lin", "grandchild", 5, parent_session_id="a"),
    hdr("ws-lin", "partial", 1, parent_session_id="outside"),
    hdr("ws-lin", "T", 3, parent_session_id="P"), hdr("ws-lin", "P", 2, parent_session_id="G"),
    hdr("ws-lin", "cyc-a", 1, parent_session_id="cyc-b"),
    hdr("ws-lin", "cyc-b", 1, parent_session_id="cyc-a"),
    hdr("ws-lin", "cyc-c", 1, parent_session_id="cyc-c"),
    # Surface classification: a turn's bookkeeping, a streamed chunk, an answer replacing the question.
    *session("ws-fold", "s43", 2, [
        ("turn/start",), ("step/start",), ("user/message", "question"), ("assistant/chunk", "partial"),
        ("assistant/message", "answer", R(2, 2), [2]),
    ]),
    *session("ws-fold", "s46", 4, [("assistant/message", "empty stream", AUTO, [])]),
    # Forty messages, every fifth replacing the one before: longer than a page of a paged backend.
    *session("ws-fold", "long", 6, [
        ("user/message", f"message {i}", R(i - 1, i - 1) if i % 5 == 0 and i else AUTO,
         [i - 1] if i % 5 == 0 and i else AUTO) for i in range(40)
    ]),
    # A chain of sessions, each the parent of the next.
    *(hdr("ws-deep", f"deep-{i}", 0, **({"parent_session_id": f"deep-{i - 1}"} if i else {}))
      for i in range(DEEP)),
]  # fmt: skip

#: Surface-invalid but wire-valid: these reach the projection and only the fold rejects them.
INVALID_VALID_WIRE: dict[str, list[tuple[Any, ...]]] = {
    "bad-endoff": [("user/message", "a"), ("user/message", "b", R(0, 5), [0])],
    "bad-startoff": [("turn/start",), ("user/message", "a"), ("user/message", "b", R(0, 1), [0, 1])],
    "bad-srcnonsurface": [("user/message", "a"), ("turn/end", "", None, [0])],
    "bad-emptysrc": [("user/message", "a"), ("user/message", "b", AUTO, [])],
    "bad-dupsrc": [("user/message", "a"), ("user/message", "b"), ("user/message", "c", AUTO, [0, 1, 0])],
    "bad-latesrc": [("user/message", "a"), ("user/message", "b", AUTO, [0, 7])],
    "bad-omit": [("user/message", "a"), ("user/message", "b"), ("user/message", "c"),
                 ("assistant/message", "d", R(0, 2), [0, 2])],
    "bad-order": [("user/message", "a"), ("user/message", "b"), ("user/message", "c", R(1, 0), [0, 1])],
    "bad-toolspan": [("tool/result", "r0", AUTO, AUTO, {"tool_name": "t", "attrs": {"call_id": "x"}}),
                     ("tool/result", "r1", AUTO, AUTO, {"tool_name": "t", "attrs": {"call_id": "y"}}),
                     ("tool/result", "r2", R(0, 1), [0, 1], {"tool_name": "t", "attrs": {"call_id": "x"}})],
    "bad-toolchange": [("tool/result", "r0", AUTO, AUTO, {"tool_name": "grep", "attrs": {"call_id": "x"}}),
                       ("tool/result", "r1", R(0, 0), [0], {"tool_name": "sed", "attrs": {"call_id": "x"}})],
}  # fmt: skip
#: Surface-invalid and refused by the wire format: seq 1 of each is written raw and dead-lettered,
#: leaving a gap between the valid seqs 0 and 2 (``bad-gap`` has the gap without a dead letter).
INVALID_RAW: dict[str, dict[str, Any]] = {
    "bad-nosurface": {"type": "user/message", "text": "no marker"},
    "bad-turnsurface": {"type": "turn/start", "surface": {"op": "append"}},
    "bad-negsource": {"type": "user/message", "text": "neg", "surface": {"op": "append"}, "sources": [-1]},
}
GAPPED = [*INVALID_RAW, "bad-gap"]
for _sid, _events in INVALID_VALID_WIRE.items():
    RECORDS += session("ws-bad", _sid, 1, _events)
for _sid in GAPPED:
    _header, _zero, _, _two = session("ws-bad", _sid, 2, [("user/message", "zero")] * 3)
    RECORDS += [_header, _zero, _two]
EVENT_COUNT = sum(1 for r in RECORDS if r["kind"] == "event")


def _raw_invalid() -> list[tuple[bytes | None, bytes | None]]:
    """Seq 1 of each :data:`INVALID_RAW` session, as a foreign client could write it."""
    out: list[tuple[bytes | None, bytes | None]] = []
    for sid, fields in INVALID_RAW.items():
        record = {"v": 1, "kind": "event", "workspace_id": "ws-bad", "session_id": sid, "seq": 1,
                  "time": (T0 + timedelta(hours=2, seconds=1)).isoformat(), **fields}  # fmt: skip
        out.append((sid.encode(), orjson.dumps(record)))
    return out


@pytest.fixture(scope="module", params=_PARAMS)
def reads(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """A pipeline holding :data:`RECORDS`, appended and indexed (shared by this module's tests)."""
    with make_harness(request.param, tmp_path_factory.mktemp(f"reads-{request.param}")) as made:
        made.append_all(RECORDS)
        made.send_raw(_raw_invalid())
        stats = made.index()
        assert (stats.indexed, stats.dead_lettered) == (EVENT_COUNT, len(INVALID_RAW))
        yield made


def reader(harness: Harness, scope: Scope | str = "ws-r", **kwargs: Any) -> Any:
    return harness.reader(Scope.workspace(scope) if isinstance(scope, str) else scope, **kwargs)


def code_of(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    with pytest.raises(SessionQueryError) as caught:
        fn(*args, **kwargs)
    return caught.value.code


def test_open_reader_builds_the_backends_reader(reads: Harness, api: str) -> None:
    built = reader(reads)
    if api == "async":  # native on AsyncOpenSearch; the embedded reader's flows on worker threads
        areader: Any = built.areader
        assert type(areader) is (AsyncSessionReader if reads.name == "embedded" else AsyncOpenSearchReader)
        built = areader.reader
    assert type(built) is (SQLiteSessionReader if reads.name == "embedded" else OpenSearchSessionReader)


# -- listings -------------------------------------------------------------------------------------
def test_list_sessions_order_stats_and_filters(reads: Harness) -> None:
    r = reader(reads)
    listing = r.list_sessions()
    assert [s.header.session_id for s in listing] == ["empty", "s47", "s44", "basic"]
    assert all(s.persisted and not s.live for s in listing)
    basic = listing[-1]
    assert basic.stats is not None and (basic.stats.last_seq, basic.stats.entry_count) == (3, 4)
    assert basic.stats.surface_valid and basic.header.created_at == T0 + timedelta(hours=1)
    assert listing[0].stats is not None and listing[0].stats.last_seq is None
    window = [
        {"kind": "created-at", "from": T0 + timedelta(hours=3), "to": (T0 + timedelta(hours=5)).isoformat()}
    ]
    assert [s.header.session_id for s in r.list_sessions(window)] == ["s47", "s44"]
    assert [s.header.session_id for s in r.list_sessions([{"kind": "id", "values": ["s44", "x"]}])] == ["s44"]
    assert r.list_sessions([{"kind": "availability", "values": ["live"]}]) == ()
    children = reader(reads, "ws-lin").list_sessions([{"kind": "parent", "values": ["target"]}])
    assert [s.header.session_id for s in children] == ["a", "b", "older"]  # newest first, then id
    assert code_of(r.list_sessions, [{"kind": "nope"}]) == "SESSION_QUERY_INVALID_FILTER"


# -- read windows ---------------------------------------------------------------------------------
def test_read_event_window(reads: Harness) -> None:
    result = reader(reads).read_event("basic", 2, before=1, after=1)
    assert (result.start_seq, result.end_seq, result.target.seq) == (1, 3, 2)
    assert [(e.seq, e.text) for e in result.events] == [(1, "one"), (2, "two"), (3, "three")]
    assert result.target.tool_name == "grep" and result.target.attrs == {"call_id": "c2"}
    assert result.header.session_id == "basic" and result.header.workspace_id == "ws-r"
    assert result.header.created_at == T0 + timedelta(hours=1)


def test_read_event_clamps_at_the_edges(reads: Harness) -> None:
    r = reader(reads)
    assert r.read_event("basic", 0, before=5).start_seq == 0
    assert r.read_event("basic", 3, after=5).end_seq == 3
    whole = r.read_event("basic", 1, before=50, after=50)
    assert (whole.start_seq, whole.end_seq, len(whole.events)) == (0, 3, 4)


def test_read_event_validates_the_window_first(reads: Harness) -> None:
    r = reader(reads)
    assert code_of(r.read_event, "ghost", 0, before=51) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(r.read_event, "ghost", 0, before=-1) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(r.read_event, "ghost", 0, after=0.5) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(r.read_event, "basic", 0, before=True) == "SESSION_QUERY_INVALID_WINDOW"
    narrow = reader(reads, read_window_max=0)
    assert narrow.read_event("basic", 2).events[0].seq == 2
    assert code_of(narrow.read_event, "basic", 2, before=1) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(reader, reads, read_window_max=-1) == "SESSION_QUERY_INVALID_CONFIG"


def test_read_event_missing_targets(reads: Harness) -> None:
    r = reader(reads)
    assert code_of(r.read_event, "basic", 9) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "basic", -1) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "basic", 1.5) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "empty", 0) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "ghost", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(r.read_event, "bad id!", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(r.read_event, " ", 0) == "SESSION_QUERY_INVALID_SCOPE"


# -- surfaces -------------------------------------------------------------------------------------
def test_read_surface_after_a_compaction(reads: Harness) -> None:
    r = reader(reads)
    surface = r.read_surface("s44")
    assert surface.captured_through_seq == 5
    assert [(e.seq, e.text) for e in surface.events] == [(4, "latest checkpoint"), (5, "latest answer")]
    events = r.list_events("s44")
    assert [e.surface for e in events] == [
        "shadowed",
        "log-only",
        "shadowed",
        "shadowed",
        "current",
        "current",
    ]
    assert [e.replaced_by for e in events[:4]] == [2, None, 4, 4]
    assert (events[4].surface_op, events[4].replace_start, events[4].replace_end) == ("replace", 2, 3)
    empty = r.read_surface("empty")
    assert (empty.captured_through_seq, empty.events) == (None, ())
    assert r.list_events("empty") == ()


def test_surface_classification(reads: Harness) -> None:
    r = reader(reads, "ws-fold")
    events = r.list_events("s43")
    assert [e.surface for e in events] == ["log-only", "log-only", "shadowed", "log-only", "current"]
    assert events[2].replaced_by == 4 and events[4].sources == (2,)
    assert (events[4].surface_op, events[4].replace_start, events[4].replace_end) == ("replace", 2, 2)
    (cites_nothing,) = r.list_events("s46")  # an answer may cite an empty stream
    assert (cites_nothing.surface, cites_nothing.sources) == ("current", ())


def test_the_readers_fold_agrees_with_the_indexers(reads: Harness) -> None:
    """The indexer stored each event's surface state as it went; the reader folds the whole log."""
    for workspace, sid in (("ws-fold", "s43"), ("ws-r", "s44"), ("ws-fold", "s46"), ("ws-r", "s47")):
        folded = [(e.surface, e.replaced_by) for e in reader(reads, workspace).list_events(sid)]
        assert folded == reads.stored_surfaces(sid), sid
    long = [(e.surface, e.replaced_by) for e in reader(reads, "ws-fold").list_events("long")]
    assert long == reads.stored_surfaces("long")


def test_a_long_log_reads_the_same_in_any_page_size(reads: Harness) -> None:
    r = reader(reads, "ws-fold", **reads.paging(7))
    events = r.list_events("long")
    assert [e.seq for e in events] == list(range(40))
    assert events == reader(reads, "ws-fold").list_events("long")
    surface = r.read_surface("long")
    assert [e.text for e in surface.events] == [f"message {i}" for i in range(40) if i % 5 != 4 or i == 39]
    for page_size in (3, 7, 39, 40, 41):  # every read loads the whole log when nothing is cached
        uncached = reader(reads, "ws-fold", **reads.paging(page_size))
        assert uncached.read_surface("long") == surface
        assert uncached.list_events("long") == events
    assert r.trace_event("long", 4).replacement_chain == (5,)
    assert r.read_event("long", 20, before=10, after=10).start_seq == 10


def test_reads_follow_the_projection(harness: Harness) -> None:
    grow = session("ws-grow", "grow", 0, [("user/message", "g0"), ("assistant/message", "g1"),
                                          ("user/message", "g2")])  # fmt: skip
    harness.append_all(grow)
    harness.index()
    r = reader(harness, "ws-grow")
    assert r.read_surface("grow").captured_through_seq == 2
    assert r.trace_event("grow", 1).replaced_by is None  # a backend may keep the log now
    compaction = ("assistant/message", "compacted", R(0, 3), [0, 1, 2, 3])
    more = session("ws-grow", "grow", 0, [("user/message", "g")] * 4 + [compaction])
    harness.append_all(more[4:])  # seqs 3 and 4
    harness.index()
    surface = r.read_surface("grow")
    assert (surface.captured_through_seq, [e.text for e in surface.events]) == (4, ["compacted"])
    assert r.trace_event("grow", 1).replaced_by == 4
    fresh = reader(harness, "ws-grow", **harness.paging(1000))
    assert fresh.read_surface("grow") == surface
    assert fresh.list_events("grow") == r.list_events("grow")
    # An event that disappears from the projection: the log is read again, with its gap.
    harness.drop_event("grow", 1)
    assert code_of(r.read_surface, "grow") == "SESSION_QUERY_INVALID_SURFACE"
    assert [e.seq for e in r.read_event("grow", 0, after=5).events] == [0, 2, 3, 4]


def test_filter_events(reads: Harness) -> None:
    r = reader(reads)
    assert [e.seq for e in r.filter_events("s44", [{"kind": "text", "text": "LATEST"}])] == [4, 5]
    assert [e.seq for e in r.filter_events("s44", [{"kind": "surface", "values": ["shadowed"]}])] == [0, 2, 3]
    clauses = [{"kind": "seq", "from": 1, "to": 4}, {"kind": "type", "values": ["user/message"]}]
    assert [e.seq for e in r.filter_events("s44", clauses)] == [2, 3, 4]
    bad = [{"kind": "seq", "from": 2, "to": 1}]
    assert code_of(r.filter_events, "ghost", bad) == "SESSION_QUERY_INVALID_FILTER"  # filters first
    unknown = [{"kind": "surface", "values": ["future"]}]
    assert code_of(r.filter_events, "ghost", unknown) == "SESSION_QUERY_INVALID_FILTER"


# -- event traces ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seq", "expected"),
    [
        (3, ("shadowed", 4, (4, 8), (), (2,), (4,))),
        (4, ("shadowed", 8, (8,), (3,), (3, 2), (8,))),
        (2, ("log-only", None, (), (), (), (3, 4, 8))),
        (8, ("current", None, (), (4,), (2, 4), ())),
    ],
)
def test_trace_event_chain(reads: Harness, seq: int, expected: tuple[Any, ...]) -> None:
    t = reader(reads).trace_event("s47", seq)
    got = (t.target.surface, t.replaced_by, t.replacement_chain, t.replaced_event_seqs,
           t.source_event_seqs, t.derived_event_seqs)  # fmt: skip
    assert got == expected
    assert t.target.seq == seq and t.header.session_id == "s47"


def test_trace_event_range_replacement(reads: Harness) -> None:
    r = reader(reads)
    assert r.trace_event("s44", 4).replaced_event_seqs == (2, 3)
    zero = r.trace_event("s44", 0)
    assert (zero.replaced_by, zero.replacement_chain, zero.target.text) == (2, (2, 4), "old")
    assert code_of(r.trace_event, "s44", 6) == "SESSION_QUERY_EVENT_NOT_FOUND"


# -- session traces ----------------------------------------------------------------------------------
def test_trace_session_lineage(reads: Harness) -> None:
    r = reader(reads, "ws-lin")
    trace = r.trace_session("target")
    assert [s.header.session_id for s in trace.ancestors] == ["parent", "root"]
    assert trace.complete and trace.unresolved_parent_id is None
    assert trace.root is not None and trace.root.header.session_id == "root"
    assert [n.session_id for n in trace.children()] == ["older", "a", "b"]
    assert [n.session_id for n in trace.children("a")] == ["grandchild"]
    assert all(n.session.persisted and not n.session.live for n in trace.descendants)
    partial = r.trace_session("partial")
    assert (partial.complete, partial.unresolved_parent_id, partial.ancestors) == (False, "outside", ())
    grand = r.trace_session("T")
    assert [s.header.session_id for s in grand.ancestors] == ["P"]
    assert (grand.complete, grand.unresolved_parent_id, grand.root) == (False, "G", None)
    assert code_of(r.trace_session, "missing") == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(r.trace_session, "cyc-a") == "SESSION_QUERY_INVALID_LINEAGE"
    assert code_of(r.trace_session, "cyc-c") == "SESSION_QUERY_INVALID_LINEAGE"  # its own parent


def test_trace_session_of_a_deep_chain(reads: Harness) -> None:
    r = reader(reads, "ws-deep", **reads.paging(1000))  # the listing pages through every session
    trace = r.trace_session("deep-0")
    assert trace.complete and trace.depth == DEEP - 1 and len(trace.descendants) == DEEP - 1
    assert [n.session_id for n in trace.children()] == ["deep-1"]
    bottom = r.trace_session(f"deep-{DEEP - 1}")
    assert len(bottom.ancestors) == DEEP - 1
    assert bottom.root is not None and bottom.root.header.session_id == "deep-0"
    assert len(trace.model_dump_json()) > 0
    assert len(reader(reads, "ws-deep", **reads.paging(400)).list_sessions()) == DEEP


def test_trace_session_stops_at_the_scope(reads: Harness) -> None:
    trace = reader(reads, Scope.sessions(["target", "parent"])).trace_session("target")
    assert [s.header.session_id for s in trace.ancestors] == ["parent"]
    assert (trace.complete, trace.unresolved_parent_id, trace.descendants) == (False, "root", ())


# -- surface-invalid logs ----------------------------------------------------------------------------
@pytest.mark.parametrize("sid", [*INVALID_VALID_WIRE, *GAPPED])
def test_surface_invalid_logs(reads: Harness, sid: str) -> None:
    r = reader(reads, "ws-bad")
    for read in (r.list_events, r.read_surface, lambda s: r.filter_events(s, [])):
        assert code_of(read, sid) == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(r.trace_event, sid, 0) == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(r.trace_event, sid, 9) == "SESSION_QUERY_EVENT_NOT_FOUND"  # existence first
    last = max(e["seq"] for e in RECORDS if e["kind"] == "event" and e["session_id"] == sid)
    assert r.read_event(sid, 0, after=5).end_seq == last  # read_event does not run the fold
    assert r.read_event(sid, 0).target.seq == 0
    (listed,) = [s for s in r.list_sessions() if s.header.session_id == sid]
    assert listed.stats is not None and not listed.stats.surface_valid


@pytest.mark.parametrize("sid", GAPPED)
def test_a_seq_gap_reads_by_position(reads: Harness, sid: str) -> None:
    """Seq 1 never reached the projection: the log holds seqs 0 and 2, and position 1 is seq 2, so
    neither seq 1 nor seq 2 is where a reader looks for it."""
    r = reader(reads, "ws-bad")
    (listed,) = [s for s in r.list_sessions() if s.header.session_id == sid]
    assert listed.stats is not None and listed.stats.seq_gaps == 1
    assert code_of(r.read_event, sid, 1) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, sid, 2) == "SESSION_QUERY_EVENT_NOT_FOUND"
    window = r.read_event(sid, 0, after=5)
    assert [e.seq for e in window.events] == [0, 2] and window.end_seq == 2


# -- scope isolation and detached results -----------------------------------------------------------
def _failures(r: Any, sid: str) -> list[tuple[str, str]]:
    calls: list[Callable[[], object]] = [
        lambda: r.list_events(sid), lambda: r.read_surface(sid), lambda: r.read_event(sid, 0),
        lambda: r.trace_event(sid, 0), lambda: r.trace_session(sid), lambda: r.filter_events(sid, []),
    ]  # fmt: skip
    out: list[tuple[str, str]] = []
    for call in calls:
        with pytest.raises(SessionQueryError) as caught:
            call()
        out.append((caught.value.code, caught.value.message.replace(sid, "ID")))
    return out


def test_sessions_outside_the_scope_read_like_missing_ones(reads: Harness) -> None:
    other = reader(reads, "ws-other")
    assert _failures(other, "basic") == _failures(other, "no-such-session")
    assert {code for code, _ in _failures(other, "basic")} == {"SESSION_QUERY_SESSION_NOT_FOUND"}
    assert [s.header.session_id for s in other.list_sessions()] == ["foreign"]
    assert other.read_event("foreign", 0).target.text == "elsewhere"
    one = reader(reads, Scope.session("basic"))
    assert one.read_event("basic", 0).target.text == "zero"
    assert _failures(one, "s44") == _failures(one, "no-such-session")
    assert [s.header.session_id for s in one.list_sessions()] == ["basic"]
    both = reader(reads, Scope.workspaces(["ws-r", "ws-other"], ops=True))
    assert {s.header.session_id for s in both.list_sessions()} == {"empty", "s47", "s44", "basic", "foreign"}


def test_results_are_detached(reads: Harness) -> None:
    r = reader(reads)
    first = r.read_event("basic", 2, before=1)
    original = first.model_dump()
    with pytest.raises(ValueError):
        first.header.title = "changed"
    with pytest.raises(ValueError):
        first.target.text = "changed"
    assert first.target.attrs is not None
    first.target.attrs["call_id"] = "mutated"
    first.events[1].attrs["extra"] = 1
    second = r.read_event("basic", 2, before=1)
    assert second.model_dump() == original and second.target.attrs == {"call_id": "c2"}
    events = r.list_events("basic")
    events[2].attrs["call_id"] = "mutated"
    assert r.list_events("basic")[2].attrs == {"call_id": "c2"}


def test_a_closed_reader_refuses_reads(reads: Harness) -> None:
    r = reader(reads)
    r.close()
    r.close()
    assert r.closed
    assert code_of(r.list_sessions) == "SESSION_QUERY_PROVIDER_CLOSED"
    assert code_of(r.read_event, "basic", 0) == "SESSION_QUERY_PROVIDER_CLOSED"


def test_an_aborted_read_is_aborted_and_config_errors_are_typed(reads: Harness) -> None:
    signal = AbortSignal()
    signal.abort("stopped")
    r = reader(reads)
    assert code_of(r.list_sessions, signal=signal) == "SESSION_QUERY_ABORTED"
    assert code_of(r.read_event, "basic", 0, signal=signal) == "SESSION_QUERY_ABORTED"
    assert code_of(r.trace_event, "basic", 0, signal=AbortSignal.timeout(1e-9)) == "SESSION_QUERY_ABORTED"
    assert r.read_event("basic", 0, signal=AbortSignal.timeout(60)).target.seq == 0
    for bad in (0, True, "4", 1.5):
        assert code_of(reads.reader, Scope.workspace("w"), persisted_inspect_concurrency=bad) == (
            "SESSION_QUERY_INVALID_CONFIG"
        )


# -- the embedded reader's own behaviour -------------------------------------------------------------
def _append(path: Path, records: list[dict[str, Any]]) -> None:
    with EmbeddedBackend(path).open_log() as log:
        for handle in [log.append(record) for record in records]:
            handle.result(timeout=30)


def test_embedded_reader_catches_up_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "catch-up.db"
    records = session("ws-c", "c", 0, [("user/message", "first")])
    _append(path, records)
    with EmbeddedBackend(path).open_reader(Scope.workspace("ws-c")) as r:  # nothing indexed yet
        assert r.read_event("c", 0).target.text == "first"
        _append(path, session("ws-c", "c", 0, [("user/message", "first"), ("user/message", "second")])[2:])
        assert [e.text for e in r.list_events("c")] == ["first", "second"]
    with EmbeddedBackend(path, index_on_search=False).open_reader(Scope.workspace("ws-c")) as indexed:
        assert indexed.read_surface("c").captured_through_seq == 1


def test_embedded_reader_persistence_failures(tmp_path: Path) -> None:
    missing = SQLiteSessionReader(Scope.workspace("w"), tmp_path / "none.db")
    assert code_of(missing.list_sessions) == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(missing.read_event, "s", 0) == "SESSION_QUERY_PERSISTENCE_FAILED"
    _append(tmp_path / "log-only.db", [hdr("w", "s")])  # a log, but the projection was never built
    unindexed = SQLiteSessionReader(Scope.workspace("w"), tmp_path / "log-only.db")
    with pytest.raises(SessionQueryError) as caught:
        unindexed.trace_session("s")
    assert caught.value.code == "SESSION_QUERY_PERSISTENCE_FAILED" and "indexer" in caught.value.message

    def broken() -> None:
        raise RuntimeError("disk on fire")

    failing = SQLiteSessionReader(Scope.workspace("w"), tmp_path / "log-only.db", catch_up=broken)
    assert code_of(failing.list_events, "s") == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(SQLiteSessionReader, Scope.workspace("w"), "") == "SESSION_QUERY_INVALID_CONFIG"
    assert code_of(SQLiteSessionReader, "w", tmp_path / "x.db") == "SESSION_QUERY_INVALID_SCOPE"
    assert code_of(SQLiteSessionReader, Scope.workspace("w"), "x.db", request_timeout_s=0) == (
        "SESSION_QUERY_INVALID_CONFIG"
    )


def test_cli_reads_follow_the_embedded_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orjson
    import typer
    from typer.testing import CliRunner

    from backscroll.cli.reads_cmd import register

    path = tmp_path / "cli.db"
    _append(path, [r for r in RECORDS if r["session_id"] in ("basic", "s47")])
    monkeypatch.setenv("BACKSCROLL_BACKEND", "embedded")
    monkeypatch.setenv("BACKSCROLL_SQLITE_PATH", str(path))
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    listing = runner.invoke(app, ["sessions", "-w", "ws-r", "--json"])
    assert listing.exit_code == 0, listing.output
    assert [s["header"]["session_id"] for s in orjson.loads(listing.output)] == ["s47", "basic"]
    window = runner.invoke(app, ["read", "basic", "2", "-B", "1", "--json"])
    assert window.exit_code == 0 and orjson.loads(window.output)["target"]["text"] == "two"
    traced = runner.invoke(app, ["trace", "s47", "3", "--json"])
    assert traced.exit_code == 0 and orjson.loads(traced.output)["replacement_chain"] == [4, 8]
    missing = runner.invoke(app, ["read", "ghost", "0", "--json"])
    assert missing.exit_code == 1
    assert orjson.loads(missing.output)["error"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
