"""The OpenSearch engine's plan by scope size, on the real server: a search of sessions small enough
is ranked from the scope's entries (:mod:`backscroll.query.opensearch.scan`), and gives the pages the
index gives (entries, order, scores, excerpts, partial flag, ``searched``, cursors) for typos,
prefixes, identifiers, closest matches, filters and paging; a session bigger than the limit takes
the index path, then goes there at once."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.contracts.query_shapes import queries_over

from backscroll.indexer import OpenSearchSettings, OpenSearchView
from backscroll.indexer.textfold import WORD_RE, fold, word_tokens
from backscroll.ingest.wire import parse_record
from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest, SessionQueryResult
from backscroll.query.errors import SessionQueryError
from backscroll.query.opensearch.async_provider import AsyncOpenSearchProvider
from backscroll.query.opensearch.body import trigrams
from backscroll.query.plan import MAX_QUERY_WORDS, MAX_WORD_CHARS, plan_request
from backscroll.query.scoring import is_compound

WORDS = [
    "report", "reports", "reporting", "deploy", "deployed", "cluster", "metrics", "invoice", "budget",
    "backlog", "review", "pipeline", "staging", "customer", "account", "balance", "migration",
    "rollout", "latency", "Zürich", "café", "Đơn", "hàng", "naïve", "São", "Paulo", "approved",
    "reconciliation", "forecast", "forecasting", "quarterly", "ledger", "Nguyễn", "acct_9931",
    "v2.14.3", "eu-west-1", "get_type", "python3", "東京都", "データ", "ok", "go", "id",
]  # fmt: skip
T0 = datetime(2026, 11, 4, tzinfo=UTC)
SESSIONS = 6
KEY = b"k" * 32


def _corpus(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for s in range(SESSIONS):
        ws, sid = f"ws-{s % 2}", f"s-{s}"
        out.append(
            {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": T0.isoformat()}
        )
        for seq in range(rng.randint(15, 45)):
            kind = rng.choice(("user/message", "assistant/message", "tool/call", "tool/result"))
            record: dict[str, Any] = {
                "v": 1, "kind": "event", "workspace_id": ws, "session_id": sid, "seq": seq, "type": kind,
                "time": (T0 + timedelta(minutes=seq, seconds=s)).isoformat(),
                "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))),
            }  # fmt: skip
            if kind.startswith("tool/"):
                record["tool_name"] = rng.choice(("run_sql", "grep", "session_query"))
            if kind != "tool/call":
                record["surface"] = {"op": "append"}
            out.append(record)
    return out


RECORDS = _corpus(5)
BIG = "s-0"  # more entries than the limit the tests give the scanning providers
SCAN_LIMIT = 14
SCOPES = [Scope.session("s-1"), Scope.sessions(["s-2", "s-5"]), Scope.workspace("ws-1")]
NARROW = "s-3"  # the workspace scope's searches are narrowed to this session


@pytest.fixture(scope="module")
def target() -> Iterator[OpenSearchSettings]:
    found = OpenSearchSettings().model_copy(update={"index_prefix": f"test-scan-{uuid.uuid4().hex[:10]}"})
    view = OpenSearchView(found)
    try:
        view.ensure_schema()
        view.write_records([parse_record(r) for r in RECORDS])
        view.refresh()
        yield found
    finally:
        view.drop()
        view.close()


@pytest.fixture(scope="module")
def providers(target: OpenSearchSettings) -> Iterator[dict[tuple[int, bool], OpenSearchProvider]]:
    made = {
        (i, scan): OpenSearchProvider(scope, target, cursor_key=KEY, scan_max_rows=100 if scan else 0)
        for i, scope in enumerate(SCOPES)
        for scan in (True, False)
    }
    yield made
    for provider in made.values():
        provider.close()


def _texts(scope: Scope) -> list[str]:
    ids = set(scope.ids) if scope.kind == "sessions" else {NARROW}
    return [r["text"] for r in RECORDS if r["kind"] == "event" and r["session_id"] in ids]


def _trigrams_agree(query: str, scope: Scope) -> bool:
    """Whether the server's substring tier (every trigram of the word somewhere in the entry) and
    the scan's (the word inside one token) agree on every entry of ``scope`` for the query's words:
    the server's is an approximation the scan does not copy."""
    plan, _ = plan_request(SessionQueryRequest(query=query), Scope.workspace("w"), 50)
    words = [p for w in plan.words for p in (WORD_RE.findall(w) if is_compound(w) else [w])]
    for text in _texts(scope):
        tokens = word_tokens(fold(text.lower()))
        grams = {t[i : i + 3] for t in tokens for i in range(len(t) - 2)}
        for word in words:
            if len(word) >= 3 and all(g in grams for g in trigrams(word)) != any(word in t for t in tokens):
                return False
    return True


