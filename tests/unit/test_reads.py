"""Pure read logic: windows, lineage, filters, the live + persisted merge, detached
results; and the OpenSearchSessionReader paths that never reach OpenSearch (configuration, live-only
reads)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from backscroll.indexer.document import event_document
from backscroll.ingest.wire import EventRecord, HeaderRecord, parse_record
from backscroll.query import (
    EventRecordView,
    LiveSource,
    OpenSearchSessionReader,
    Scope,
    SessionHeader,
    SessionQueryError,
    SessionRecord,
    reads,
)
from backscroll.query.reads import (
    LogEntry,
    SurfaceMarker,
    apply_event_filters,
    apply_session_filters,
    check_compatible,
    check_read_window_max,
    check_session_id,
    check_window,
    entry_from_record,
    entry_from_source,
    event_view,
    fold_log,
    locate_index,
    merge_listing,
    merge_logs,
    parse_event_filters,
    parse_session_filters,
    trace_session,
    window_bounds,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)
A = SurfaceMarker("append")


def code_of(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(SessionQueryError) as caught:
        fn(*args, **kwargs)
    return caught.value.code


def entry(
    seq: int,
    type_: str = "user/message",
    surface: SurfaceMarker | None = A,
    sources: Sequence[int] | None = None,
    text: str = "",
    at: int | None = None,
) -> LogEntry:
    if type_ not in ("user/message", "assistant/message", "tool/result") and surface is A:
        surface = None
    return LogEntry(
        seq=seq,
        type=type_,
        time=T0 + timedelta(seconds=seq if at is None else at),
        workspace_id="w",
        text=text,
        surface=surface,
        sources=None if sources is None else tuple(sources),
    )


def header(
    sid: str, *, ws: str | None = "w", t: int | None = 0, parent: str | None = None, **kw: Any
) -> SessionHeader:
    created = None if t is None else T0 + timedelta(hours=t)
    return SessionHeader(session_id=sid, workspace_id=ws, created_at=created, parent_session_id=parent, **kw)


def srec(sid: str, parent: str | None = None, t: int | None = 0, **kw: Any) -> SessionRecord:
    return SessionRecord(header=header(sid, parent=parent, t=t, **kw), live=False, persisted=True)


def wire_event(
    sid: str, seq: int, type_: str = "user/message", text: str = "", ws: str = "w", **kw: Any
) -> EventRecord:
    data: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": type_,
        "time": (T0 + timedelta(seconds=seq)).isoformat(),
        "text": text,
    }
    if type_ in ("user/message", "assistant/message", "tool/result"):
        data["surface"] = {"op": "append"}
    data.update(kw)
    record = parse_record(data)
    assert isinstance(record, EventRecord)
    return record


def wire_header(sid: str, ws: str = "w", t: int = 0, **kw: Any) -> HeaderRecord:
    record = parse_record(
        {
            "v": 1,
            "kind": "header",
            "workspace_id": ws,
            "session_id": sid,
            "created_at": (T0 + timedelta(hours=t)).isoformat(),
            **kw,
        }
    )
    assert isinstance(record, HeaderRecord)
    return record


# -- windows --------------------------------------------------------------------------------------
def test_window_validation() -> None:
    assert check_window(0, 0, 50) == (0, 0)
    assert check_window(50, 50, 50) == (50, 50)
    assert check_window(None, 3, 50) == (0, 3)
    for before, after in [(51, 0), (-1, 0), (0, 0.5), (True, 0), (0, False), ("1", 0), (0, 1.0)]:
        assert code_of(check_window, before, after, 50) == "SESSION_QUERY_INVALID_WINDOW"
    assert check_window(0, 0, 0) == (0, 0)
    assert code_of(check_window, 1, 0, 0) == "SESSION_QUERY_INVALID_WINDOW"


def test_read_window_max_config() -> None:
    assert check_read_window_max(0) == 0
    assert check_read_window_max(50) == 50
    for bad in (-1, 1.5, True, "50", None):
        assert code_of(check_read_window_max, bad) == "SESSION_QUERY_INVALID_CONFIG"


def test_window_clamps_at_edges() -> None:
    assert window_bounds(4, 2, 1, 1) == (1, 3)  # a window around seq 2
    assert window_bounds(4, 0, 5, 0) == (0, 0)  # a window clamped to the log
    assert window_bounds(4, 3, 0, 5) == (3, 3)
    assert window_bounds(1, 0, 50, 50) == (0, 0)


def test_locate_index_is_the_read_rule() -> None:
    log = [entry(0), entry(1), entry(2), entry(3)]
    assert [locate_index(log, s) for s in (0, 3)] == [0, 3]
    for missing in (9, -1, 4, 0.5, 1.0, True, "1", None):
        assert locate_index(log, missing) is None
    gap = [entry(0), entry(2)]  # a seq gap: index 1 holds seq 2
    assert locate_index(gap, 0) == 0
    assert locate_index(gap, 1) is None
    assert locate_index(gap, 2) is None


def test_session_id_validation() -> None:
    for blank in ("", "   ", None, 7):
        assert code_of(check_session_id, blank) == "SESSION_QUERY_INVALID_SCOPE"
    for unknown in ("a b", "x\n", "é", "a" * 129):
        assert code_of(check_session_id, unknown) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert check_session_id("s-1:a.b_c") == "s-1:a.b_c"


# -- lineage --------------------------------------------------------------------------------------
def test_complete_lineage_with_ordered_descendants() -> None:
    listing = [
        srec("root", t=0), srec("parent", "root", 1), srec("target", "parent", 2),
        srec("b", "target", 4), srec("a", "target", 4), srec("older", "target", 3),
        srec("grandchild", "a", 5), srec("unrelated", None, 9),
    ]  # fmt: skip
    trace = trace_session("target", listing)
    assert [r.header.session_id for r in trace.ancestors] == ["parent", "root"]
    assert trace.complete and trace.unresolved_parent_id is None
    assert trace.root is not None and trace.root.header.session_id == "root"
    assert [n.session_id for n in trace.children()] == ["older", "a", "b"]
    assert [n.session_id for n in trace.children("a")] == ["grandchild"]
    assert trace.children("grandchild") == () and trace.children("nope") == ()
    assert [(n.session_id, n.depth) for n in trace.descendants] == [
        ("older", 1),
        ("a", 1),
        ("grandchild", 2),
        ("b", 1),
    ]
    assert trace.depth == 2


def test_root_is_the_target_without_parent() -> None:
    trace = trace_session("solo", [srec("solo")])
    assert trace.complete and trace.root == trace.target and trace.ancestors == ()


def test_missing_immediate_parent() -> None:
    trace = trace_session("partial", [srec("partial", "outside")])
    assert (trace.complete, trace.unresolved_parent_id, trace.ancestors, trace.root) == (
        False,
        "outside",
        (),
        None,
    )


def test_missing_grandparent() -> None:
    trace = trace_session("T", [srec("T", "P", 2), srec("P", "G", 1)])
    assert [r.header.session_id for r in trace.ancestors] == ["P"]
    assert (trace.complete, trace.unresolved_parent_id) == (False, "G")


def test_cycles_and_missing_targets() -> None:
    listing = [srec("a", "b"), srec("b", "a"), srec("c", "c"), srec("t", "x"), srec("x", "y"), srec("y", "x")]
    for target in ("a", "b", "c"):
        assert code_of(trace_session, target, listing) == "SESSION_QUERY_INVALID_LINEAGE"
    # A cycle reachable from the target (not through it) is also met by the ancestor walk.
    assert code_of(trace_session, "t", listing) == "SESSION_QUERY_INVALID_LINEAGE"
    assert code_of(trace_session, "missing", listing) == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_cycle_elsewhere_does_not_disturb_descendants() -> None:
    listing = [srec("root"), srec("kid", "root", 1), srec("a", "b"), srec("b", "a"), srec("c", "c")]
    trace = trace_session("root", listing)
    assert [n.session_id for n in trace.descendants] == ["kid"]


def test_siblings_sort_by_created_at_then_id_without_header_last() -> None:
    listing = [srec("p"), srec("z", "p", 1), srec("y", "p", 1), srec("nohdr", "p", None), srec("x", "p", 2)]
    assert [n.session_id for n in trace_session("p", listing).children()] == ["y", "z", "x", "nohdr"]


@pytest.mark.parametrize("order", ["forward", "reversed"])
def test_deep_chain(order: str) -> None:
    depth = 3000
    listing = [srec(f"deep-{i}", f"deep-{i - 1}" if i else None, i) for i in range(depth)]
    if order == "reversed":
        listing.reverse()
    top = trace_session("deep-0", listing)
    assert top.complete and top.depth == depth - 1
    assert [n.session_id for n in top.descendants[:3]] == ["deep-1", "deep-2", "deep-3"]
    assert top.descendants[-1].depth == depth - 1 and top.descendants[-1].children == ()
    assert len(top.model_dump_json()) > depth  # a flat forest serialises at any depth
    bottom = trace_session(f"deep-{depth - 1}", listing)
    assert len(bottom.ancestors) == depth - 1 and bottom.ancestors[0].header.session_id == f"deep-{depth - 2}"
    assert bottom.root is not None and bottom.root.header.session_id == "deep-0"
    assert bottom.descendants == ()
    # Closing the chain into a 3,000-long cycle is found iteratively too.
    looped = [*listing, srec("deep-0", f"deep-{depth - 1}")]
    assert code_of(trace_session, "deep-1500", looped) == "SESSION_QUERY_INVALID_LINEAGE"


# -- filters -------------------------------------------------------------------------------------
def views(*entries: LogEntry) -> list[EventRecordView]:
    folded = fold_log(entries)
    return [event_view("s", e, folded) for e in entries]


def seqs(events: Sequence[EventRecordView]) -> list[int]:
    return [e.seq for e in events]


LOG = views(
    entry(0, "turn/start"),
    entry(1, text="hello   world"),
    entry(2, "assistant/chunk", text="chunk text"),
    entry(3, "assistant/message", SurfaceMarker("replace", 1, 1), [1], text="Café au lait: a.b"),
    entry(4, "tool/call", text="grep -r needle"),
    entry(5, "tool/result", text="needle found\nin file"),
)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([], [1, 2, 3, 4, 5]),  # events with text only (empty text → no document)
        ([{"kind": "seq", "from": 2, "to": 4}], [2, 3, 4]),
        ([{"kind": "seq", "from": 3}], [3, 4, 5]),
        ([{"kind": "seq", "to": 1.5}], [1]),
        ([{"kind": "type", "values": ["tool/call", "tool/result"]}], [4, 5]),
        ([{"kind": "type", "values": []}], []),
        ([{"kind": "surface", "values": ["current"]}], [3, 5]),
        ([{"kind": "surface", "values": ["shadowed", "log-only"]}], [1, 2, 4]),
        ([{"kind": "surface", "values": ["current"]}, {"kind": "type", "values": ["tool/result"]}], [5]),
        ([{"kind": "text", "text": "CAFÉ"}], [3]),
        ([{"kind": "text", "text": "cafe"}], []),  # not accent-insensitive
        ([{"kind": "text", "text": "  hello world "}], [1]),  # whitespace run matches 1+ whitespace
        ([{"kind": "text", "text": "found in"}], [5]),  # across a newline
        ([{"kind": "text", "text": "a.b"}], [3]),
        ([{"kind": "text", "text": "a*b"}], []),  # metacharacters are literal
        ([{"kind": "text", "text": "NEEDLE"}], [4, 5]),
        ([{"kind": "time", "from": T0 + timedelta(seconds=2), "to": "2026-11-01T00:00:03Z"}], [2, 3]),
        ([{"kind": "time", "from": (T0.timestamp() + 4) * 1000}], [4, 5]),
        ([{"kind": "time", "to": "2026-11-01T01:00:01+01:00"}], [1]),
    ],
)
def test_event_filters(filters: list[dict[str, Any]], expected: list[int]) -> None:
    assert seqs(apply_event_filters(LOG, parse_event_filters(filters))) == expected


@pytest.mark.parametrize(
    "filters",
    [
        None, {"kind": "seq"}, "seq", [1], [{"values": []}], [{"kind": "future"}],
        [{"kind": "seq", "from": 2, "to": 1}], [{"kind": "seq", "from": float("nan")}],
        [{"kind": "seq", "to": float("inf")}], [{"kind": "seq", "from": True}],
        [{"kind": "seq", "from": "1"}],
        [{"kind": "seq", "from": 1, "extra": 2}], [{"kind": "time", "from": datetime(2026, 1, 1)}],
        [{"kind": "time", "from": "yesterday"}], [{"kind": "time", "from": "2026-11-02T00:00:00Z", "to": T0}],
        [{"kind": "surface", "values": ["future"]}], [{"kind": "surface", "values": "current"}],
        [{"kind": "type", "values": [3]}], [{"kind": "type"}], [{"kind": "type", "values": [None]}],
        [{"kind": "text", "text": "   "}], [{"kind": "text", "text": 3}], [{"kind": "text"}],
    ],
)  # fmt: skip
def test_invalid_event_filters(filters: Any) -> None:
    assert code_of(parse_event_filters, filters) == "SESSION_QUERY_INVALID_FILTER"


def test_filters_are_copied_at_call_time() -> None:
    clause: dict[str, Any] = {"kind": "type", "values": ["tool/call"]}
    raw = [clause]
    parsed = parse_event_filters(raw)
    clause["values"].append("tool/result")
    raw.append({"kind": "type", "values": []})
    assert seqs(apply_event_filters(LOG, parsed)) == [4]


def test_session_filters() -> None:
    records = [
        SessionRecord(header=header("a", ws="w1", t=1, parent=None), live=True, persisted=False),
        SessionRecord(header=header("b", ws="w2", t=2, parent="a"), live=False, persisted=True),
        SessionRecord(
            header=header("c", ws=None, t=None, parent="a", has_header=False), live=True, persisted=True
        ),
    ]

    def ids(filters: Any) -> list[str]:
        return [r.header.session_id for r in apply_session_filters(records, parse_session_filters(filters))]

    assert ids(None) == ids([]) == ["a", "b", "c"]
    assert ids([{"kind": "id", "values": ["c", "a", "zz"]}]) == ["a", "c"]
    assert ids([{"kind": "workspace", "values": ["w2", None]}]) == ["b", "c"]
    assert ids([{"kind": "parent", "values": [None]}]) == ["a"]
    assert ids([{"kind": "parent", "values": ["a"]}, {"kind": "workspace", "values": ["w2"]}]) == ["b"]
    assert ids([{"kind": "availability", "values": ["live"]}]) == ["a", "c"]
    assert ids([{"kind": "availability", "values": ["persisted"]}]) == ["b", "c"]
    assert ids([{"kind": "availability", "values": []}]) == []
    assert ids([{"kind": "created-at", "from": T0 + timedelta(hours=2)}]) == ["b"]
    assert ids([{"kind": "created-at", "to": (T0.timestamp() + 3600) * 1000}]) == ["a"]
    for bad in (
        {"kind": "availability", "values": ["remote"]}, {"kind": "id", "values": [None]},
        {"kind": "cwd", "values": ["w"]}, {"kind": "created-at", "from": 5, "to": 1},
        {"kind": "created-at", "from": float("-inf")}, {"kind": "workspace", "values": "w1"},
    ):  # fmt: skip
        assert code_of(parse_session_filters, [bad]) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(parse_session_filters, {"kind": "id"}) == "SESSION_QUERY_INVALID_FILTER"


# -- live + persisted -----------------------------------------------------------------------------
def test_merge_logs_live_wins_per_seq() -> None:
    persisted = [entry(0, text="p0"), entry(1, text="p1"), entry(2, text="p2")]
    live = [
        LogEntry(seq=s, type="user/message", time=T0, text=f"l{s}", surface=A, live=True) for s in (2, 1, 3)
    ]
    merged = merge_logs(persisted, live)
    assert [(e.seq, e.text, e.live) for e in merged] == [(0, "p0", False), (1, "l1", True), (2, "l2", True),
                                                         (3, "l3", True)]  # fmt: skip


def test_listing_merge_and_order() -> None:
    persisted = [srec("durable", t=2, ws="same"), srec("shared", t=3, ws="same")]
    live = [header("shared", t=3, ws="same", title="live title")]
    listing = merge_listing(persisted, live, Scope.workspace("same"))
    assert [(r.header.session_id, r.live, r.persisted) for r in listing] == [
        ("shared", True, True),
        ("durable", False, True),
    ]
    assert listing[0].header.title == "live title"


def test_listing_sorts_newest_first_then_id_then_headerless() -> None:
    persisted = [srec("b", t=1), srec("a", t=1), srec("new", t=5), srec("nohdr", t=None, has_header=False)]
    ids = [r.header.session_id for r in merge_listing(persisted, [], Scope.workspace("w"))]
    assert ids == ["new", "a", "b", "nohdr"]


@pytest.mark.parametrize(
    ("live", "conflict"),
    [
        (header("s", ws="conflict"), True),
        (header("s", t=1), True),
        (header("s", parent="p"), True),
        (header("s", seed_length=4), True),
        (header("s", delegation_depth=0), True),  # persisted has 1, live absent (0)
        (header("s", delegation_depth=1, origin="subagent", agent_preset="x", title="t"), False),
        (header("s", delegation_depth=1, seed_length=0), False),  # absent seed_length counts as 0
        (SessionHeader(session_id="s", workspace_id="w", has_header=False), False),
        (SessionHeader(session_id="s", workspace_id="other", has_header=False), True),
    ],
)
def test_header_compatibility(live: SessionHeader, conflict: bool) -> None:
    persisted = header("s", delegation_depth=1, origin="main", agent_preset="y")
    if conflict:
        assert code_of(check_compatible, live, persisted) == "SESSION_QUERY_SOURCE_CONFLICT"
        listing = [SessionRecord(header=persisted, live=False, persisted=True)]
        code = code_of(merge_listing, listing, [live], Scope.session("s"))
        assert code == "SESSION_QUERY_SOURCE_CONFLICT"
    else:
        check_compatible(live, persisted)


def test_a_placeholder_live_header_does_not_hide_the_persisted_one() -> None:
    placeholder = SessionHeader(session_id="s", workspace_id="w", has_header=False)
    (merged,) = merge_listing([srec("s", t=4, title="kept")], [placeholder], Scope.workspace("w"))
    assert (merged.live, merged.persisted, merged.header.title, merged.header.has_header) == (
        True,
        True,
        "kept",
        True,
    )
    assert merged.header.created_at == T0 + timedelta(hours=4)
    (only_live,) = merge_listing([], [placeholder], Scope.workspace("w"))
    assert only_live.header == placeholder


def test_live_sessions_outside_the_scope_are_not_listed() -> None:
    live = [header("mine", ws="w"), header("theirs", ws="x")]
    ids = [r.header.session_id for r in merge_listing([], live, Scope.workspace("w"))]
    assert ids == ["mine"]
    assert [r.header.session_id for r in merge_listing([], live, Scope.session("theirs"))] == ["theirs"]
    # A live header that moves an in-scope persisted session out of the workspace is a conflict.
    code = code_of(merge_listing, [srec("theirs", ws="w")], live, Scope.workspace("w"))
    assert code == "SESSION_QUERY_SOURCE_CONFLICT"


# -- documents, entries and detached results ------------------------------------------------------
def test_entry_from_source_matches_entry_from_record() -> None:
    records = [
        wire_event("s", 0, "user/message", "hello"),
        wire_event("s", 1, "tool/call", "grep -r x", tool_name="grep", turn=2, role="assistant"),
        wire_event(
            "s",
            2,
            "tool/result",
            "out",
            tool_name="grep",
            role="tool",
            attrs={"call_id": "c1", "n": 3},
            surface={"op": "replace", "start": 0, "end": 0},
            sources=[0, 1],
        ),
        wire_event("s", 3, "turn/end"),
    ]
    for record in records:
        doc = event_document(record, surface_state="current")
        from_doc = entry_from_source("s", doc, with_text=True)
        from_live = entry_from_record(record)
        from_live.live = False
        assert from_doc == from_live
        assert from_doc.fold_event() == from_live.fold_event()
        skeleton = entry_from_source(
            "s", {k: v for k, v in doc.items() if k not in ("text", "args")}, with_text=False
        )
        assert skeleton.text is None


@pytest.mark.parametrize(
    "change",
    [
        {"schema": 2}, {"schema": None}, {"type": None}, {"seq": "3"}, {"seq": -1}, {"time": "yesterday"},
        {"time": "2026-11-01T00:00:00"}, {"surface_op": "rotate"}, {"surface_op": "replace"},
        {"sources": ["1"]}, {"sources": {"a": 1}}, {"attrs": [1]}, {"session_id": "other"}, {"turn": 1.5},
    ],
)  # fmt: skip
def test_malformed_documents_are_corrupt_sessions(change: dict[str, Any]) -> None:
    doc = event_document(wire_event("s", 0, text="x"), surface_state="current")
    doc.update(change)
    assert code_of(entry_from_source, "s", doc, with_text=True) == "SESSION_QUERY_CORRUPT_SESSION"
    bad_session = {"session_id": "s", "created_at": "not a time", "has_header": True}
    assert code_of(reads.record_from_source, bad_session) == "SESSION_QUERY_CORRUPT_SESSION"
    assert code_of(reads.header_from_source, {"workspace_id": "w"}) == "SESSION_QUERY_CORRUPT_SESSION"


def test_results_are_frozen_detached_copies() -> None:
    source = LogEntry(
        seq=0, type="tool/result", time=T0, text="x", surface=A, sources=(1,), attrs={"call_id": "c"}
    )
    view = event_view("s", source, fold_log([source]))
    with pytest.raises(ValueError):
        view.text = "changed"  # type: ignore[misc]
    assert view.attrs is not None
    view.attrs["call_id"] = "mutated"
    assert source.attrs == {"call_id": "c"}
    record = wire_event("s", 0, "tool/result", "x", attrs={"call_id": "c"})
    live_entry = entry_from_record(record)
    assert live_entry.attrs is not None
    live_entry.attrs["call_id"] = "mutated"
    assert record.attrs == {"call_id": "c"}
    assert EventRecordView.model_validate_json(view.model_dump_json()) == view


# -- OpenSearchSessionReader without OpenSearch -------------------------------------------------------------
class Untouchable:
    """An OpenSearch client that fails the test if the reader touches it at all."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"OpenSearch was consulted ({name})")


