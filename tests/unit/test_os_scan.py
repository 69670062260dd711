"""The OpenSearch engine's plan by scope size, without a server: which request a search sends, when
it falls back to the index, and the ranking of a scope's entries in Python (the same pages as the
index are proven against the real server in ``tests/integration/test_os_scan_plan.py``)."""

from __future__ import annotations

import random
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.indexer.textfold import fold, word_tokens
from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from backscroll.query.opensearch.access import OpenSearchAccess
from backscroll.query.opensearch.async_provider import AsyncOpenSearchEngine
from backscroll.query.opensearch.scan import SCAN_MAX_ROWS, Oversized, candidates, fits, scan_top
from backscroll.query.plan import plan_request
from backscroll.query.scoring import score_text

WORDS = [
    "report",
    "reports",
    "Zürich",
    "café",
    "Đơn",
    "acct_9931",
    "python3",
    "v2.14.3",
    "東京都",
    "ok",
    "deploy",
]


def _entry(seq: int, text: str, *, session: str = "s1", args: bool = False) -> dict[str, Any]:
    source = {"session_id": session, "seq": seq, "type": "tool/call" if args else "user/message"}
    source["args" if args else "text"] = text
    return {"_id": f"{session}:{seq}", "_source": source}


class FakeClient:
    """Answers ``_msearch`` with the count and the given entries (whatever the page line asks)."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.calls: list[tuple[str, Any]] = []

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if "aggs" in body:
            total = len(self.entries)
            return {
                "hits": {"total": {"value": total}, "hits": []},
                "aggregations": {"searched": {"doc_count": total}, "max_offset": {"value": 7}},
            }
        hits = [dict(e, _score=4.0) for e in self.entries[: body["size"]]]
        return {"hits": {"total": {"value": len(hits)}, "hits": hits}}

    def msearch(self, *, body: list[dict[str, Any]], request_timeout: float) -> dict[str, Any]:
        self.calls.append(("msearch", body))
        return {"responses": [self._answer(line) for line in body[1::2]]}

    def search(self, *, body: dict[str, Any], request_timeout: float, **_: Any) -> dict[str, Any]:
        self.calls.append(("search", body))
        return self._answer(body)


def _scan(body: dict[str, Any]) -> bool:
    return body.get("sort") == [{"_doc": "asc"}]


def _provider(scope: Scope, client: FakeClient, prefix: str, **options: Any) -> OpenSearchProvider:
    return OpenSearchProvider(scope, client=cast(Any, client), index_prefix=prefix, **options)


def test_a_session_search_asks_for_its_entries_in_the_same_request_as_the_count() -> None:
    client = FakeClient([_entry(1, "the quarterly report"), _entry(2, "nothing here")])
    result = _provider(Scope.session("s1"), client, "u1").search(SessionQueryRequest(query="reprot"))
    assert [name for name, _ in client.calls] == ["msearch"]
    body = client.calls[0][1]
    assert _scan(body[3]) and body[3]["size"] == SCAN_MAX_ROWS + 1 and "must" not in body[3]["query"]["bool"]
    assert [m.entry_id for m in result.matches] == ["s1:1"] and result.matches[0].score == 2.001
    assert result.searched == 2


def test_a_workspace_search_narrowed_to_a_session_is_scanned_and_a_workspace_search_is_not() -> None:
    client = FakeClient([_entry(1, "report")])
    provider = _provider(Scope.workspace("w1"), client, "u2")
    provider.search(SessionQueryRequest(query="report", session_id="s1"))
    provider.search(SessionQueryRequest(query="report"))
    provider.search(SessionQueryRequest(query="", session_id="s1"))  # browsing: the index's order
    bodies = [call[1][3] for call in client.calls]
    assert [_scan(b) for b in bodies] == [True, False, False]


def test_no_scan_when_disabled() -> None:
    client = FakeClient([_entry(1, "report")])
    _provider(Scope.session("s1"), client, "u3", scan_max_rows=0).search(SessionQueryRequest(query="report"))
    assert not _scan(client.calls[0][1][3])


def test_a_scope_over_the_limit_goes_to_the_index_then_straight_there() -> None:
    client = FakeClient([_entry(i, f"report number {i}") for i in range(6)])
    for _ in range(2):
        _provider(Scope.session("big"), client, "u4", scan_max_rows=5).search(
            SessionQueryRequest(query="report")
        )
    names = [name for name, _ in client.calls]
    assert names == ["msearch", "search", "msearch"]
    assert _scan(client.calls[0][1][3]) and not _scan(client.calls[1][1]) and not _scan(client.calls[2][1][3])


def test_the_wider_window_and_the_closest_matches_are_ranked_from_the_same_entries() -> None:
    entries = [_entry(i, "the planes" if i % 2 else "some plans") for i in range(30)]
    client = FakeClient(entries)
    provider = _provider(Scope.session("s1"), client, "u5")
    typo = provider.search(SessionQueryRequest(query="planqs", limit=3))  # a page inside the typo tier
    assert {m.excerpt for m in typo.matches} == {"the planes", "some plans"}, "every reading first"
    closest = provider.search(SessionQueryRequest(query="planes qqzx"))
    assert closest.partial and closest.matches
    assert [name for name, _ in client.calls] == ["msearch", "msearch"]


def test_the_async_engine_plans_the_same_way() -> None:
    import asyncio

    class AsyncClient(FakeClient):
        async def msearch(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
            return FakeClient.msearch(self, **kwargs)

        async def search(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
            return FakeClient.search(self, **kwargs)

    client = AsyncClient([_entry(i, f"report {i}") for i in range(4)])
    access = OpenSearchAccess("SESSION_QUERY_INDEX_FAILED", index_prefix="u6")
    engine = AsyncOpenSearchEngine(Scope.session("s1"), access, cast(Any, client), scan_max_rows=3)
    from backscroll.query.aio import AsyncSearchProvider

    provider = AsyncSearchProvider(Scope.session("s1"), engine)
    asyncio.run(provider.asearch(SessionQueryRequest(query="report")))
    assert [name for name, _ in client.calls] == ["msearch", "search"], "over the limit: the index"


def _plan(query: str) -> Any:
    return plan_request(SessionQueryRequest(query=query), Scope.session("s1"), 100)[0]


def test_ties_fall_to_recency_then_session_and_arguments_get_no_phrase_or_field_bonus() -> None:
    entries = [
        _entry(1, "deploy report", session="b"),
        _entry(2, "deploy report", session="b"),
        _entry(2, "deploy report", session="a"),
        _entry(3, "deploy report", args=True),
    ]
    top = scan_top(entries, _plan("deploy report"), False, 10, lambda: None)
    assert [(e["_id"], s) for e, s in top] == [
        ("a:2", 56.001),
        ("b:2", 56.001),
        ("b:1", 56.001),
        ("s1:3", 16.0),
    ]


def test_fits_counts_entries_and_characters() -> None:
    assert fits([_entry(1, "x")] * 3, 3) and not fits([_entry(1, "x")] * 4, 3)
    assert not fits([_entry(1, "x" * 2_000_001)], 3)


def test_oversized_remembers_the_most_recent_scopes() -> None:
    seen = Oversized(2)
    for key in ("a", "b", "c"):
        seen.add(key)
    assert "a" not in seen and "b" in seen and "c" in seen


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(
        st.sampled_from([*WORDS, "repot", "rpeort", "Zurich!", "pyhton3", "get", "type"]), max_size=8
    ),
    query=st.lists(
        st.sampled_from([*WORDS, "reprot", "zurch", "pyton3", "porti", "東京", "get_t"]),
        min_size=1,
        max_size=3,
    ),
    seed=st.integers(0, 2**16),
)
def test_an_entry_that_matches_holds_a_candidate_token_of_every_word(
    text: list[str], query: list[str], seed: int
) -> None:
    rng = random.Random(seed)
    body = " ".join(t.upper() if rng.random() < 0.2 else t for t in text)
    plan = _plan(" ".join(query))
    lowered = body.lower()
    tokens = set(word_tokens(fold(lowered))) | set(word_tokens(lowered))
    for partial in (False, True):
        if score_text(body, plan.raw_words, plan.words, partial=partial) is None:
            continue
        found = [
            words is None or not words.isdisjoint(tokens)
            for words in (
                candidates(r, w, sorted(tokens)) for r, w in zip(plan.raw_words, plan.words, strict=True)
            )
        ]
        assert any(found) if partial else all(found), (body, query)
        assert scan_top([_entry(1, body)], plan, partial, 1, lambda: None), (body, query)


def test_scan_top_leaves_out_entries_holding_a_skipped_word() -> None:
    qorz = [_entry(2 + n, f"qorz {n}") for n in range(5)]
    entries = [_entry(0, "the qoryx valve"), _entry(1, "a qarx"), *qorz]
    plan = plan_request(SessionQueryRequest(query="qorx"), Scope.session("s1"), 100)[0]
    every = [e["_source"]["seq"] for e, _ in scan_top(entries, plan, False, 10, lambda: None)]
    assert sorted(every) == list(range(7))
    rest = scan_top(entries, plan, False, 10, lambda: None, frozenset({"qorz"}))
    assert sorted(e["_source"]["seq"] for e, _ in rest) == [0, 1]