queries = queries_over(WORDS)


def _view(result: SessionQueryResult) -> list[tuple[Any, ...]]:
    return [(m.entry_id, m.score, m.excerpt, m.kind, m.turn, m.role, m.created_at) for m in result.matches]


def _same(scanned: SessionQueryResult, indexed: SessionQueryResult) -> None:
    assert _view(scanned) == _view(indexed)
    assert (scanned.partial, scanned.searched, scanned.source) == (
        indexed.partial,
        indexed.searched,
        indexed.source,
    )
    assert (scanned.next_cursor is None) == (indexed.next_cursor is None)


def _request(scope: int, **fields: Any) -> SessionQueryRequest:
    if SCOPES[scope].kind == "workspaces":
        fields["session_id"] = NARROW
    return SessionQueryRequest(**fields)


def _all_pages(provider: OpenSearchProvider, request: SessionQueryRequest) -> list[SessionQueryResult]:
    pages = [provider.search(request)]
    while pages[-1].next_cursor is not None:
        pages.append(provider.search(request.model_copy(update={"cursor": pages[-1].next_cursor})))
    return pages


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=queries(),
    scope=st.integers(0, len(SCOPES) - 1),
    limit=st.integers(1, 12),
    since=st.none() | st.integers(0, 40),
)
def test_scoring_a_small_scope_here_ranks_like_the_index(
    providers: dict[tuple[int, bool], OpenSearchProvider],
    query: str,
    scope: int,
    limit: int,
    since: int | None,
) -> None:
    assume(_trigrams_agree(query, SCOPES[scope]))
    when = None if since is None else T0 + timedelta(minutes=since)
    request = _request(scope, query=query, limit=limit, since=when)
    scanned = providers[(scope, True)].search(request)
    indexed = providers[(scope, False)].search(request)
    _same(scanned, indexed)
    if scanned.next_cursor and indexed.next_cursor:  # the second page too, each with its own cursor
        _same(
            providers[(scope, True)].search(request.model_copy(update={"cursor": scanned.next_cursor})),
            providers[(scope, False)].search(request.model_copy(update={"cursor": indexed.next_cursor})),
        )


CASES: list[dict[str, Any]] = [
    {"query": "reprot"},  # a typo
    {"query": "forcast ledgr"},  # two typos
    {"query": "Zurich cafe"},  # folded accents, a phrase
    {"query": "zürich café"},  # exact accents
    {"query": "forecas"},  # a prefix
    {"query": "porting"},  # inside a word
    {"query": "get_t"},  # an identifier prefix
    {"query": "get type"},  # an identifier's parts
    {"query": "acct_9931 v2.14"},  # identifiers with digits
    {"query": "pyhton3"},  # a typo in a word with digits
    {"query": "データ"},
    {"query": "東京"},
    {"query": "report qqzxnothing"},  # closest matches
    {"query": "ok go"},
    {"query": "deploy", "kinds": ["tool/call"]},  # tool arguments only
    {"query": "report budget", "kinds": ["tool/call", "tool/result"]},
    {"query": "report", "exclude_tools": ["grep"]},
    {"query": "balance", "until": T0 + timedelta(minutes=20)},
    {"query": "report", "limit": 3},  # paging
    {"query": "review latency", "limit": 2},
]


@pytest.mark.parametrize("case", CASES, ids=[str(c["query"]) for c in CASES])
@pytest.mark.parametrize("scope", range(len(SCOPES)))
def test_every_page_of_a_scanned_scope_is_the_index_page(
    providers: dict[tuple[int, bool], OpenSearchProvider], case: dict[str, Any], scope: int
) -> None:
    request = _request(scope, **case)
    scanned = _all_pages(providers[(scope, True)], request)
    indexed = _all_pages(providers[(scope, False)], request)
    assert len(scanned) == len(indexed)
    for one, other in zip(scanned, indexed, strict=True):
        _same(one, other)