class FakeLive:
    """An in-memory LiveSource: headers and the live entries of each session."""

    def __init__(self, headers: Sequence[HeaderRecord | SessionHeader], events: dict[str, list[EventRecord]]):
        self.headers = list(headers)
        self.logs = events
        self.calls = 0

    def sessions(self) -> list[HeaderRecord | SessionHeader]:
        self.calls += 1
        return list(self.headers)

    def events(self, session_id: str) -> list[EventRecord] | None:
        self.calls += 1
        log = self.logs.get(session_id)
        return None if log is None else list(log)


def live_log(sid: str = "live", ws: str = "w") -> list[EventRecord]:
    return [
        wire_event(sid, 0, "user/message", "question", ws=ws),
        wire_event(sid, 1, "assistant/message", "first answer", ws=ws),
        wire_event(sid, 2, "assistant/message", "compacted", ws=ws,
                   surface={"op": "replace", "start": 0, "end": 1}, sources=[0, 1]),
    ]  # fmt: skip


def live_reader(**kwargs: Any) -> tuple[OpenSearchSessionReader, FakeLive]:
    fake = FakeLive([wire_header("live")], {"live": live_log()})
    assert isinstance(fake, LiveSource)
    return OpenSearchSessionReader(Scope.workspace("w"), client=Untouchable(), live=fake, **kwargs), fake  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"read_window_max": -1}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"read_window_max": 2.5}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"read_window_max": True}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"page_size": 0}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"page_size": 10_001}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"request_timeout_s": 0}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"request_timeout_s": float("nan")}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"persistence": "no"}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"live": object()}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"hosts": "ftp://nowhere"}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"index_prefix": "Bad Prefix"}, "SESSION_QUERY_INVALID_CONFIG"),
    ],
)
def test_configuration_errors_at_construction(kwargs: dict[str, Any], code: str) -> None:
    assert code_of(OpenSearchSessionReader, Scope.workspace("w"), **kwargs) == code


