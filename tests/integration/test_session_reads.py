"""Issue 5's acceptance tests: spec scenarios 31–54 against the real servers.

Every session below is appended through Kafka (the appender, or a raw producer for records the wire
format rejects, which the worker dead-letters) and projected by the real indexer worker, once per
module. Scenarios 50–54 add an in-memory LiveSource, and make OpenSearch fail by pointing the reader
at a closed port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from conftest import Pipeline, make_pipeline
from kafka import KafkaProducer

from backscroll.indexer.document import events_alias
from backscroll.ingest.wire import EventRecord, HeaderRecord, parse_record
from backscroll.query import OpenSearchSessionReader, Scope, SessionHeader, SessionQueryError

T0 = datetime(2026, 11, 1, tzinfo=UTC)
CLOSED_PORT = "http://127.0.0.1:9"
DEEP = 3000
ELIGIBLE = ("user/message", "assistant/message", "tool/result")
AUTO: Any = object()


def hdr(ws: str, sid: str, t: int = 0, **kw: Any) -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid,
            "created_at": (T0 + timedelta(hours=t)).isoformat(), **kw}  # fmt: skip


def ev(ws: str, sid: str, seq: int, type_: str = "user/message", text: str = "", surface: Any = AUTO,
       sources: list[int] | None = None, **kw: Any) -> dict[str, Any]:  # fmt: skip
    record: dict[str, Any] = {"v": 1, "kind": "event", "workspace_id": ws, "session_id": sid, "seq": seq,
                              "type": type_, "time": (T0 + timedelta(seconds=seq)).isoformat()}  # fmt: skip
    if text:
        record["text"] = text
    if surface is AUTO:
        surface = {"op": "append"} if type_ in ELIGIBLE else None
    if surface is not None:
        record["surface"] = surface
    if sources is not None:
        record["sources"] = sources
    record.update(kw)
    return record


def R(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def session(
    ws: str, sid: str, events: Sequence[tuple[Any, ...]], t: int = 0, **header: Any
) -> list[dict[str, Any]]:
    """A header and events given as (type, text, surface, sources, extra) prefixes."""
    out = [hdr(ws, sid, t, **header)]
    for seq, spec in enumerate(events):
        type_, text, surface, sources, extra = (*spec, *([AUTO] * 5))[:5]
        text = "" if text is AUTO else text
        sources = None if sources is AUTO else sources
        out.append(ev(ws, sid, seq, type_, text, surface, sources, **({} if extra is AUTO else extra)))
    return out


# -- the corpus -----------------------------------------------------------------------------------
BASIC = session("ws-read", "basic", [
    ("user/message", "zero"), ("assistant/message", "one"),
    ("tool/result", "two", AUTO, AUTO, {"attrs": {"call_id": "c2"}, "tool_name": "grep", "role": "tool"}),
    ("user/message", "three"),
], t=1)  # fmt: skip
S43 = session("ws-read", "s43", [
    ("turn/start",), ("step/start",), ("user/message", "question"), ("assistant/chunk", "partial"),
    ("assistant/message", "answer", R(2, 2), [2]),
], t=2)  # fmt: skip
S44 = session("ws-read", "s44", [
    ("user/message", "old"), ("assistant/chunk", "chunk"), ("user/message", "checkpoint", R(0, 0), [0]),
    ("user/message", "retained tail"), ("user/message", "latest checkpoint", R(2, 3), [2, 3]),
    ("assistant/message", "latest answer"),
], t=3)  # fmt: skip
S46 = session("ws-read", "s46", [("assistant/message", "empty stream", AUTO, [])], t=4)
S47 = session("ws-read", "s47", [
    ("turn/start",), ("step/start",), ("assistant/chunk", "chunk"), ("user/message", "u", AUTO, [2]),
    ("assistant/message", "a", R(3, 3), [3, 2]), ("user/message", "later"), ("step/end",), ("step/start",),
    ("assistant/message", "final", R(4, 4), [2, 4]),
], t=5)  # fmt: skip
LONG = session("ws-read", "long", [
    ("user/message", f"message {i}", R(i - 1, i - 1) if i % 5 == 0 and i else AUTO,
     [i - 1] if i % 5 == 0 and i else AUTO) for i in range(40)
], t=6)  # fmt: skip
EMPTY = [hdr("ws-read", "empty", 7)]
FOREIGN = session("ws-other", "foreign", [("user/message", "elsewhere")])
GROW = session(
    "ws-grow", "grow", [("user/message", "g0"), ("assistant/message", "g1"), ("user/message", "g2")]
)

LINEAGE = [
    hdr("ws-lin", "root", 0), hdr("ws-lin", "parent", 1, parent_session_id="root"),
    hdr("ws-lin", "target", 2, parent_session_id="parent"), hdr("ws-lin", "b", 4, parent_session_id="target"),
    hdr("ws-lin", "a", 4, parent_session_id="target"), hdr("ws-lin", "older", 3, parent_session_id="target"),
    hdr("ws-lin", "grandchild", 5, parent_session_id="a"),
    hdr("ws-lin", "partial", 1, parent_session_id="outside"),
    hdr("ws-lin", "T", 3, parent_session_id="P"), hdr("ws-lin", "P", 2, parent_session_id="G"),
    hdr("ws-lin", "cyc-a", 1, parent_session_id="cyc-b"),
    hdr("ws-lin", "cyc-b", 1, parent_session_id="cyc-a"),
    hdr("ws-lin", "cyc-c", 1, parent_session_id="cyc-c"),
]  # fmt: skip
DEEP_CHAIN = [
    hdr("ws-deep", f"deep-{i}", 0, **({"parent_session_id": f"deep-{i - 1}"} if i else {}))
    for i in range(DEEP)
]

#: Scenario 45, wire-valid: these reach the index and only the fold rejects them.
INVALID_VALID_WIRE: dict[str, list[tuple[Any, ...]]] = {
    "bad-srcnonsurface": [("user/message", "a"), ("turn/end", "", None, [0])],
    "bad-emptysrc": [("user/message", "a"), ("user/message", "b", AUTO, [])],
    "bad-dupsrc": [("user/message", "a"), ("user/message", "b"), ("user/message", "c", AUTO, [0, 1, 0])],
    "bad-latesrc": [("user/message", "a"), ("user/message", "b", AUTO, [0, 7])],
    "bad-omit": [("user/message", "a"), ("user/message", "b"), ("user/message", "c"),
                 ("assistant/message", "d", R(0, 2), [0, 2])],
    "bad-startoff": [("turn/start",), ("user/message", "a"), ("user/message", "b", R(0, 1), [0, 1])],
    "bad-endoff": [("user/message", "a"), ("user/message", "b", R(0, 5), [0])],
    "bad-order": [("user/message", "a"), ("user/message", "b"), ("user/message", "c", R(1, 0), [0, 1])],
    "bad-toolspan": [("tool/result", "r0", AUTO, AUTO, {"tool_name": "t", "attrs": {"call_id": "x"}}),
                     ("tool/result", "r1", AUTO, AUTO, {"tool_name": "t", "attrs": {"call_id": "y"}}),
                     ("tool/result", "r2", R(0, 1), [0, 1], {"tool_name": "t", "attrs": {"call_id": "x"}})],
    "bad-toolchange": [("tool/result", "r0", AUTO, AUTO, {"tool_name": "grep", "attrs": {"call_id": "x"}}),
                       ("tool/result", "r1", R(0, 0), [0], {"tool_name": "sed", "attrs": {"call_id": "x"}})],
}  # fmt: skip
#: Scenario 45, rejected by the wire format: written raw, dead-lettered, leaving a seq gap at 1.
INVALID_RAW = {
    "bad-nosurface": ev("ws-bad", "bad-nosurface", 1, "user/message", "no marker", surface=None),
    "bad-turnsurface": ev("ws-bad", "bad-turnsurface", 1, "turn/start", surface={"op": "append"}),
    "bad-negsource": ev("ws-bad", "bad-negsource", 1, "user/message", "neg", sources=[-1]),
}


def _invalid_records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for sid, events in INVALID_VALID_WIRE.items():
        out += session("ws-bad", sid, events)
    for sid in INVALID_RAW:  # seq 0 and seq 2 are valid; seq 1 goes to the dead-letter topic
        out += [hdr("ws-bad", sid), ev("ws-bad", sid, 0, text="first"), ev("ws-bad", sid, 2, text="third")]
    out += [
        hdr("ws-bad", "bad-gap"),
        ev("ws-bad", "bad-gap", 0, text="zero"),
        ev("ws-bad", "bad-gap", 2, text="two"),
    ]
    return out


MERGE = [
    *session(
        "ws-merge", "shared", [("user/message", "persisted zero"), ("assistant/message", "persisted")], t=3
    ),
    *session("ws-merge", "durable", [("user/message", "durable content")], t=2),
    *session("ws-conf", "dd", [("user/message", "x")], t=1, delegation_depth=1),
    *session("ws-conf", "meta", [("user/message", "y")], t=1, origin="main", agent_preset="p1"),
    *session("ws-corrupt", "corrupt", [("user/message", "fine"), ("user/message", "also fine")]),
]


@pytest.fixture(scope="module")
def loaded() -> Iterator[Pipeline]:
    with make_pipeline() as pipeline:
        valid = [*BASIC, *S43, *S44, *S46, *S47, *LONG, *EMPTY, *FOREIGN, *GROW, *LINEAGE, *DEEP_CHAIN,
                 *_invalid_records(), *MERGE]  # fmt: skip
        pipeline.append_all(valid)
        producer = KafkaProducer(**pipeline.kafka.client_config())
        try:
            for sid, record in INVALID_RAW.items():
                producer.send(pipeline.kafka.topic, key=sid.encode(), value=orjson.dumps(record))
            producer.flush(timeout=60)
        finally:
            producer.close()
        stats = pipeline.index()
        assert stats.dead_lettered == len(INVALID_RAW)
        assert stats.indexed == sum(1 for r in valid if r["kind"] == "event")
        yield pipeline


def reader(pipeline: Pipeline, scope: Scope | str = "ws-read", **kwargs: Any) -> OpenSearchSessionReader:
    if isinstance(scope, str):
        scope = Scope.workspace(scope)
    return OpenSearchSessionReader(scope, pipeline.opensearch, **kwargs)


def code_of(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(SessionQueryError) as caught:
        fn(*args, **kwargs)
    return caught.value.code


# -- G. read windows (31–36) ----------------------------------------------------------------------
def test_scenario_31_basic_window(loaded: Pipeline) -> None:
    result = reader(loaded).read_event("basic", 2, before=1, after=1)
    assert (result.start_seq, result.end_seq, result.target.seq) == (1, 3, 2)
    assert [(e.seq, e.text) for e in result.events] == [(1, "one"), (2, "two"), (3, "three")]
    assert result.target.tool_name == "grep" and result.target.attrs == {"call_id": "c2"}
    assert result.header.session_id == "basic" and result.header.workspace_id == "ws-read"
    assert result.header.created_at == T0 + timedelta(hours=1)


def test_scenario_32_clamping(loaded: Pipeline) -> None:
    r = reader(loaded)
    assert r.read_event("basic", 0, before=5).start_seq == 0
    assert r.read_event("basic", 3, after=5).end_seq == 3
    whole = r.read_event("basic", 1, before=50, after=50)
    assert (whole.start_seq, whole.end_seq, len(whole.events)) == (0, 3, 4)


def test_scenario_33_window_validation_comes_first(loaded: Pipeline) -> None:
    r = reader(loaded)
    assert code_of(r.read_event, "nope", 0, before=51) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(r.read_event, "nope", 0, before=-1) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(r.read_event, "nope", 0, after=0.5) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(r.read_event, "basic", 0, before=True) == "SESSION_QUERY_INVALID_WINDOW"


def test_scenario_34_missing_targets(loaded: Pipeline) -> None:
    r = reader(loaded)
    assert code_of(r.read_event, "basic", 9) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "basic", -1) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "basic", 1.5) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.read_event, "ghost", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(r.read_event, "empty", 0) == "SESSION_QUERY_EVENT_NOT_FOUND"


def test_scenario_35_configuration(loaded: Pipeline) -> None:
    assert code_of(reader, loaded, read_window_max=-1) == "SESSION_QUERY_INVALID_CONFIG"
    zero = reader(loaded, read_window_max=0)
    assert zero.read_event("basic", 2).events[0].seq == 2
    assert code_of(zero.read_event, "basic", 2, before=1) == "SESSION_QUERY_INVALID_WINDOW"
    # backscroll has no inspect concurrency; its paging knob is validated the same way.
    assert code_of(reader, loaded, page_size=0) == "SESSION_QUERY_INVALID_CONFIG"


def test_scenario_36_results_are_detached(loaded: Pipeline) -> None:
    r = reader(loaded)
    first = r.read_event("basic", 2, before=1)
    original = first.model_dump()
    with pytest.raises(ValueError):
        first.header.title = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError):
        first.target.text = "changed"  # type: ignore[misc]
    assert first.target.attrs is not None
    first.target.attrs["call_id"] = "mutated"
    first.events[1].attrs["extra"] = 1  # type: ignore[index]
    second = r.read_event("basic", 2, before=1)
    assert second.model_dump() == original
    assert second.target.attrs == {"call_id": "c2"}


# -- H. lineage (37–42) ---------------------------------------------------------------------------
def test_scenario_37_complete_lineage_with_ordered_descendants(loaded: Pipeline) -> None:
    trace = reader(loaded, "ws-lin").trace_session("target")
    assert [r.header.session_id for r in trace.ancestors] == ["parent", "root"]
    assert trace.complete and trace.unresolved_parent_id is None
    assert trace.root is not None and trace.root.header.session_id == "root"
    assert [n.session_id for n in trace.children()] == ["older", "a", "b"]
    assert [n.session_id for n in trace.children("a")] == ["grandchild"]
    assert all(n.session.persisted and not n.session.live for n in trace.descendants)


def test_scenario_38_missing_immediate_parent(loaded: Pipeline) -> None:
    trace = reader(loaded, "ws-lin").trace_session("partial")
    assert (trace.complete, trace.unresolved_parent_id, trace.ancestors) == (False, "outside", ())


def test_scenario_39_missing_grandparent(loaded: Pipeline) -> None:
    trace = reader(loaded, "ws-lin").trace_session("T")
    assert [r.header.session_id for r in trace.ancestors] == ["P"]
    assert (trace.complete, trace.unresolved_parent_id, trace.root) == (False, "G", None)


def test_scenario_40_cycles_and_missing_targets(loaded: Pipeline) -> None:
    r = reader(loaded, "ws-lin")
    assert code_of(r.trace_session, "cyc-a") == "SESSION_QUERY_INVALID_LINEAGE"
    assert code_of(r.trace_session, "cyc-c") == "SESSION_QUERY_INVALID_LINEAGE"
    assert code_of(r.trace_session, "missing") == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_scenario_41_deep_chain(loaded: Pipeline) -> None:
    r = reader(loaded, "ws-deep", page_size=1000)  # the listing pages through 3,000 sessions
    trace = r.trace_session("deep-0")
    assert trace.complete and trace.depth == DEEP - 1 and len(trace.descendants) == DEEP - 1
    assert [n.session_id for n in trace.children()] == ["deep-1"]
    bottom = r.trace_session(f"deep-{DEEP - 1}")
    assert len(bottom.ancestors) == DEEP - 1
    assert bottom.root is not None and bottom.root.header.session_id == "deep-0"
    assert len(trace.model_dump_json()) > 0


def test_lineage_stops_at_the_scope(loaded: Pipeline) -> None:
    trace = reader(loaded, Scope.sessions(["target", "parent"])).trace_session("target")
    assert [r.header.session_id for r in trace.ancestors] == ["parent"]
    assert (trace.complete, trace.unresolved_parent_id, trace.descendants) == (False, "root", ())


def test_scenario_42_lineage_needs_a_listing(loaded: Pipeline) -> None:
    live = FakeLive([_live_header("shared", "ws-merge")], {"shared": _live_log("shared", "ws-merge")})
    broken = reader(loaded, "ws-merge", hosts=CLOSED_PORT, live=live)
    assert code_of(broken.trace_session, "shared") == "SESSION_QUERY_PERSISTENCE_FAILED"  # live
    assert code_of(broken.trace_session, "durable") == "SESSION_QUERY_PERSISTENCE_FAILED"


# -- I. surface classification (43–46) ------------------------------------------------------------
def test_scenario_43_three_way_classification(loaded: Pipeline) -> None:
    events = reader(loaded).list_events("s43")
    assert [e.surface for e in events] == ["log-only", "log-only", "shadowed", "log-only", "current"]
    assert events[2].replaced_by == 4 and events[4].sources == (2,)
    assert (events[4].surface_op, events[4].replace_start, events[4].replace_end) == ("replace", 2, 2)


def test_scenario_44_current_surface_and_capture_boundary(loaded: Pipeline) -> None:
    r = reader(loaded)
    surface = r.read_surface("s44")
    assert surface.captured_through_seq == 5
    assert [(e.seq, e.text) for e in surface.events] == [(4, "latest checkpoint"), (5, "latest answer")]
    empty = r.read_surface("empty")
    assert (empty.captured_through_seq, empty.events) == (None, ())
    assert r.list_events("empty") == ()


def test_reader_fold_agrees_with_the_indexer(loaded: Pipeline) -> None:
    """The worker stored surface states incrementally; the reader folds the whole log: they agree."""
    r = reader(loaded)
    client = loaded.view().client
    for sid in ("s43", "s44", "s46", "s47", "long"):
        body = {"size": 100, "query": {"term": {"session_id": sid}}, "sort": [{"seq": "asc"}]}
        hits = client.search(index=events_alias(loaded.opensearch.index_prefix), routing=sid, body=body)
        stored = [
            (h["_source"]["surface_state"], h["_source"].get("replaced_by")) for h in hits["hits"]["hits"]
        ]
        assert [(e.surface, e.replaced_by) for e in r.list_events(sid)] == stored


def test_scenario_45_invalid_logs_are_rejected_whole(loaded: Pipeline) -> None:
    r = reader(loaded, "ws-bad")
    for sid in [*INVALID_VALID_WIRE, *INVALID_RAW, "bad-gap"]:
        for read in (r.list_events, r.read_surface, lambda s: r.filter_events(s, [])):
            assert code_of(read, sid) == "SESSION_QUERY_INVALID_SURFACE", sid
        assert code_of(r.trace_event, sid, 0) == "SESSION_QUERY_INVALID_SURFACE", sid
        # read_event does not run the fold: a correctly positioned seq still reads.
        assert r.read_event(sid, 0).target.seq == 0
    listed = {rec.header.session_id: rec.stats for rec in r.list_sessions()}
    assert all(stats is not None and not stats.surface_valid for stats in listed.values())
    # In the seq-gap cases, index 1 holds seq 2: seqs 1 and 2 are EVENT_NOT_FOUND.
    for sid in [*INVALID_RAW, "bad-gap"]:
        assert listed[sid] is not None and listed[sid].seq_gaps == 1  # type: ignore[union-attr]
        assert code_of(r.read_event, sid, 1) == "SESSION_QUERY_EVENT_NOT_FOUND"
        assert code_of(r.read_event, sid, 2) == "SESSION_QUERY_EVENT_NOT_FOUND"
        window = r.read_event(sid, 0, after=5)
        assert [e.seq for e in window.events] == [0, 2] and window.end_seq == 2


def test_scenario_46_assistant_may_cite_an_empty_stream(loaded: Pipeline) -> None:
    (event,) = reader(loaded).list_events("s46")
    assert (event.surface, event.sources) == ("current", ())


# -- J. replacement chains and provenance (47–49) -------------------------------------------------
@pytest.mark.parametrize(
    ("seq", "expected"),
    [
        (3, ("shadowed", 4, (4, 8), (), (2,), (4,))),
        (4, ("shadowed", 8, (8,), (3,), (3, 2), (8,))),
        (2, ("log-only", None, (), (), (), (3, 4, 8))),
        (8, ("current", None, (), (4,), (2, 4), ())),
    ],
)
def test_scenario_47_chain_and_direct_links(loaded: Pipeline, seq: int, expected: tuple[Any, ...]) -> None:
    t = reader(loaded).trace_event("s47", seq)
    got = (t.target.surface, t.replaced_by, t.replacement_chain, t.replaced_event_seqs,
           t.source_event_seqs, t.derived_event_seqs)  # fmt: skip
    assert got == expected
    assert t.target.seq == seq and t.header.session_id == "s47"


def test_scenario_48_range_replacement_lists_removed_nodes(loaded: Pipeline) -> None:
    r = reader(loaded)
    assert r.trace_event("s44", 4).replaced_event_seqs == (2, 3)
    zero = r.trace_event("s44", 0)
    assert (zero.replaced_by, zero.replacement_chain, zero.target.text) == (2, (2, 4), "old")


def test_scenario_49_existence_is_checked_before_validation(loaded: Pipeline) -> None:
    r = reader(loaded, "ws-bad")
    assert code_of(r.trace_event, "bad-emptysrc", 9) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(r.trace_event, "bad-emptysrc", 0) == "SESSION_QUERY_INVALID_SURFACE"


# -- filters, paging and scope --------------------------------------------------------------------
def test_filter_events(loaded: Pipeline) -> None:
    r = reader(loaded)
    assert [e.seq for e in r.filter_events("s44", [{"kind": "text", "text": "LATEST"}])] == [4, 5]
    assert [e.seq for e in r.filter_events("s44", [{"kind": "surface", "values": ["shadowed"]}])] == [0, 2, 3]
    clauses = [{"kind": "seq", "from": 1, "to": 4}, {"kind": "type", "values": ["user/message"]}]
    assert [e.seq for e in r.filter_events("s44", clauses)] == [2, 3, 4]
    assert (
        code_of(r.filter_events, "s44", [{"kind": "seq", "from": 2, "to": 1}])
        == "SESSION_QUERY_INVALID_FILTER"
    )
    assert code_of(r.filter_events, "ghost", [{"kind": "surface", "values": ["future"]}]) == (
        "SESSION_QUERY_INVALID_FILTER"
    )


def test_list_sessions_and_filters(loaded: Pipeline) -> None:
    r = reader(loaded)
    listing = r.list_sessions()
    assert [s.header.session_id for s in listing] == ["empty", "long", "s47", "s46", "s44", "s43", "basic"]
    assert all(s.persisted and not s.live for s in listing)
    basic = listing[-1]
    assert basic.stats is not None and (basic.stats.last_seq, basic.stats.entry_count) == (3, 4)
    assert listing[0].stats is not None and listing[0].stats.last_seq is None
    since = [
        {"kind": "created-at", "from": T0 + timedelta(hours=5), "to": (T0 + timedelta(hours=6)).isoformat()}
    ]
    assert [s.header.session_id for s in r.list_sessions(since)] == ["long", "s47"]
    assert [s.header.session_id for s in r.list_sessions([{"kind": "id", "values": ["s43", "x"]}])] == ["s43"]
    lineage = reader(loaded, "ws-lin").list_sessions([{"kind": "parent", "values": ["target"]}])
    assert sorted(s.header.session_id for s in lineage) == ["a", "b", "older"]


def test_long_logs_page_with_search_after(loaded: Pipeline) -> None:
    small = reader(loaded, page_size=7)
    events = small.list_events("long")
    assert [e.seq for e in events] == list(range(40))
    assert events == reader(loaded).list_events("long")
    surface = small.read_surface("long")
    assert [e.text for e in surface.events] == [f"message {i}" for i in range(40) if i % 5 != 4 or i == 39]
    for page_size in (3, 7, 39, 40, 41):  # every read pages the whole log when nothing is cached
        uncached = reader(loaded, page_size=page_size, cache=False)
        assert uncached.read_surface("long") == surface
        assert uncached.list_events("long") == events
    assert small.trace_event("long", 4).replacement_chain == (5,)
    assert small.read_event("long", 20, before=10, after=10).start_seq == 10
    assert len(reader(loaded, "ws-deep", page_size=400).list_sessions()) == DEEP


def test_sessions_outside_the_scope_read_like_missing_ones(loaded: Pipeline) -> None:
    def failure(r: OpenSearchSessionReader, sid: str) -> list[tuple[str, str]]:
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

    workspace = reader(loaded, "ws-other")
    assert failure(workspace, "basic") == failure(workspace, "no-such-session")
    assert {code for code, _ in failure(workspace, "basic")} == {"SESSION_QUERY_SESSION_NOT_FOUND"}
    one = reader(loaded, Scope.session("basic"))
    assert one.read_event("basic", 0).target.text == "zero"
    assert failure(one, "s44") == failure(one, "no-such-session")
    assert [s.header.session_id for s in one.list_sessions()] == ["basic"]
    assert reader(loaded, "ws-other").list_sessions()[0].header.session_id == "foreign"


def test_cached_logs_follow_the_projection(loaded: Pipeline) -> None:
    r = reader(loaded, "ws-grow")
    assert r.read_surface("grow").captured_through_seq == 2
    assert r.trace_event("grow", 1).replaced_by is None  # cached now
    compaction = ev(
        "ws-grow", "grow", 4, "assistant/message", "compacted", surface=R(0, 3), sources=[0, 1, 2, 3]
    )
    loaded.append_all([ev("ws-grow", "grow", 3, text="g3"), compaction])
    loaded.index()
    surface = r.read_surface("grow")
    assert (surface.captured_through_seq, [e.text for e in surface.events]) == (4, ["compacted"])
    assert r.trace_event("grow", 1).replaced_by == 4
    uncached = reader(loaded, "ws-grow", cache=False)
    assert uncached.read_surface("grow") == surface
    assert uncached.list_events("grow") == r.list_events("grow")
    # A document that disappears changes the count: the log is loaded again, with its gap.
    client = loaded.view().client
    client.delete(
        index=events_alias(loaded.opensearch.index_prefix), id="grow:1", routing="grow", refresh=True
    )
    assert code_of(r.read_surface, "grow") == "SESSION_QUERY_INVALID_SURFACE"
    assert [e.seq for e in r.read_event("grow", 0, after=5).events] == [0, 2, 3, 4]


# -- K. live versus persisted (50–54) -------------------------------------------------------------
class FakeLive:
    """An in-memory LiveSource (the ingest side's appender will provide the real one)."""

    def __init__(self, headers: Sequence[HeaderRecord | SessionHeader], logs: dict[str, list[EventRecord]]):
        self.headers = list(headers)
        self.logs = logs

    def sessions(self) -> list[HeaderRecord | SessionHeader]:
        return list(self.headers)

    def events(self, session_id: str) -> list[EventRecord] | None:
        log = self.logs.get(session_id)
        return None if log is None else list(log)


class Untouchable:
    """An OpenSearch client that fails the test if the reader touches it at all."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"OpenSearch was consulted ({name})")


def _live_header(sid: str, ws: str, t: int = 3, **kw: Any) -> HeaderRecord:
    record = parse_record(hdr(ws, sid, t, **kw))
    assert isinstance(record, HeaderRecord)
    return record


def _live_event(ws: str, sid: str, seq: int, text: str, **kw: Any) -> EventRecord:
    record = parse_record(ev(ws, sid, seq, "assistant/message" if seq % 2 else "user/message", text, **kw))
    assert isinstance(record, EventRecord)
    return record


def _live_log(sid: str, ws: str) -> list[EventRecord]:
    return [
        _live_event(ws, sid, 0, "live zero"),
        _live_event(ws, sid, 1, "live one"),
        _live_event(ws, sid, 2, "live summary", surface=R(0, 1), sources=[0, 1]),
    ]


def test_scenario_50_merge_and_ordering(loaded: Pipeline) -> None:
    tail = FakeLive(
        [_live_header("shared", "ws-merge")], {"shared": [_live_event("ws-merge", "shared", 1, "live")]}
    )
    r = reader(loaded, "ws-merge", live=tail)
    assert [(s.header.session_id, s.live, s.persisted) for s in r.list_sessions()] == [
        ("shared", True, True), ("durable", False, True)]  # fmt: skip
    one = r.read_event("shared", 1, before=1)
    assert (one.target.text, one.target.live) == ("live", True)
    assert [(e.text, e.live) for e in one.events] == [("persisted zero", False), ("live", True)]
    assert [e.text for e in r.read_surface("durable").events] == ["durable content"]
    # A live tail beyond the projection extends the log.
    longer = FakeLive(tail.headers, {"shared": [_live_event("ws-merge", "shared", 2, "newer")]})
    events = reader(loaded, "ws-merge", live=longer).list_events("shared")
    assert [(e.seq, e.text, e.live) for e in events] == [
        (0, "persisted zero", False), (1, "persisted", False), (2, "newer", True)]  # fmt: skip
    # Live entries already released (the index shows them): the projection serves the log.
    released = FakeLive(tail.headers, {"shared": []})
    r = reader(loaded, "ws-merge", live=released)
    assert r.read_event("shared", 1).target.text == "persisted"
    first = r.list_sessions()[0]
    assert (first.header.session_id, first.live, first.persisted) == ("shared", True, True)
    # A live tail the projection has never seen: the log has a gap until the indexer catches up.
    unseen = FakeLive(
        [_live_header("fresh", "ws-merge")], {"fresh": [_live_event("ws-merge", "fresh", 3, "x")]}
    )
    r = reader(loaded, "ws-merge", live=unseen)
    assert code_of(r.list_events, "fresh") == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(r.read_event, "fresh", 3) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert [s.header.session_id for s in r.list_sessions()] == ["fresh", "shared", "durable"]
    # A live log from seq 0 is the whole session: OpenSearch is not consulted for it.
    whole = FakeLive(tail.headers, {"shared": _live_log("shared", "ws-merge")})
    untouched = OpenSearchSessionReader(Scope.workspace("ws-merge"), client=Untouchable(), live=whole)  # type: ignore[arg-type]
    assert untouched.read_event("shared", 1).target.text == "live one"


def test_scenario_51_conflicting_immutable_headers(loaded: Pipeline) -> None:
    moved = FakeLive(
        [_live_header("shared", "conflict")], {"shared": [_live_event("conflict", "shared", 1, "x")]}
    )
    for scope in (Scope.sessions(["shared", "durable"]), Scope.workspace("ws-merge")):
        assert code_of(reader(loaded, scope, live=moved).list_sessions) == "SESSION_QUERY_SOURCE_CONFLICT"
    assert (
        code_of(reader(loaded, "ws-merge", live=moved).read_event, "shared", 1)
        == "SESSION_QUERY_SOURCE_CONFLICT"
    )
    depth = FakeLive([_live_header("dd", "ws-conf", 1)], {})  # persisted delegation_depth 1, live absent
    assert code_of(reader(loaded, "ws-conf", live=depth).list_sessions) == "SESSION_QUERY_SOURCE_CONFLICT"
    meta = FakeLive([_live_header("meta", "ws-conf", 1, origin="subagent", agent_preset="other")], {})
    listing = {s.header.session_id: s for s in reader(loaded, "ws-conf", live=meta).list_sessions()}
    assert (listing["meta"].live, listing["meta"].persisted, listing["meta"].header.origin) == (
        True,
        True,
        "subagent",
    )


def test_scenario_52_unmounted_persistence(loaded: Pipeline) -> None:
    live = FakeLive([_live_header("shared", "ws-merge")], {"shared": _live_log("shared", "ws-merge")})
    r = reader(loaded, "ws-merge", live=live, persistence=False)
    assert [(s.header.session_id, s.live, s.persisted) for s in r.list_sessions()] == [
        ("shared", True, False)
    ]
    assert code_of(r.read_surface, "durable") == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_scenario_53_live_reads_are_independent_of_persistence_health(loaded: Pipeline) -> None:
    live = FakeLive([_live_header("live", "ws-merge")], {"live": _live_log("live", "ws-merge")})
    for broken in (
        reader(loaded, "ws-merge", hosts=CLOSED_PORT, live=live),
        OpenSearchSessionReader(Scope.workspace("ws-merge"), client=Untouchable(), live=live),  # type: ignore[arg-type]
    ):
        assert [e.surface for e in broken.list_events("live")] == ["shadowed", "shadowed", "current"]
        assert broken.trace_event("live", 1).replaced_by == 2
        assert broken.read_event("live", 1).target.text == "live one"
    failing = reader(loaded, "ws-merge", hosts=CLOSED_PORT, live=live)
    assert code_of(failing.list_sessions) == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(failing.list_events, "durable") == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(failing.read_event, "durable", 0, 1, 1) == "SESSION_QUERY_PERSISTENCE_FAILED"


def test_scenario_54_persistence_failure_taxonomy(loaded: Pipeline) -> None:
    client = loaded.view().client
    index = events_alias(loaded.opensearch.index_prefix)
    source = client.get(index=index, id="corrupt:1", routing="corrupt")["_source"]
    client.index(index=index, id="corrupt:1", routing="corrupt", body={**source, "schema": 99}, refresh=True)
    r = reader(loaded, "ws-corrupt")
    with pytest.raises(SessionQueryError) as caught:
        r.list_events("corrupt")
    assert caught.value.code == "SESSION_QUERY_CORRUPT_SESSION"
    assert caught.value.__cause__ is not None and "schema" in str(caught.value)
    # A generic failure: the projection unreachable, or its index missing.
    assert code_of(reader(loaded, "ws-corrupt", hosts=CLOSED_PORT).list_events, "corrupt") == (
        "SESSION_QUERY_PERSISTENCE_FAILED"
    )
    missing = OpenSearchSessionReader(
        Scope.workspace("ws-corrupt"), loaded.opensearch, index_prefix="no-such-prefix-xyz"
    )
    assert code_of(missing.read_event, "corrupt", 0) == "SESSION_QUERY_PERSISTENCE_FAILED"
    assert code_of(missing.list_sessions) == "SESSION_QUERY_PERSISTENCE_FAILED"
    # The header changing between listing and loading: backscroll loads the session document once
    # per read, so the equivalent is a live header disagreeing with the projection's (see 51).
    # No persistence and an unknown id.
    unmounted = reader(loaded, "ws-corrupt", persistence=False)
    assert code_of(unmounted.read_event, "corrupt", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"


# -- the command line -----------------------------------------------------------------------------
def test_cli_commands(loaded: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    import typer
    from typer.testing import CliRunner

    from backscroll.cli.reads_cmd import register

    monkeypatch.setenv("BACKSCROLL_BACKEND", "kafka-opensearch")  # the read commands follow the backend
    monkeypatch.setenv("BACKSCROLL_OPENSEARCH_INDEX_PREFIX", loaded.opensearch.index_prefix)
    app = typer.Typer()
    register(app)
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, (args, result.output)
        return result.output

    listing = orjson.loads(run("sessions", "--workspace", "ws-read", "--json"))
    assert [s["header"]["session_id"] for s in listing][-2:] == ["s43", "basic"]
    assert "basic" in run("sessions", "-w", "ws-read") and "invalid" in run("sessions", "-w", "ws-bad")
    pair = orjson.loads(run("sessions", "-s", "s43", "-s", "s44", "--json"))
    assert [s["header"]["session_id"] for s in pair] == ["s44", "s43"]
    window = orjson.loads(run("read", "basic", "2", "--before", "1", "--after", "1", "--json"))
    assert (window["start_seq"], window["end_seq"], window["target"]["text"]) == (1, 3, "two")
    human = run("read", "basic", "2", "-B", "1")
    assert "▶" in human and "two" in human and "grep" in human
    lineage = orjson.loads(run("trace", "target", "--workspace", "ws-lin", "--json"))
    assert lineage["complete"] and [n["session_id"] for n in lineage["descendants"]][:2] == ["older", "a"]
    tree = run("trace", "target", "-w", "ws-lin")
    assert all(name in tree for name in ("parent ← root", "older", "grandchild", "(target)"))
    assert "outside (missing or outside the scope)" in run("trace", "partial", "-w", "ws-lin")
    assert "more descendants" in run("trace", "deep-0", "-w", "ws-deep", "--depth", "5")
    traced = orjson.loads(run("trace", "s47", "3", "--json"))
    assert (traced["replaced_by"], traced["replacement_chain"], traced["derived_event_seqs"]) == (
        4,
        [4, 8],
        [4],
    )
    assert "4, 8" in run("trace", "s47", "3")
    missing = orjson.loads(run("read", "ghost", "0", "--json", code=1))
    assert missing["error"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert "SESSION_QUERY_INVALID_WINDOW" in run("read", "basic", "0", "--before", "99", code=2)
    assert "SESSION_QUERY_INVALID_SURFACE" in run("trace", "bad-gap", "0", "-w", "ws-bad", code=1)
    run("sessions", code=2)
    run("sessions", "-w", "a", "-s", "b", code=2)


def test_cli_main_registers_the_read_commands() -> None:
    from backscroll.cli.main import app

    names = {command.name for command in app.registered_commands}
    assert {"sessions", "read", "trace"} <= names