class Spy:
    """The real client, with the name and bodies of every search request it sends recorded."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: list[tuple[str, Any]] = []

    def msearch(self, **kwargs: Any) -> Any:
        self.calls.append(("msearch", kwargs["body"]))
        return self.client.msearch(**kwargs)

    def search(self, **kwargs: Any) -> Any:
        self.calls.append(("search", kwargs["body"]))
        return self.client.search(**kwargs)


def _scanned(body: dict[str, Any]) -> bool:
    return "must" not in body["query"]["bool"] and body["sort"] == [{"_doc": "asc"}]


def test_a_session_over_the_limit_takes_the_index_path_then_goes_there_at_once(
    target: OpenSearchSettings,
) -> None:
    reference = OpenSearchProvider(Scope.session(BIG), target, cursor_key=KEY, scan_max_rows=0)
    spy = Spy(reference.engine.access.client)
    # One page, one word: no window; one more search for the reading "report" inside longer words.
    request = SessionQueryRequest(query="reprot", limit=50)
    try:
        expected = _view(reference.search(request))
        small = OpenSearchProvider(
            Scope.session("s-1"), target, client=cast(Any, spy), scan_max_rows=SCAN_LIMIT * 5
        )
        small.search(request)
        assert [name for name, _ in spy.calls] == ["msearch"] and _scanned(spy.calls[0][1][3])  # rescanned
        spy.calls.clear()
        assert sum(1 for r in RECORDS if r.get("session_id") == BIG and r["kind"] == "event") > SCAN_LIMIT
        for attempt in range(2):
            big = OpenSearchProvider(
                Scope.session(BIG), target, cursor_key=KEY, client=cast(Any, spy), scan_max_rows=SCAN_LIMIT
            )
            assert _view(big.search(request)) == expected
            names = [name for name, _ in spy.calls]
            if attempt == 0:  # asked for its entries, too many: the index, in a second request
                assert names == ["msearch", "search", "search"] and _scanned(spy.calls[0][1][3])
                assert not _scanned(spy.calls[1][1]) and not _scanned(spy.calls[2][1])
            else:  # remembered: the index at once, in one request (and the reading's search)
                assert names == ["msearch", "search"] and not _scanned(spy.calls[0][1][3])
            spy.calls.clear()
            big.close()
    finally:
        reference.close()


@pytest.mark.parametrize("query", ["reprot", "report qqzxnothing", "get_t"])
def test_the_async_provider_plans_the_same_way(target: OpenSearchSettings, query: str) -> None:
    import asyncio

    request = SessionQueryRequest(query=query, limit=4)

    async def pages(scan: int) -> list[list[tuple[Any, ...]]]:
        async with AsyncOpenSearchProvider(
            Scope.session("s-1"), target, cursor_key=KEY, scan_max_rows=scan
        ) as p:
            out = [await p.asearch(request)]
            while out[-1].next_cursor is not None:
                out.append(await p.asearch(request.model_copy(update={"cursor": out[-1].next_cursor})))
            return [_view(page) for page in out]

    scanned, indexed = asyncio.run(pages(100)), asyncio.run(pages(0))
    assert scanned == indexed and scanned[0]


def _longest(seed: int, length: int) -> str:
    rng = random.Random(seed)
    return " ".join(
        "".join(rng.choice("abcdefghijklmnop") for _ in range(length)) for _ in range(MAX_QUERY_WORDS - 1)
    )


@pytest.mark.parametrize("length", [7, 20, MAX_WORD_CHARS])
@pytest.mark.parametrize("scope", range(len(SCOPES)))
def test_the_longest_query_of_plain_words_fits_the_servers_clause_limit(
    providers: dict[tuple[int, bool], OpenSearchProvider], length: int, scope: int
) -> None:
    request = _request(scope, query=_longest(length, length) + " report")
    for scan in (True, False):
        assert providers[(scope, scan)].search(request).searched > 0


def test_a_query_of_too_many_identifier_parts_is_a_typed_error_not_a_server_failure(
    providers: dict[tuple[int, bool], OpenSearchProvider],
) -> None:
    parts = " ".join("_".join(f"part{chr(97 + i)}{chr(97 + j)}" for j in range(6)) for i in range(20))
    with pytest.raises(SessionQueryError) as caught:
        providers[(2, False)].search(_request(2, query=parts))
    assert caught.value.code == "SESSION_QUERY_INVALID_QUERY" and "too long" in caught.value.message