def test_scope_is_required() -> None:
    assert code_of(OpenSearchSessionReader, "w") == "SESSION_QUERY_INVALID_SCOPE"


def test_window_validation_comes_first() -> None:
    reader = OpenSearchSessionReader(Scope.workspace("w"), client=Untouchable())  # type: ignore[arg-type]
    for before, after in [(51, 0), (-1, 0), (0, 0.5)]:
        assert code_of(reader.read_event, "nope", 0, before, after) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(reader.read_event, "", 0, 51) == "SESSION_QUERY_INVALID_WINDOW"
    zero = OpenSearchSessionReader(Scope.workspace("w"), read_window_max=0, client=Untouchable())  # type: ignore[arg-type]
    assert code_of(zero.read_event, "nope", 0, before=1) == "SESSION_QUERY_INVALID_WINDOW"


def test_blank_session_ids_are_invalid_scope_not_all_sessions() -> None:
    reader, _ = live_reader()
    for method in (reader.list_events, reader.read_surface, reader.trace_session):
        assert code_of(method, " ") == "SESSION_QUERY_INVALID_SCOPE"


def test_live_sessions_are_read_without_opensearch() -> None:
    reader, fake = live_reader()
    events = reader.list_events("live")
    assert [(e.seq, e.surface, e.live) for e in events] == [(0, "shadowed", True), (1, "shadowed", True),
                                                            (2, "current", True)]  # fmt: skip
    surface = reader.read_surface("live")
    assert (surface.captured_through_seq, [e.text for e in surface.events]) == (2, ["compacted"])
    read = reader.read_event("live", 1, before=5, after=5)
    assert (read.start_seq, read.end_seq, read.target.text) == (0, 2, "first answer")
    traced = reader.trace_event("live", 1)
    assert (traced.replaced_by, traced.derived_event_seqs) == (2, (2,))
    assert reader.trace_event("live", 2).replaced_event_seqs == (0, 1)
    assert [e.seq for e in reader.filter_events("live", [{"kind": "text", "text": "ANSWER"}])] == [1]
    assert code_of(reader.read_event, "live", 3) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert fake.calls > 0


