"""The provider contract: what ``search`` returns and refuses, identical on every backend."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from backscroll.query import AbortSignal, Scope, SessionQueryError, SessionQueryRequest

from . import corpus
from .conftest import Harness

RECORDS = corpus.records()

#: Every harness test runs with the synchronous and the asyncio API (conftest).
BOTH_APIS = True


def _keys(result: Any) -> list[tuple[str, int]]:
    return [(m.session_id, m.seq) for m in result.matches]


def _top(loaded: Harness, scope: Scope, query: str, limit: int = 3, **kwargs: Any) -> list[tuple[str, int]]:
    return _keys(loaded.provider(scope).search(SessionQueryRequest(query=query, limit=limit, **kwargs)))


# -- round trip ------------------------------------------------------------------------------------


def test_append_index_search_round_trip(loaded: Harness) -> None:
    ws, sid = corpus.session(4)
    result = loaded.provider(Scope.workspace(ws)).search(
        SessionQueryRequest(query="reconciliation spreadsheet")
    )
    assert _keys(result)[0] == (sid, 12)
    match = result.matches[0]
    assert match.entry_id == f"{sid}:12"
    assert match.kind == "user/message" and match.role == "user" and match.turn == 3
    assert "reconciliation spreadsheet" in match.excerpt
    assert match.created_at is not None and match.created_at == corpus.instant(RECORDS[1 + 4 * 31 + 12])
    assert result.partial is False and result.source == "persisted"


def test_fresh_pipeline_round_trip_then_cursor_goes_stale(harness: Harness) -> None:
    records = [r for r in RECORDS if r["session_id"] == "s-00"]
    positions = harness.append_all(records)
    assert len(positions) == len(records)
    assert harness.index().indexed == corpus.EVENTS
    provider = harness.provider(Scope.session("s-00"))
    first = provider.search(SessionQueryRequest(query="", limit=5))
    assert [m.seq for m in first.matches] == [29, 28, 27, 26, 25]
    assert first.next_cursor is not None
    # The scope's corpus changes: an old cursor must not silently skip or repeat entries.
    harness.append_all([corpus.event(0, corpus.EVENTS, "a late arrival about the budget")])
    assert harness.index().indexed == 1
    with pytest.raises(SessionQueryError) as err:
        provider.search(SessionQueryRequest(query="", limit=5, cursor=first.next_cursor))
    assert err.value.code == "SESSION_QUERY_STALE_CURSOR"
    again = provider.search(SessionQueryRequest(query="late arrival"))
    assert _keys(again) == [("s-00", corpus.EVENTS)]


def test_own_appends_are_searchable_before_and_after_indexing(harness: Harness) -> None:
    """Read-your-writes on both backends: a provider built with this process's entry log merges
    what the index does not show yet, then hands over to the index without duplicates."""
    ws, sid = corpus.session(0)
    harness.append_all([corpus.event(0, 0, "an older note about the staging cluster")])
    harness.index()
    log = harness.log()
    log.append(corpus.event(0, 1, "the quarterly forecast for Zürich")).result(timeout=30)
    log.flush(timeout=30)
    session = harness.provider(Scope.session(sid), live=log)
    other = harness.provider(Scope.workspace("ws-elsewhere"), live=log)
    before = session.search(SessionQueryRequest(query="zurich forcast"))
    assert _keys(before) == [(sid, 1)] and before.source == "persisted+live"
    later = corpus.BASE + timedelta(seconds=2)  # the live entry's time is BASE + 1 s
    assert session.search(SessionQueryRequest(query="zurich forcast", since=later)).matches == ()
    assert [m.seq for m in session.search(SessionQueryRequest(query="")).matches] == [1, 0]
    workspace = harness.provider(Scope.workspace(ws), live=log)
    assert [m.seq for m in workspace.search(SessionQueryRequest(query="")).matches] == [1, 0]
    assert other.search(SessionQueryRequest(query="zurich")).matches == ()  # never another scope
    harness.index()  # the indexer's position passes the entry: it is released
    after = session.search(SessionQueryRequest(query="zurich forcast"))
    assert _keys(after) == [(sid, 1)] and after.source == "persisted"
    assert log.live_events(sid) == []
    assert [m.seq for m in session.search(SessionQueryRequest(query="")).matches] == [1, 0]


# -- typos and accents -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("forcast", (1, 17)),  # one deletion (7 letters)
        ("quartely", (1, 17)),  # one deletion (9 letters)
        ("reconcilaition", (4, 12)),  # adjacent swap
        ("certificat rotaton", (6, 21)),  # two one-edit words
        ("discrepency", (7, 25)),  # one substitution
        ("gatewey", (6, 21)),  # one substitution (7 letters)
        ("aproved", (4, 12)),  # one deletion
    ],
)
def test_one_edit_typos_find_the_target_in_top3(loaded: Harness, query: str, target: tuple[int, int]) -> None:
    ws, sid = corpus.session(target[0])
    assert (sid, target[1]) in _top(loaded, Scope.workspace(ws), query)
    assert (sid, target[1]) in _top(loaded, Scope.session(sid), query)


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("Zurich", (1, 17)),  # accent stripped
        ("Krakow", (1, 17)),
        ("Nguyen", (4, 12)),
        ("Aeroskobing", (7, 25)),  # letters without a decomposition (æ, ø)
        ("Sao Paulo", (6, 21)),
        ("Sáo Paulö", (6, 21)),  # accents added
        ("cafë", (7, 25)),  # accent changed
        ("ZÜRICH", (1, 17)),  # case
    ],
)
def test_accents_stripped_or_added_find_the_target(
    loaded: Harness, query: str, target: tuple[int, int]
) -> None:
    ws, sid = corpus.session(target[0])
    assert _top(loaded, Scope.workspace(ws), query)[0] == (sid, target[1])


def test_exact_spelling_outranks_folded_and_fuzzy(loaded: Harness) -> None:
    ws, sid = corpus.session(1)
    result = loaded.provider(Scope.workspace(ws)).search(SessionQueryRequest(query="Zürich", limit=3))
    folded = loaded.provider(Scope.workspace(ws)).search(SessionQueryRequest(query="Zurich", limit=3))
    assert _keys(result)[0] == _keys(folded)[0] == (sid, 17)
    assert result.matches[0].score > folded.matches[0].score


def test_substring_of_an_identifier(loaded: Harness) -> None:
    ws, sid = corpus.session(5)
    assert (sid, 6) in _top(loaded, Scope.workspace(ws), "9905", limit=3)


def test_no_match_is_empty_not_an_error(loaded: Harness) -> None:
    result = loaded.provider(Scope.workspace("ws-0")).search(SessionQueryRequest(query="qqqxxzzq"))
    assert result.matches == () and result.next_cursor is None and result.partial is False


def test_closest_matches_when_not_every_word_matches(loaded: Harness) -> None:
    ws, sid = corpus.session(4)
    result = loaded.provider(Scope.workspace(ws)).search(SessionQueryRequest(query="reconciliation qqqxxzzq"))
    assert result.partial is True
    assert (sid, 12) in _keys(result)[:3]


# -- scope -----------------------------------------------------------------------------------------


def test_session_scope_never_returns_another_session(loaded: Harness) -> None:
    for i in range(corpus.SESSIONS):
        _, sid = corpus.session(i)
        provider = loaded.provider(Scope.session(sid))
        for query in ("report deploy", "", "budget", "Zurich", "qqqxxzzq"):
            result = provider.search(SessionQueryRequest(query=query, limit=50))
            assert all(m.session_id == sid for m in result.matches)
        for other in ("s-99", corpus.session((i + 1) % corpus.SESSIONS)[1]):
            with pytest.raises(SessionQueryError) as err:
                provider.search(SessionQueryRequest(session_id=other, query="report"))
            assert err.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_workspace_scope_never_returns_another_workspace(loaded: Harness) -> None:
    for w in range(corpus.WORKSPACES):
        ws = f"ws-{w}"
        provider = loaded.provider(Scope.workspace(ws))
        allowed = {corpus.session(i)[1] for i in range(corpus.SESSIONS) if corpus.session(i)[0] == ws}
        for query in ("report deploy", "", "budget review", "Zurich Nguyen Paulo"):
            result = provider.search(SessionQueryRequest(query=query, limit=50))
            assert {m.session_id for m in result.matches} <= allowed
        assert provider.search(SessionQueryRequest(query="report", limit=50)).matches
        foreign = next(corpus.session(i)[1] for i in range(corpus.SESSIONS) if corpus.session(i)[0] != ws)
        for other in (foreign, "s-99"):
            with pytest.raises(SessionQueryError) as err:
                provider.search(SessionQueryRequest(session_id=other, query="report"))
            assert err.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
        own = sorted(allowed)[0]
        narrowed = provider.search(SessionQueryRequest(session_id=own, query="", limit=50))
        assert narrowed.matches and {m.session_id for m in narrowed.matches} == {own}


def test_a_needle_outside_the_scope_is_not_found(loaded: Harness) -> None:
    # "Nguyen" lives in session 4 (ws-1): every other scope must not see it.
    assert _top(loaded, Scope.workspace("ws-0"), "Nguyen reconciliation") == []
    assert _top(loaded, Scope.session("s-00"), "Nguyen reconciliation") == []


# -- browse, kinds, searched -----------------------------------------------------------------------


def _searchable(session_ids: set[str]) -> list[dict[str, Any]]:
    return [r for r in RECORDS if corpus.searchable(r) and r["session_id"] in session_ids]


def test_browse_one_session_is_seq_descending(loaded: Harness) -> None:
    sid = "s-02"
    result = loaded.provider(Scope.session(sid)).search(SessionQueryRequest(query="", limit=50))
    expected = sorted((r["seq"] for r in _searchable({sid})), reverse=True)
    assert [m.seq for m in result.matches] == expected
    assert all(m.score == 0.0 for m in result.matches)


def test_browse_a_workspace_is_time_then_seq_descending(loaded: Harness) -> None:
    # ws-0 holds session 3, whose times carry a +05:00 offset: instants decide, not strings.
    ws = "ws-0"
    sessions = {corpus.session(i)[1] for i in range(corpus.SESSIONS) if corpus.session(i)[0] == ws}
    result = loaded.provider(Scope.workspace(ws)).search(SessionQueryRequest(query="", limit=50))
    ordered = sorted(
        _searchable(sessions), key=lambda r: (-corpus.instant(r).timestamp(), -r["seq"], r["session_id"])
    )
    assert _keys(result) == [(r["session_id"], r["seq"]) for r in ordered[:50]]


def test_default_kinds_skip_other_types_empty_text_and_the_search_tool(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-0"))
    assert provider.search(SessionQueryRequest(query=corpus.HIDDEN_WORD)).matches == ()
    browse = provider.search(SessionQueryRequest(query="", limit=50))
    assert {m.kind for m in browse.matches} <= {
        "user/message",
        "assistant/message",
        "tool/call",
        "tool/result",
    }
    assert all(m.seq not in (7, 8, 9, 10) for m in browse.matches)
    turns = provider.search(SessionQueryRequest(query=corpus.HIDDEN_WORD, kinds=("turn/start",), limit=50))
    assert {m.kind for m in turns.matches} == {"turn/start"} and {m.seq for m in turns.matches} == {7}
    # Naming the kinds explicitly includes the search tool's own entries.
    tool = provider.search(SessionQueryRequest(query=corpus.HIDDEN_WORD, kinds=("tool/result",), limit=50))
    assert {m.seq for m in tool.matches} == {9}


def test_tool_calls_are_searched_below_message_text(loaded: Harness) -> None:
    result = loaded.provider(Scope.session("s-01")).search(SessionQueryRequest(query="billing", limit=5))
    assert [(m.seq, m.kind) for m in result.matches] == [(5, "tool/call")]


def test_searched_counts_in_scope_entries_of_the_requested_kinds(loaded: Harness) -> None:
    session_result = loaded.provider(Scope.session("s-00")).search(SessionQueryRequest(query="qqqxxzzq"))
    assert session_result.matches == ()
    assert session_result.searched == len(_searchable({"s-00"}))
    ws_sessions = {corpus.session(i)[1] for i in range(corpus.SESSIONS) if corpus.session(i)[0] == "ws-1"}
    ws_result = loaded.provider(Scope.workspace("ws-1")).search(SessionQueryRequest(query="report"))
    assert ws_result.searched == len(_searchable(ws_sessions))
    kinds = loaded.provider(Scope.session("s-00")).search(
        SessionQueryRequest(query="", kinds=("turn/start", "tool/result"))
    )
    expected = [
        r for r in RECORDS if r["session_id"] == "s-00" and r.get("type") in ("turn/start", "tool/result")
    ]
    assert kinds.searched == len(expected)


def _in_range(record: dict[str, Any], low: datetime, high: datetime) -> bool:
    return low <= corpus.instant(record) <= high


def test_time_range_bounds_browse_and_search_inclusively(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-0"))
    # The same instant written with another offset: bounds compare instants, not text.
    low = datetime(2026, 11, 1, 8, 0, tzinfo=timezone(timedelta(hours=5)))
    high = corpus.BASE + timedelta(hours=3, seconds=20)
    browse = provider.search(SessionQueryRequest(query="", limit=50, since=low, until=high))
    expected = [r for r in _searchable({"s-00", "s-03", "s-06"}) if _in_range(r, low, high)]
    assert sorted(_keys(browse)) == sorted((r["session_id"], r["seq"]) for r in expected)
    assert {sid for sid, _ in _keys(browse)} == {"s-03"} and (("s-03", 20) in _keys(browse))
    later = provider.search(SessionQueryRequest(query="billing", limit=50, since="2026-11-01T03:00:00Z"))
    assert sorted(_keys(later)) == [("s-03", 5), ("s-06", 5)]
    earlier = provider.search(SessionQueryRequest(query="billing", limit=50, until=low))
    assert _keys(earlier) == [("s-00", 5)]


def test_time_range_pages_add_up_and_bind_the_cursor(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-0"))
    bounds = {"since": corpus.BASE + timedelta(hours=3), "until": corpus.BASE + timedelta(hours=6, seconds=9)}
    whole = _keys(provider.search(SessionQueryRequest(query="", limit=50, **bounds)))
    paged: list[tuple[str, int]] = []
    request = SessionQueryRequest(query="", limit=7, **bounds)
    while True:
        page = provider.search(request)
        paged.extend(_keys(page))
        if page.next_cursor is None:
            break
        request = request.model_copy(update={"cursor": page.next_cursor})
    assert paged == whole and len(set(paged)) == len(paged)
    first = provider.search(SessionQueryRequest(query="", limit=7, **bounds))
    assert first.next_cursor is not None
    with pytest.raises(SessionQueryError) as err:  # the cursor belongs to its range
        provider.search(SessionQueryRequest(query="", limit=7, cursor=first.next_cursor))
    assert err.value.code == "SESSION_QUERY_INVALID_CURSOR"


@pytest.mark.parametrize(
    "bounds",
    [
        {"since": datetime(2026, 11, 1)},  # no time zone
        {"until": "yesterday"},
        {"since": 1764547200},
        {"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"},
    ],
)
def test_a_bad_time_bound_is_invalid_filter(loaded: Harness, bounds: dict[str, Any]) -> None:
    with pytest.raises(SessionQueryError) as err:
        loaded.provider(Scope.workspace("ws-0")).search(SessionQueryRequest(query="billing", **bounds))
    assert err.value.code == "SESSION_QUERY_INVALID_FILTER"


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, -1, 51, 10_000])
def test_limit_out_of_range_is_invalid_limit(loaded: Harness, limit: int) -> None:
    with pytest.raises(SessionQueryError) as err:
        loaded.provider(Scope.workspace("ws-0")).search(SessionQueryRequest(query="report", limit=limit))
    assert err.value.code == "SESSION_QUERY_INVALID_LIMIT"


def test_limit_honours_max_limit_of_the_provider(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-0"), max_limit=5, default_limit=3)
    assert len(provider.search(SessionQueryRequest(query="", limit=5)).matches) == 5
    assert len(provider.search(SessionQueryRequest(query="")).matches) == 3  # the provider's default
    with pytest.raises(SessionQueryError) as err:
        provider.search(SessionQueryRequest(query="", limit=6))
    assert err.value.code == "SESSION_QUERY_INVALID_LIMIT"


@pytest.mark.parametrize(
    ("request_kwargs", "code"),
    [
        ({"query": "a\x00b"}, "SESSION_QUERY_INVALID_QUERY"),
        ({"query": " ".join(f"w{i}x" for i in range(33))}, "SESSION_QUERY_INVALID_QUERY"),
        ({"query": "x", "kinds": ("Not A Kind",)}, "SESSION_QUERY_INVALID_FILTER"),
        ({"query": "x", "session_id": "  "}, "SESSION_QUERY_INVALID_SCOPE"),
        ({"query": "x", "session_id": "bad id"}, "SESSION_QUERY_SESSION_NOT_FOUND"),
        ({"query": "x", "cursor": "not-a-cursor"}, "SESSION_QUERY_INVALID_CURSOR"),
    ],
)
def test_invalid_requests_fail_with_the_same_codes(
    loaded: Harness, request_kwargs: dict[str, Any], code: str
) -> None:
    with pytest.raises(SessionQueryError) as err:
        loaded.provider(Scope.workspace("ws-0")).search(SessionQueryRequest(**request_kwargs))
    assert err.value.code == code


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"kinds": ("user/message\n",)}, "SESSION_QUERY_INVALID_FILTER"),
        ({"limit": True}, "SESSION_QUERY_INVALID_LIMIT"),
        ({"limit": "10"}, "SESSION_QUERY_INVALID_LIMIT"),
        ({"limit": 1.0}, "SESSION_QUERY_INVALID_LIMIT"),
        ({"excerpt_bytes": True}, "SESSION_QUERY_INVALID_LIMIT"),
        ({"query": None}, "SESSION_QUERY_INVALID_QUERY"),
    ],
)
def test_requests_that_skipped_validation_fail_with_the_same_codes(
    loaded: Harness, fields: dict[str, Any], code: str
) -> None:
    request = SessionQueryRequest.model_construct(**{"query": "report", **fields})
    with pytest.raises(SessionQueryError) as err:
        loaded.provider(Scope.workspace("ws-0")).search(request)
    assert err.value.code == code


def test_search_disabled_by_configuration_refuses_every_search(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-0"), search_enabled=False)
    for request in (SessionQueryRequest(query="report"), SessionQueryRequest.model_construct(query="")):
        with pytest.raises(SessionQueryError) as err:
            provider.search(request)
        assert err.value.code == "SESSION_QUERY_SEARCH_DISABLED"
    ws, sid = corpus.session(0)
    reader = loaded.reader(Scope.workspace(ws))
    assert reader.read_event(sid, 0).target.seq == 0 and reader.list_sessions()


def test_an_aborted_search_is_aborted(loaded: Harness) -> None:
    signal = AbortSignal()
    signal.abort("stopped by the user")
    provider = loaded.provider(Scope.workspace("ws-0"))
    for cancel in (signal, AbortSignal.timeout(1e-9)):
        with pytest.raises(SessionQueryError) as err:
            provider.search(SessionQueryRequest(query="report"), signal=cancel)
        assert err.value.code == "SESSION_QUERY_ABORTED"
    assert provider.search(SessionQueryRequest(query="report"), signal=AbortSignal.timeout(60)).matches


def test_closed_provider_refuses(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-0"))
    provider.close()
    provider.close()
    with pytest.raises(SessionQueryError) as err:
        provider.search(SessionQueryRequest(query="report"))
    assert err.value.code == "SESSION_QUERY_PROVIDER_CLOSED"


# -- cursors ---------------------------------------------------------------------------------------


def _pages(provider: Any, request: SessionQueryRequest) -> tuple[list[tuple[str, int]], int]:
    keys: list[tuple[str, int]] = []
    pages = 0
    cursor = None
    while True:
        result = provider.search(request.model_copy(update={"cursor": cursor}))
        keys += _keys(result)
        pages += 1
        cursor = result.next_cursor
        if cursor is None:
            return keys, pages


@pytest.mark.parametrize("query", ["", "report budget", "forcast"])
def test_cursor_pages_add_up_to_one_big_page(loaded: Harness, query: str) -> None:
    provider = loaded.provider(Scope.workspace("ws-1"))
    whole = _keys(provider.search(SessionQueryRequest(query=query, limit=50)))
    paged, pages = _pages(provider, SessionQueryRequest(query=query, limit=4))
    assert paged[: len(whole)] == whole
    assert len(paged) == len(set(paged))
    if len(whole) < 50:
        assert paged == whole
    assert pages == len(paged) // 4 + 1 or (len(paged) % 4 == 0 and pages == len(paged) // 4)


def test_cursor_of_another_request_or_tampered_is_invalid(loaded: Harness) -> None:
    provider = loaded.provider(Scope.workspace("ws-1"))
    first = provider.search(SessionQueryRequest(query="report", limit=2))
    assert first.next_cursor is not None
    for request in (
        SessionQueryRequest(query="budget", limit=2, cursor=first.next_cursor),
        SessionQueryRequest(query="report", limit=3, cursor=first.next_cursor),
        SessionQueryRequest(query="report", limit=2, cursor=first.next_cursor[:-3] + "AAA"),
    ):
        with pytest.raises(SessionQueryError) as err:
            provider.search(request)
        assert err.value.code == "SESSION_QUERY_INVALID_CURSOR"
    other_scope = loaded.provider(Scope.workspace("ws-2"))
    with pytest.raises(SessionQueryError) as err2:
        other_scope.search(SessionQueryRequest(query="report", limit=2, cursor=first.next_cursor))
    assert err2.value.code == "SESSION_QUERY_INVALID_CURSOR"


def test_excerpts_are_bounded_and_centred(loaded: Harness) -> None:
    ws, sid = corpus.session(6)
    result = loaded.provider(Scope.workspace(ws)).search(
        SessionQueryRequest(query="rotation", limit=1, excerpt_bytes=40)
    )
    assert _keys(result) == [(sid, 21)]
    text = result.matches[0].excerpt
    assert len(text.encode("utf-8")) <= 40 and "rotation" in text
