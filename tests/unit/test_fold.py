"""The surface fold: its rules, trace_event's chains, and incremental == whole-log."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backscroll.indexer import fold as fold_module
from backscroll.indexer.fold import (
    VIOLATION_CODES,
    Classification,
    FoldEvent,
    FoldResult,
    FoldStep,
    Replacement,
    Surface,
    SurfaceState,
    SurfaceViolationError,
    Violation,
    fold,
    fold_strict,
    locate,
    trace,
)
from backscroll.ingest.wire import SURFACE_TYPES as WIRE_SURFACE_TYPES
from backscroll.ingest.wire import EventRecord, parse_record

A: Surface = "append"
SURFACE_TYPES = ("user/message", "assistant/message", "tool/result")
OTHER_TYPES = ("turn/start", "step/start", "assistant/chunk", "tool/call", "step/end")


def ev(
    seq: int,
    type_: str,
    surface: Surface = None,
    sources: Sequence[int] | None = None,
    key: str | None = None,
) -> FoldEvent:
    return FoldEvent(seq, type_, surface, None if sources is None else tuple(sources), key)


def user(seq: int, surface: Surface = A, sources: Sequence[int] | None = None) -> FoldEvent:
    return ev(seq, "user/message", surface, sources)


def assistant(seq: int, surface: Surface = A, sources: Sequence[int] | None = None) -> FoldEvent:
    return ev(seq, "assistant/message", surface, sources)


def tool(seq: int, surface: Surface = A, sources: Sequence[int] | None = None, key: str = "k") -> FoldEvent:
    return ev(seq, "tool/result", surface, sources, key)


def plain(seq: int, type_: str = "turn/start") -> FoldEvent:
    return ev(seq, type_)


def codes(events: Sequence[FoldEvent]) -> list[str]:
    return [v.code for v in fold(events).violations]


def classes(events: Sequence[FoldEvent]) -> list[Classification]:
    result = fold(events)
    return [result.classification[e.seq] for e in events]


def read_trace(events: Sequence[FoldEvent], seq: int) -> str | tuple[Any, ...]:
    """The read path of trace_event: existence first, then the fold, then the trace."""
    if locate(events, seq) is None:
        return "SESSION_QUERY_EVENT_NOT_FOUND"
    try:
        result = fold_strict(events)
    except SurfaceViolationError:
        return "SESSION_QUERY_INVALID_SURFACE"
    t = trace(result, events, seq)
    return (t.classification, t.replaced_by, t.replacement_chain, t.replaced_event_seqs,
            t.source_event_seqs, t.derived_event_seqs)  # fmt: skip


# --- I. Surface classification ---------------------------------------------------------------------

CLASSES_LOG = [
    plain(0, "turn/start"),
    plain(1, "step/start"),
    user(2),
    plain(3, "assistant/chunk"),
    assistant(4, (2, 2), [2]),
]

REPLACES_LOG = [
    user(0),
    plain(1, "assistant/chunk"),
    user(2, (0, 0), [0]),
    user(3),
    user(4, (2, 3), [2, 3]),
    assistant(5),
]


def test_three_way_classification() -> None:
    assert classes(CLASSES_LOG) == ["log-only", "log-only", "shadowed", "log-only", "current"]
    assert fold_strict(CLASSES_LOG).nodes == (4,)


def test_current_surface_and_capture_boundary() -> None:
    result = fold_strict(REPLACES_LOG)
    assert result.last_seq == 5
    assert result.nodes == (4, 5)
    assert classes(REPLACES_LOG) == ["shadowed", "log-only", "shadowed", "shadowed", "current", "current"]


def test_empty_session() -> None:
    result = fold_strict([])
    assert (result.last_seq, result.nodes, result.classification, result.valid) == (None, (), {}, True)
    assert SurfaceState().last_seq is None


def test_assistant_may_cite_an_empty_stream() -> None:
    result = fold_strict([assistant(0, A, [])])
    assert result.classification == {0: "current"}
    assert result.nodes == (0,)


# Every surface rule on its own; the expected codes are exact and in order.
INVALID = {
    "user/message without surface": ([ev(0, "user/message")], ["missing_surface"]),
    "tool/result without surface": ([user(0), ev(1, "tool/result")], ["missing_surface"]),
    "append marker on turn/start": ([ev(0, "turn/start", A)], ["surface_not_allowed"]),
    "replace marker on turn/start": ([user(0), ev(1, "turn/start", (0, 0), None)], ["surface_not_allowed"]),
    "sources on a non-surface event": ([user(0), ev(1, "turn/end", None, [0])], ["sources_not_allowed"]),
    "empty sources on user/message": ([user(0), user(1, A, [])], ["empty_sources"]),
    "empty sources on tool/result": ([tool(0, A, [])], ["empty_sources"]),
    "duplicate sources": ([user(0), user(1), user(2, A, [0, 1, 0])], ["duplicate_sources"]),
    "source equal to own seq": ([user(0, A, [0])], ["source_not_earlier"]),
    "source after own seq": ([user(0), user(1, A, [0, 7])], ["source_not_earlier"]),
    "negative source": ([user(0), user(1, A, [-1])], ["source_negative"]),
    "replace omits an inner shadowed node": (
        [user(0), user(1), user(2), assistant(3, (0, 2), [0, 2])],
        ["replace_missing_citation"],
    ),
    "replace without sources": ([user(0), assistant(1, (0, 0))], ["replace_missing_citation"]),
    "replace citing only a chunk": (
        [user(0), plain(1, "assistant/chunk"), assistant(2, (0, 0), [1])],
        ["replace_missing_citation"],
    ),
    "start is a log-only event": (
        [plain(0), user(1), user(2, (0, 1), [0, 1])],
        ["replace_start_not_on_surface"],
    ),
    "start is already shadowed": (
        [user(0), user(1, (0, 0), [0]), user(2), user(3, (0, 2), [0, 2])],
        ["replace_start_not_on_surface"],
    ),
    "end does not exist": ([user(0), user(1, (0, 5), [0])], ["replace_end_not_on_surface"]),
    "end is already shadowed": (
        [user(0), user(1), user(2, (1, 1), [1]), user(3, (0, 1), [0, 1])],
        ["replace_end_not_on_surface"],
    ),
    "replace names itself": (
        [user(0), user(1, (1, 1), [0])],
        ["replace_start_not_on_surface", "replace_end_not_on_surface"],
    ),
    "start positioned after end": ([user(0), user(1), user(2, (1, 0), [0, 1])], ["replace_start_after_end"]),
    "seq gap (0, 2)": ([user(0), user(2)], ["seq_gap"]),
    "log starting at 1": ([user(1)], ["seq_gap"]),
    "repeated seq": ([user(0), user(0)], ["seq_out_of_order"]),
    "tool/result replace spanning two nodes": (
        [tool(0), tool(1), tool(2, (0, 1), [0, 1])],
        ["tool_result_replace_span"],
    ),
    "tool/result replacing a user/message": ([user(0), tool(1, (0, 0), [0])], ["tool_result_replace_target"]),
    "tool/result rewrite changing more than content": (
        [tool(0, key="a"), tool(1, (0, 0), [0], key="b")],
        ["tool_result_replace_changed"],
    ),
    "several rules at once": (
        [user(0), user(2, (1, 0), [0, 0, 2])],
        ["seq_gap", "duplicate_sources", "source_not_earlier", "replace_start_not_on_surface"],
    ),
}


@pytest.mark.parametrize(("events", "expected"), INVALID.values(), ids=INVALID.keys())
def test_invalid_logs_are_rejected_whole(events: list[FoldEvent], expected: list[str]) -> None:
    result = fold(events)
    assert [v.code for v in result.violations] == expected
    assert not result.valid
    assert all(v.message for v in result.violations)
    with pytest.raises(SurfaceViolationError) as caught:
        fold_strict(events)
    assert caught.value.violations == result.violations
    assert isinstance(caught.value, ValueError)
    assert expected[0] in str(caught.value)
    # read_event does not fold: the first event is still readable where it sits; trace_event is not.
    if events[0].seq == 0:
        assert locate(events, 0) is events[0]
        assert read_trace(events, 0) == "SESSION_QUERY_INVALID_SURFACE"


def test_every_violation_code_is_exercised() -> None:
    exercised = {code for _, expected in INVALID.values() for code in expected}
    assert exercised == VIOLATION_CODES


def test_seq_gap_reads() -> None:
    events = [user(0), user(2)]
    assert locate(events, 0) is events[0]
    assert locate(events, 1) is None  # index 1 holds seq 2
    assert locate(events, 2) is None
    assert read_trace(events, 0) == "SESSION_QUERY_INVALID_SURFACE"


CHUNK = plain(0, "assistant/chunk")
VALID = {
    "sources on every surface type": [CHUNK, user(1, A, [0]), assistant(2, A, [0, 1]), tool(3, A, [2])],
    "replacement cites more than it shadows": [CHUNK, user(1), assistant(2, (1, 1), [0, 1])],
    "citations in any order": [user(0), user(1), assistant(2, (0, 1), [1, 0])],
    "tool/result content rewrite": [CHUNK, tool(1, key="a"), tool(2, (1, 1), [0, 1], key="a")],
    "message compacts tool results": [tool(0), tool(1), user(2, (0, 1), [0, 1])],
    "replace inside the surface": [user(0), user(1), user(2), user(3), assistant(4, (1, 2), [1, 2])],
}


@pytest.mark.parametrize("events", VALID.values(), ids=VALID.keys())
def test_allowed_logs_are_valid(events: list[FoldEvent]) -> None:
    assert fold_strict(events).valid


def test_replacement_keeps_position() -> None:
    result = fold_strict(VALID["replace inside the surface"])
    assert result.nodes == (0, 4, 3)
    assert result.replacements == (Replacement(4, 1, 2, (1, 2)),)
    assert result.replaced_by == {1: 4, 2: 4}


# --- Continuation after a violation --------------------------------------------------------------


def test_unplaceable_replace_is_log_only_and_leaves_the_surface() -> None:
    events = [user(0), user(1), user(2, (1, 0), [0, 1]), user(3)]
    result = fold(events)
    assert result.nodes == (0, 1, 3)
    assert result.classification[2] == "log-only"
    assert result.replacements == ()


def test_citation_and_rewrite_violations_still_apply_the_replace() -> None:
    result = fold([user(0), assistant(1, (0, 0)), tool(2), tool(3, (2, 2), [2], key="other")])
    assert [v.code for v in result.violations] == ["replace_missing_citation", "tool_result_replace_changed"]
    assert result.nodes == (1, 3)
    assert result.replaced_by == {0: 1, 2: 3}


def test_provenance_violation_on_an_append_still_appends() -> None:
    result = fold([user(0), user(1, A, [0, 0])])
    assert result.nodes == (0, 1)


def test_missing_or_forbidden_marker_is_log_only() -> None:
    result = fold([ev(0, "user/message"), ev(1, "turn/start", A), user(2)])
    assert result.nodes == (2,)
    assert [result.classification[s] for s in (0, 1, 2)] == ["log-only", "log-only", "current"]


def test_seq_gap_folds_the_event_and_resumes_from_it() -> None:
    result = fold([user(0), user(2), user(3, (0, 2), [0, 2])])
    assert codes([user(0), user(2), user(3, (0, 2), [0, 2])]) == ["seq_gap"]
    assert result.nodes == (3,)
    assert result.last_seq == 3


def test_seq_that_does_not_advance_is_skipped() -> None:
    events = [user(0), user(1, (0, 0), [0]), user(1), user(0, (1, 1), [1]), user(2)]
    result = fold(events)
    assert codes(events) == ["seq_out_of_order", "seq_out_of_order"]
    assert result.nodes == (1, 2)
    assert result.classification == {0: "shadowed", 1: "current", 2: "current"}
    state = SurfaceState()
    steps = [state.apply(e) for e in events]
    assert [s.classification for s in steps] == ["current", "current", "current", "shadowed", "current"]


# --- Incremental steps, copies, records ----------------------------------------------------------


def test_steps_report_own_classification_and_newly_shadowed() -> None:
    state = SurfaceState()
    steps = [state.apply(e) for e in REPLACES_LOG]
    assert steps[2] == FoldStep(2, "current", (0,), Replacement(2, 0, 0, (0,)), ())
    assert steps[4].shadowed == (2, 3)
    assert [s.classification for s in steps] == [
        "current",
        "log-only",
        "current",
        "current",
        "current",
        "current",
    ]
    assert state.result() == fold(REPLACES_LOG)
    assert state.nodes() == (4, 5)
    assert state.valid
    bad = state.apply(user(9))
    assert [v.code for v in bad.violations] == ["seq_gap"]
    assert state.violations == bad.violations
    assert not state.valid


def test_copy_is_independent() -> None:
    state = SurfaceState()
    for event in REPLACES_LOG[:4]:
        state.apply(event)
    before = state.result()
    branch = state.copy()
    branch.apply(REPLACES_LOG[4])
    branch.apply(user(9, (0, 0), [0]))
    assert state.result() == before
    assert branch.result() != before
    state.apply(REPLACES_LOG[4])
    assert state.nodes() == (4,)


def record(seq: int, type_: str, **fields: Any) -> EventRecord:
    data = {"v": 1, "kind": "event", "workspace_id": "w", "session_id": "s", "seq": seq, "type": type_,
            "time": "2026-01-01T00:00:00+00:00", **fields}  # fmt: skip
    parsed = parse_record(data)
    assert isinstance(parsed, EventRecord)
    return parsed


def test_surface_types_match_the_wire_format() -> None:
    assert fold_module._ELIGIBLE == WIRE_SURFACE_TYPES == frozenset(SURFACE_TYPES)


def test_from_record_reads_surface_and_sources() -> None:
    assert FoldEvent.from_record(record(0, "turn/start")) == FoldEvent(0, "turn/start")
    appended = FoldEvent.from_record(record(1, "user/message", text="hi", surface={"op": "append"}))
    assert appended == FoldEvent(1, "user/message", "append")
    replaced = record(2, "assistant/message", surface={"op": "replace", "start": 1, "end": 1}, sources=[1, 0])
    assert FoldEvent.from_record(replaced) == FoldEvent(2, "assistant/message", (1, 1), (1, 0))


def tool_record(seq: int, surface: dict[str, Any], **fields: Any) -> EventRecord:
    base: dict[str, Any] = {"text": "out", "tool_name": "grep", "role": "tool", "attrs": {"call_id": "c1"}}
    return record(seq, "tool/result", surface=surface, **{**base, **fields})


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"text": "shorter"}, []),
        ({"text": "shorter", "attrs": {"call_id": "c1", "truncated": True}}, []),
        ({"tool_name": "find"}, ["tool_result_replace_changed"]),
        ({"role": "assistant"}, ["tool_result_replace_changed"]),
        ({"attrs": {"call_id": "c2"}}, ["tool_result_replace_changed"]),
        ({"attrs": None}, ["tool_result_replace_changed"]),
    ],
)
def test_from_record_tool_result_identity(changes: dict[str, Any], expected: list[str]) -> None:
    original = tool_record(0, {"op": "append"})
    rewrite = tool_record(1, {"op": "replace", "start": 0, "end": 0}, sources=[0], **changes)
    assert codes([FoldEvent.from_record(original), FoldEvent.from_record(rewrite)]) == expected


def test_from_record_accepts_any_object_with_the_attributes() -> None:
    op = SimpleNamespace(op="replace", start=0, end=0)
    duck = SimpleNamespace(
        seq=1, type="tool/result", surface=op, sources=[0], text="x", tool_name="t", role=None
    )
    assert FoldEvent.from_record(duck) == FoldEvent(1, "tool/result", (0, 0), (0,), repr(("t", None, None)))
    duck.surface = SimpleNamespace(op="insert")
    with pytest.raises(ValueError, match="insert"):
        FoldEvent.from_record(duck)


# --- J. Replacement chains and provenance --------------------------------------------------------

CHAIN_LOG = [
    plain(0, "turn/start"),
    plain(1, "step/start"),
    plain(2, "assistant/chunk"),
    user(3, A, [2]),
    assistant(4, (3, 3), [3, 2]),
    user(5),
    plain(6, "step/end"),
    plain(7, "step/start"),
    assistant(8, (4, 4), [2, 4]),
]


@pytest.mark.parametrize(
    ("seq", "expected"),
    [
        (3, ("shadowed", 4, (4, 8), (), (2,), (4,))),
        (4, ("shadowed", 8, (8,), (3,), (3, 2), (8,))),
        (2, ("log-only", None, (), (), (), (3, 4, 8))),
        (8, ("current", None, (), (4,), (2, 4), ())),
        (5, ("current", None, (), (), (), ())),
    ],
)
def test_chain_and_direct_links(seq: int, expected: tuple[Any, ...]) -> None:
    assert read_trace(CHAIN_LOG, seq) == expected
    state = SurfaceState()
    for event in CHAIN_LOG:
        state.apply(event)
    assert trace(state, CHAIN_LOG, seq) == trace(fold(CHAIN_LOG), CHAIN_LOG, seq)


def test_range_replacement_lists_the_removed_nodes() -> None:
    result = fold_strict(REPLACES_LOG)
    four = trace(result, REPLACES_LOG, 4)
    assert four.replaced_event_seqs == (2, 3)
    assert four.source_event_seqs == (2, 3)
    zero = trace(result, REPLACES_LOG, 0)
    assert (zero.replaced_by, zero.replacement_chain) == (2, (2, 4))
    assert result.replacements == (Replacement(2, 0, 0, (0,)), Replacement(4, 2, 3, (2, 3)))


def test_existence_is_checked_before_validation() -> None:
    malformed = [user(0), ev(1, "turn/start", A)]
    assert read_trace(malformed, 9) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert read_trace(malformed, 0) == "SESSION_QUERY_INVALID_SURFACE"
    with pytest.raises(KeyError):
        trace(fold(malformed), malformed, 9)


@pytest.mark.parametrize("seq", [-1, 2, 10**6])
def test_locate_misses(seq: int) -> None:
    assert locate(CLASSES_LOG[:2], seq) is None


# --- Properties: a naive reference model, random valid and corrupted logs -----------------------


class Reference:
    """A deliberately naive fold (a plain list, linear scans) with the documented continuation rule."""

    def __init__(self) -> None:
        self.nodes: list[int] = []
        self.events: dict[int, FoldEvent] = {}
        self.classification: dict[int, Classification] = {}
        self.replaced_by: dict[int, int] = {}
        self.replacements: list[Replacement] = []
        self.violations: list[tuple[int, str]] = []
        self.last = -1

    def apply(self, e: FoldEvent) -> None:
        if e.seq <= self.last:
            self.violations.append((e.seq, "seq_out_of_order"))
            self.classification.setdefault(e.seq, "log-only")
            return
        found = ["seq_gap"] if e.seq != self.last + 1 else []
        self.last = e.seq
        eligible = e.type in SURFACE_TYPES
        if e.sources is not None and not eligible:
            found.append("sources_not_allowed")
        elif e.sources == () and e.type != "assistant/message":
            found.append("empty_sources")
        elif e.sources:
            found += ["duplicate_sources"] if len(set(e.sources)) < len(e.sources) else []
            found += ["source_negative"] if any(s < 0 for s in e.sources) else []
            found += ["source_not_earlier"] if any(s >= e.seq for s in e.sources) else []
        placed = False
        if not eligible:
            found += ["surface_not_allowed"] if e.surface is not None else []
        elif e.surface is None:
            found.append("missing_surface")
        elif e.surface == "append":
            self.nodes.append(e.seq)
            placed = True
        else:
            placed = self._replace(e, e.surface[0], e.surface[1], found)
        self.events[e.seq] = e
        self.classification[e.seq] = "current" if placed else "log-only"
        self.violations += [(e.seq, code) for code in found]

    def _replace(self, e: FoldEvent, start: int, end: int, found: list[str]) -> bool:
        found += [] if start in self.nodes else ["replace_start_not_on_surface"]
        found += [] if end in self.nodes else ["replace_end_not_on_surface"]
        if start not in self.nodes or end not in self.nodes:
            return False
        i, j = self.nodes.index(start), self.nodes.index(end)
        if i > j:
            found.append("replace_start_after_end")
            return False
        shadowed = self.nodes[i : j + 1]
        if any(s not in (e.sources or ()) for s in shadowed):
            found.append("replace_missing_citation")
        if e.type == "tool/result":
            target = self.events[shadowed[0]]
            if len(shadowed) != 1:
                found.append("tool_result_replace_span")
            elif target.type != "tool/result":
                found.append("tool_result_replace_target")
            elif target.content_key != e.content_key:
                found.append("tool_result_replace_changed")
        self.nodes[i : j + 1] = [e.seq]
        for s in shadowed:
            self.classification[s] = "shadowed"
            self.replaced_by[s] = e.seq
        self.replacements.append(Replacement(e.seq, start, end, tuple(shadowed)))
        return True


CORRUPTIONS = (
    "drop_surface", "marker_on_other", "sources_on_other", "empty_sources", "dup_sources", "late_source",
    "negative_source", "omit_citation", "bad_start", "bad_end", "swap", "seq_skip", "seq_repeat",
    "tool_span", "tool_key",
)  # fmt: skip


@st.composite
def logs(draw: st.DrawFn, corrupt: bool) -> list[FoldEvent]:
    """Mostly valid replacements against the current surface; with ``corrupt``, some events broken."""
    model, events, next_seq = Reference(), [], 0
    for _ in range(draw(st.integers(0, 40))):
        seq, nodes = next_seq, model.nodes
        earlier = st.lists(st.integers(0, seq - 1), unique=True, min_size=1, max_size=4) if seq else st.none()
        move = draw(st.sampled_from(["append", "append", "replace", "replace", "other", "rewrite"]))
        tools = [n for n in nodes if model.events[n].type == "tool/result"]
        event: FoldEvent
        if move == "other" or (move != "append" and not nodes):
            event = plain(seq, draw(st.sampled_from(OTHER_TYPES)))
        elif move == "append":
            type_ = draw(st.sampled_from(SURFACE_TYPES))
            empty: st.SearchStrategy[list[int] | None] = st.none()
            if type_ == "assistant/message":
                empty = st.just([])
            sources = draw(st.one_of(st.none(), earlier, empty))
            event = ev(
                seq, type_, A, sources, draw(st.sampled_from("ab")) if type_ == "tool/result" else None
            )
        elif move == "rewrite" and tools:
            target = draw(st.sampled_from(tools))
            event = tool(seq, (target, target), [target], model.events[target].content_key or "k")
        else:
            i = draw(st.integers(0, len(nodes) - 1))
            j = draw(st.integers(i, len(nodes) - 1))
            extra = draw(st.lists(st.integers(0, seq - 1), max_size=3))
            sources = list(dict.fromkeys(draw(st.permutations(nodes[i : j + 1] + extra))))
            event = ev(seq, draw(st.sampled_from(SURFACE_TYPES[:2])), (nodes[i], nodes[j]), sources)
        if corrupt and draw(st.integers(0, 5)) == 0:
            event = _corrupt(draw, event, draw(st.sampled_from(CORRUPTIONS)))
        model.apply(event)
        events.append(event)
        next_seq = max(next_seq, event.seq + 1)
    return events


def _corrupt(draw: st.DrawFn, e: FoldEvent, how: str) -> FoldEvent:
    seq, sources = e.seq, list(e.sources or [0])
    start, end = e.surface if isinstance(e.surface, tuple) else (seq - 1, seq - 1)
    anywhere = st.integers(-1, seq + 2)
    changes: dict[str, dict[str, Any]] = {
        "drop_surface": {"surface": None},
        "marker_on_other": {"type": "turn/start", "surface": draw(st.sampled_from([A, (start, end)]))},
        "sources_on_other": {"type": "step/end", "surface": None, "sources": tuple(sources)},
        "empty_sources": {"type": "user/message", "sources": ()},
        "dup_sources": {"sources": (*sources, sources[0])},
        "late_source": {"sources": (*sources, seq + draw(st.integers(0, 2)))},
        "negative_source": {"sources": (*sources, -1)},
        "omit_citation": {"sources": tuple(sources[1:]) or None},
        "bad_start": {"surface": (draw(anywhere), end)},
        "bad_end": {"surface": (start, draw(anywhere))},
        "swap": {"surface": (end, start)},
        "seq_skip": {"seq": seq + draw(st.integers(1, 3))},
        "seq_repeat": {"seq": draw(st.integers(-1, max(seq - 1, 0)))},
        "tool_span": {"type": "tool/result", "content_key": "k"},
        "tool_key": {"type": "tool/result", "content_key": "zzz"},
    }
    changed = changes[how]
    fields = {
        "seq": seq,
        "type": e.type,
        "surface": e.surface,
        "sources": e.sources,
        "content_key": e.content_key,
    }
    return FoldEvent(**{**fields, **changed})


def assert_matches_reference(result: FoldResult, events: Sequence[FoldEvent]) -> None:
    ref = Reference()
    for event in events:
        ref.apply(event)
    assert result.nodes == tuple(ref.nodes)
    assert result.classification == ref.classification
    assert result.replaced_by == ref.replaced_by
    assert result.replacements == tuple(ref.replacements)
    assert [(v.seq, v.code) for v in result.violations] == ref.violations


FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(logs(corrupt=False))
def test_valid_logs_fold_clean_and_match_the_reference(events: list[FoldEvent]) -> None:
    result = fold_strict(events)
    assert_matches_reference(result, events)
    assert set(result.classification) == {e.seq for e in events}
    for event in events:
        t = trace(result, events, event.seq)
        if t.replacement_chain:  # the final replacer is never replaced, so it is on the surface
            assert t.replacement_chain[-1] in result.nodes
            assert event.seq in trace(result, events, t.replaced_by or 0).replaced_event_seqs
        cited_by = tuple(e.seq for e in events if event.seq in (e.sources or ()))
        assert t.derived_event_seqs == cited_by


@FAST
@given(logs(corrupt=True))
def test_corrupted_logs_match_the_reference(events: list[FoldEvent]) -> None:
    result = fold(events)
    assert_matches_reference(result, events)
    assert result.valid == (not result.violations)
    if not result.valid:
        with pytest.raises(SurfaceViolationError):
            fold_strict(events)


@FAST
@given(st.booleans().flatmap(lambda corrupt: logs(corrupt=corrupt)), st.data())
def test_incremental_fold_equals_the_whole_log_fold(events: list[FoldEvent], data: st.DataObject) -> None:
    split = data.draw(st.integers(0, len(events)))
    state = SurfaceState()
    seen: dict[int, Classification] = {}
    replaced_by: dict[int, int] = {}
    violations: list[Violation] = []

    def take(step: FoldStep) -> None:  # what the indexer does with a step: own doc, then routed updates
        seen[step.seq] = step.classification
        seen.update(dict.fromkeys(step.shadowed, "shadowed"))
        replaced_by.update(dict.fromkeys(step.shadowed, step.seq))
        violations.extend(step.violations)

    for event in events[:split]:
        take(state.apply(event))
    prefix = state.result()
    branch = state.copy()
    for event in events[split:]:
        take(branch.apply(event))
    whole = fold(events)
    assert prefix == fold(events[:split])
    assert state.result() == prefix
    assert branch.result() == whole
    assert (seen, replaced_by, tuple(violations)) == (
        whole.classification,
        whole.replaced_by,
        whole.violations,
    )
    assert set(whole.nodes) == {seq for seq, c in seen.items() if c == "current"}


# --- Speed ---------------------------------------------------------------------------------------


def compacting_session(size: int) -> list[FoldEvent]:
    """Turns of user, chunk, assistant, tool call and result, tool-output rewrites, and a compaction
    that replaces all but the last two nodes every 400 events."""
    events: list[FoldEvent] = []
    surface: list[int] = []

    def add(event: FoldEvent) -> None:
        if event.surface == A:
            surface.append(event.seq)
        elif isinstance(event.surface, tuple):
            i, j = surface.index(event.surface[0]), surface.index(event.surface[1])
            surface[i : j + 1] = [event.seq]
        events.append(event)

    while len(events) < size:
        n = len(events)
        if n % 400 == 399 and len(surface) > 3:
            add(user(n, (surface[0], surface[-3]), surface[:-2]))
            continue
        add([plain(n), user(n, A), plain(n, "assistant/chunk"), assistant(n, A, [n - 1]),
             plain(n, "tool/call"), tool(n, A, [n - 1]), tool(n, (n - 1, n - 1), [n - 1]),
             plain(n, "turn/end")][n % 8])  # fmt: skip
    return events


def test_ten_thousand_events_with_compactions_fold() -> None:
    events = compacting_session(10_000)
    result = fold_strict(events)
    assert len(result.replacements) == 1_250 + 25
    assert len(result.nodes) < 300
    assert sum(c == "shadowed" for c in result.classification.values()) > 3_000


def test_wide_surface_with_scattered_rewrites_and_one_huge_replace() -> None:
    events = [tool(s) for s in range(5_000)]
    events += [tool(5_000 + s, (s * 7 % 5_000, s * 7 % 5_000), [s * 7 % 5_000]) for s in range(4_999)]
    result = fold_strict(events)
    state = SurfaceState()
    for event in events:
        state.apply(event)
    last = state.apply(user(9_999, (state.nodes()[0], state.nodes()[-1]), state.nodes()))
    assert len(result.nodes) == 5_000
    assert len(last.shadowed) == 5_000 and state.nodes() == (9_999,)