def test_live_session_outside_the_scope_is_not_found() -> None:
    fake = FakeLive([wire_header("elsewhere", ws="x")], {"elsewhere": live_log("elsewhere", ws="x")})
    reader = OpenSearchSessionReader(Scope.workspace("w"), live=fake, persistence=False)
    assert code_of(reader.read_event, "elsewhere", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(reader.read_event, "nowhere", 0) == code_of(reader.read_event, "elsewhere", 0)
    assert reader.list_sessions() == ()


def test_without_persistence_only_live_sessions_exist() -> None:
    fake = FakeLive([wire_header("shared", t=3)], {"shared": live_log("shared")})
    reader = OpenSearchSessionReader(Scope.workspace("w"), live=fake, persistence=False, client=Untouchable())  # type: ignore[arg-type]
    listing = reader.list_sessions()
    assert [(r.header.session_id, r.live, r.persisted, r.stats) for r in listing] == [
        ("shared", True, False, None)
    ]
    assert code_of(reader.read_event, "durable", 0) == "SESSION_QUERY_SESSION_NOT_FOUND"  # no persistence
    trace = reader.trace_session("shared")
    assert trace.complete and trace.root == trace.target


def test_a_live_session_without_entries_consults_the_projection() -> None:
    fake = FakeLive([wire_header("released")], {"released": []})
    reader = OpenSearchSessionReader(Scope.workspace("w"), live=fake, client=Untouchable())  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="OpenSearch was consulted"):
        reader.list_events("released")
    unmounted = OpenSearchSessionReader(Scope.workspace("w"), live=fake, persistence=False)
    assert unmounted.list_events("released") == ()
    assert unmounted.read_surface("released").captured_through_seq is None


