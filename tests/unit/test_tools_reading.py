"""The read, trace and cross-session tools over in-memory fakes: bounded output, draining and
grouping, the stale-cursor restart, and session defaults. Pure (no backend)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from backscroll.query import (
    EventRecordView,
    EventTraceResult,
    LineageNode,
    ReadEventResult,
    Scope,
    SessionHeader,
    SessionMatch,
    SessionQueryError,
    SessionQueryRequest,
    SessionQueryResult,
    SessionRecord,
    SessionTrace,
)
from backscroll.query.tools import (
    DEFAULT_MAX_OUTPUT_CHARS,
    EventReadTool,
    EventTraceTool,
    SessionSearchTool,
    SessionTraceTool,
    ToolError,
    session_tools,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _view(seq: int, text: str = "", **fields: Any) -> EventRecordView:
    return EventRecordView(
        session_id="s1",
        seq=seq,
        type="user/message",
        time=T0,
        role="user",
        text=text,
        surface="current",
        **fields,
    )


def _record(sid: str, **fields: Any) -> SessionRecord:
    return SessionRecord(
        header=SessionHeader(session_id=sid, created_at=T0, **fields), live=False, persisted=True
    )


class FakeReader:
    """Answers every read from fixed results; records the calls."""

    def __init__(self, *, text: str = "hello", descendants: int = 0, scope: Scope | None = None) -> None:
        self.scope = scope or Scope.session("s1")
        self.read_window_max = 50
        self.text = text
        self.descendants = descendants
        self.calls: list[tuple[Any, ...]] = []

    def read_event(self, session_id: str, seq: int, before: int = 0, after: int = 0) -> ReadEventResult:
        self.calls.append(("read", session_id, seq, before, after))
        if session_id != "s1":
            raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r} at all")
        if not 0 <= before <= 50:
            raise SessionQueryError("SESSION_QUERY_INVALID_WINDOW", "before out of range")
        events = tuple(
            _view(i, self.text if i == seq else f"neighbour {i}\nwith a newline") for i in range(3)
        )
        header = SessionHeader(session_id="s1")
        return ReadEventResult(header=header, target=events[seq], events=events, start_seq=0, end_seq=2)

    def trace_session(self, session_id: str) -> SessionTrace:
        self.calls.append(("trace", session_id))
        nodes = tuple(
            LineageNode(session_id=f"c{i}", depth=1, children=(), session=_record(f"c{i}"))
            for i in range(self.descendants)
        )
        return SessionTrace(
            target=_record(session_id, title="line one\nline two"),
            ancestors=(),
            complete=False,
            unresolved_parent_id="hidden-parent",
            root=None,
            descendants=nodes,
        )

    def trace_event(self, session_id: str, seq: int) -> EventTraceResult:
        self.calls.append(("trace_event", session_id, seq))
        return EventTraceResult(
            header=SessionHeader(session_id=session_id),
            target=_view(seq, "x"),
            replaced_by=4,
            replacement_chain=(4, 9),
            replaced_event_seqs=(),
            source_event_seqs=tuple(range(1000)),
            derived_event_seqs=(12,),
        )


def test_read_shows_the_target_in_full_and_bounds_it() -> None:
    reader = FakeReader(text="é" * 50_000)
    tool = EventReadTool(reader, max_text_chars=1000)
    text = tool.run({"seq": 1, "before": 1, "after": 1})
    assert reader.calls == [("read", "s1", 1, 1, 1)]  # the one session of the scope is the default
    assert "→ [seq 1, turn" not in text and "→ [seq 1]" in text
    assert '"text_cut": "49000 more characters not shown; read on with offset=1000"' in text
    assert "neighbour 0 with a newline" in text  # neighbours are one line each
    assert len(text) < 3000


def test_every_answer_is_bounded() -> None:
    text = SessionTraceTool(FakeReader(descendants=5000)).run({})
    assert len(text) <= DEFAULT_MAX_OUTPUT_CHARS
    assert "more descendants" in text
    assert "hidden-parent" not in text and "beyond what you can read" in text  # a boundary, no id
    assert "line one line two" in text
    trace = EventTraceTool(FakeReader()).run({"seq": 3})
    assert "Replacement chain to the final replacement: 4 → 9" in trace and "… (800 more)" in trace


def test_reads_need_a_session_in_a_wider_scope_and_hide_what_is_outside() -> None:
    reader = FakeReader(scope=Scope.workspace("ws"))
    tool = EventReadTool(reader)
    with pytest.raises(ToolError) as caught:
        tool.run({"seq": 0})
    assert caught.value.code == "SESSION_QUERY_TOOL_INVALID_ARGUMENTS" and "session_id is required" in str(
        caught.value
    )
    with pytest.raises(ToolError) as caught:
        tool.run({"seq": 0, "session_id": "s-other"})
    assert caught.value.code == "SESSION_QUERY_SESSION_NOT_FOUND" and "at all" not in str(caught.value)
    with pytest.raises(ToolError) as caught:
        tool.run({"seq": 0, "before": 99, "session_id": "s1"})
    assert caught.value.code == "SESSION_QUERY_INVALID_WINDOW" and "0 to 50" in str(caught.value)
    assert EventReadTool(reader, session_id="s1").run({"seq": 0}).startswith("Session s1")


def _match(sid: str, seq: int) -> SessionMatch:
    return SessionMatch(
        session_id=sid, entry_id=f"{sid}:{seq}", seq=seq, kind="user/message", excerpt=f"{sid} {seq}"
    )


class PagingProvider:
    """Pages of 3 hits over sessions a, b, c, own; the first cursor use is stale once."""

    def __init__(self, total: int = 20, stale_once: bool = False) -> None:
        self.scope = Scope.workspace("ws")
        self.max_limit = 3
        self.hits = [_match(("a", "b", "c", "own")[i % 4], i) for i in range(total)]
        self.stale_once = stale_once
        self.requests: list[SessionQueryRequest] = []

    def search(self, request: SessionQueryRequest) -> SessionQueryResult:
        self.requests.append(request)
        if request.cursor is not None and self.stale_once:
            self.stale_once = False
            raise SessionQueryError("SESSION_QUERY_STALE_CURSOR", "moved")
        start = int(request.cursor or 0)
        limit = request.limit or 3
        page = self.hits[start : start + limit]
        more = start + limit < len(self.hits)
        return SessionQueryResult(
            matches=tuple(page), searched=100, next_cursor=str(start + limit) if more else None
        )


def test_cross_session_search_drains_groups_and_caps() -> None:
    provider = PagingProvider(total=20, stale_once=True)
    tool = SessionSearchTool(provider, exclude_session_id="own", max_results=9)
    text = tool.run({"query": "x"})
    assert "own" not in text
    assert text.splitlines()[0] == "9 matches in 3 sessions (searched 100 entries):"
    assert "[session a] 3 matches; also seq 4, 8" in text
    assert "result cap reached" in text
    assert all(r.limit == 3 and "session_search" in r.exclude_tools for r in provider.requests)
    assert [r.cursor for r in provider.requests][:2] == [None, "3"]  # stale once, then from the top
    assert provider.requests[2].cursor is None


def test_toolset_offers_cross_session_search_for_wider_scopes_only() -> None:
    one = session_tools(PagingProvider(), FakeReader())
    assert one is not None and "session_search" in one.names  # the provider's scope is a workspace
    narrow = PagingProvider()
    narrow.scope = Scope.session("s1")
    tools = session_tools(narrow)
    assert tools is not None and tools.names == ("session_query",)
    with pytest.raises(ValueError, match="duplicate"):
        session_tools(narrow, FakeReader(), names={"session_trace": "session_query"})


def test_tool_names_fit_every_api_and_unpinned_workspace_search_says_so() -> None:
    for bad in ("", "has space", "x" * 65, "naïve", "a.b"):
        with pytest.raises(SessionQueryError) as caught:
            EventReadTool(FakeReader(), name=bad)
        assert caught.value.code == "SESSION_QUERY_INVALID_CONFIG"
    unpinned = session_tools(PagingProvider())
    pinned = session_tools(PagingProvider(), session_id="own")
    assert unpinned is not None and pinned is not None
    assert (
        "every session in this workspace"
        in (unpinned.get("session_query") or EventReadTool(None)).description
    )
    assert "this session's own" in (pinned.get("session_query") or EventReadTool(None)).description