def test_live_session_without_header_record() -> None:
    fake = FakeLive([], {"bare": live_log("bare")})
    reader = OpenSearchSessionReader(Scope.workspace("w"), live=fake, client=Untouchable())  # type: ignore[arg-type]
    result = reader.read_event("bare", 0)
    assert result.header == SessionHeader(session_id="bare", workspace_id="w", has_header=False)


def test_invalid_live_log_is_invalid_surface_but_readable() -> None:
    bad = [*live_log(), wire_event("live", 3, "user/message", "dup", sources=[1, 1])]
    fake = FakeLive([wire_header("live")], {"live": bad})
    reader = OpenSearchSessionReader(Scope.workspace("w"), live=fake, client=Untouchable())  # type: ignore[arg-type]
    for method in (reader.list_events, reader.read_surface):
        assert code_of(method, "live") == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(reader.filter_events, "live", []) == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(reader.trace_event, "live", 0) == "SESSION_QUERY_INVALID_SURFACE"
    assert code_of(reader.trace_event, "live", 9) == "SESSION_QUERY_EVENT_NOT_FOUND"  # past the live log
    assert reader.read_event("live", 3).target.text == "dup"


def test_filters_are_validated_before_the_session_is_loaded() -> None:
    reader = OpenSearchSessionReader(Scope.workspace("w"), client=Untouchable())  # type: ignore[arg-type]
    assert code_of(reader.filter_events, "nope", [{"kind": "bogus"}]) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(reader.list_sessions, [{"kind": "bogus"}]) == "SESSION_QUERY_INVALID_FILTER"


def test_close_is_idempotent_and_refuses_reads() -> None:
    reader, _ = live_reader()
    with reader:
        assert reader.read_event("live", 0).target.seq == 0
    reader.close()
    assert reader.closed
    for call in (
        lambda: reader.read_event("live", 0, 99),
        reader.list_sessions,
        lambda: reader.trace_session("live"),
    ):
        assert code_of(call) == "SESSION_QUERY_PROVIDER_CLOSED"


def test_reads_return_detached_copies() -> None:
    reader, fake = live_reader()
    first = reader.read_event("live", 1, before=1)
    assert first.target.attrs is None
    with pytest.raises(ValueError):
        first.header.title = "changed"  # type: ignore[misc]
    changed = first.model_copy(update={"start_seq": 99})
    assert changed.start_seq == 99
    fake.logs["live"][1] = wire_event("live", 1, "assistant/message", "rewritten in the store")
    again = reader.read_event("live", 1, before=1)
    assert again.start_seq == 0 and again.target.text == "rewritten in the store"
    assert first.target.text == "first answer"  # an earlier result does not follow the store


def test_concurrent_reads_share_one_reader() -> None:
    reader, _ = live_reader()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                assert reader.read_surface("live").events[0].seq == 2
                assert reader.trace_event("live", 0).replacement_chain == (2,)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
