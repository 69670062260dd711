"""The embedded engine's plan by scope size: a scope small enough is scanned (every entry scored)
instead of looked up in the file-wide indexes, and both plans give the same pages (entries, order,
scores, excerpts, partial flag, cursors) for any query."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.contracts.query_shapes import edit, queries_over

from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.indexer.textfold import WORD_RE, fold
from backscroll.ingest.sqlite.log import SQLiteEntryLog, connect
from backscroll.query import Scope, SessionQueryRequest, SessionQueryResult
from backscroll.query.plan import plan_request
from backscroll.query.scan import may_match, needle
from backscroll.query.scoring import fuzzy_budget, is_compound, score_text, typo_match
from backscroll.query.sqlite.candidates import scope_workspaces, typo_candidates
from backscroll.query.sqlite.provider import SQLiteProvider
from backscroll.query.sqlite.scan import SCAN_MAX_ROWS, page_hints

WORDS = [
    "report",
    "reports",
    "reporting",
    "deploy",
    "deployed",
    "cluster",
    "metrics",
    "invoice",
    "budget",
    "backlog",
    "sprint",
    "review",
    "pipeline",
    "staging",
    "customer",
    "account",
    "balance",
    "migration",
    "schema",
    "rollout",
    "incident",
    "latency",
    "Zürich",
    "café",
    "Đơn",
    "hàng",
    "naïve",
    "São",
    "Paulo",
    "Kraków",
    "approved",
    "reconciliation",
    "forecast",
    "forecasting",
    "quarterly",
    "ledger",
    "discrepancy",
    "Ærøskøbing",
    "Nguyễn",
    "acct_9931",
    "v2.14.3",
    "eu-west-1",
    "get_type",
    "東京都",
    "データ",
    "ok",
    "go",
    "id",
]
T0 = datetime(2026, 11, 4, tzinfo=UTC)


def _corpus(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for s in range(8):
        ws, sid = f"ws-{s % 2}", f"s-{s}"
        out.append(
            {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": T0.isoformat()}
        )
        for seq in range(rng.randint(10, 50)):
            kind = rng.choice(("user/message", "assistant/message", "tool/call", "tool/result"))
            record: dict[str, Any] = {
                "v": 1, "kind": "event", "workspace_id": ws, "session_id": sid, "seq": seq, "type": kind,
                "time": (T0 + timedelta(minutes=seq, seconds=s)).isoformat(),
                "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))),
            }  # fmt: skip
            if kind.startswith("tool/"):
                record["tool_name"] = rng.choice(("run_sql", "grep"))
            if kind != "tool/call":
                record["surface"] = {"op": "append"}
            out.append(record)
    return out


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scan") / "scan.db"
    with SQLiteEntryLog(path) as log:
        log.append_many(_corpus(3))
    with embedded_runner(path) as indexer:
        assert indexer.run_until_idle().dead_lettered == 0
    return path


SCOPES = [Scope.session("s-1"), Scope.sessions(["s-2", "s-5"]), Scope.workspace("ws-0")]


@pytest.fixture(scope="module")
def providers(db: Path) -> Iterator[dict[tuple[int, bool], SQLiteProvider]]:
    key = b"k" * 32
    made = {
        (i, scan): SQLiteProvider(scope, db, cursor_key=key, scan_max_rows=SCAN_MAX_ROWS if scan else 0)
        for i, scope in enumerate(SCOPES)
        for scan in (True, False)
    }
    yield made
    for provider in made.values():
        provider.close()


queries = queries_over(WORDS)


def _view(result: SessionQueryResult) -> list[tuple[Any, ...]]:
    return [(m.entry_id, m.score, m.excerpt, m.kind) for m in result.matches]


def _same(scanned: SessionQueryResult, indexed: SessionQueryResult) -> None:
    assert _view(scanned) == _view(indexed)
    assert (scanned.partial, scanned.searched) == (indexed.partial, indexed.searched)
    assert (scanned.next_cursor is None) == (indexed.next_cursor is None)


@pytest.fixture(scope="module")
def vocab(db: Path) -> Iterator[dict[str, list[str]]]:
    conn = connect(db)
    try:
        terms: dict[str, list[str]] = {}
        for ws, term in conn.execute("SELECT ws, term FROM vocab"):
            terms.setdefault(ws, []).append(term)
        yield terms
    finally:
        conn.close()


def _index_is_complete(db: Path, vocab: dict[str, list[str]], query: str, scope: Scope) -> bool:
    """Whether the index path finds every typo candidate of the query's words (it finds every one
    within one edit, most within two: the scan finds all, so only then are the pages equal)."""
    plan, _ = plan_request(SessionQueryRequest(query=query), scope, 50)
    ws = "ws-0" if scope.kind == "workspaces" else None
    conn = connect(db)
    try:
        workspaces = [ws] if ws else scope_workspaces(conn, "sessions", scope.ids)
        words = [p for w in plan.words for p in (w, *(WORD_RE.findall(w) if is_compound(w) else ()))]
        for word in words:
            budget = fuzzy_budget(word)
            truth = {
                t for w in workspaces for t in vocab.get(w, []) if t != word and typo_match(word, t, budget)
            } if budget else set()  # fmt: skip
            if truth - set(typo_candidates(conn, word, workspaces)):
                return False
    finally:
        conn.close()
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=queries(),
    scope=st.integers(0, len(SCOPES) - 1),
    limit=st.integers(1, 12),
    since=st.none() | st.integers(0, 50),
)
def test_scanning_a_small_scope_ranks_like_the_index(
    db: Path,
    vocab: dict[str, list[str]],
    providers: dict[tuple[int, bool], SQLiteProvider],
    query: str,
    scope: int,
    limit: int,
    since: int | None,
) -> None:
    assume(_index_is_complete(db, vocab, query, SCOPES[scope]))
    request = SessionQueryRequest(
        query=query, limit=limit, since=None if since is None else T0 + timedelta(minutes=since)
    )
    scanned = providers[(scope, True)].search(request)
    indexed = providers[(scope, False)].search(request)
    _same(scanned, indexed)
    if scanned.next_cursor and indexed.next_cursor:  # the second page too, each with its own cursor
        page2 = providers[(scope, True)].search(request.model_copy(update={"cursor": scanned.next_cursor}))
        index2 = providers[(scope, False)].search(request.model_copy(update={"cursor": indexed.next_cursor}))
        _same(page2, index2)


@pytest.mark.parametrize("query", ["reprot", "Zurich cafe", "get_t", "データ", "eu-west", "forcast ledgr"])
def test_a_session_narrowed_workspace_search_ranks_like_the_index(
    providers: dict[tuple[int, bool], SQLiteProvider], query: str
) -> None:
    for kinds in ((), ("tool/call",)):
        request = SessionQueryRequest(query=query, session_id="s-4", kinds=kinds, limit=50)
        _same(providers[(2, True)].search(request), providers[(2, False)].search(request))


def test_a_scope_over_the_limit_uses_the_index(db: Path) -> None:
    for max_rows, scanned in ((5, False), (SCAN_MAX_ROWS, True)):
        statements: list[str] = []
        with SQLiteProvider(Scope.workspace("ws-0"), db, scan_max_rows=max_rows) as provider:
            provider.search(SessionQueryRequest(query="x"))
            assert provider._conn is not None
            provider._conn.set_trace_callback(statements.append)
            provider.engine._memo.check(object())  # what that search read is read again, traced
            assert provider.search(SessionQueryRequest(query="reprot")).matches
        assert any("e.text FROM events e" in s for s in statements) is scanned
        assert any("events_words MATCH" in s for s in statements) is not scanned


def test_a_scope_is_read_once_while_the_data_stays_the_same(db: Path) -> None:
    statements: list[str] = []
    with SQLiteProvider(Scope.workspace("ws-0"), db) as provider:
        first = provider.search(SessionQueryRequest(query="x"))
        assert provider._conn is not None
        provider._conn.set_trace_callback(statements.append)
        again = provider.search(SessionQueryRequest(query="x"))
        for query in ("reprot", "quartely budget", ""):
            assert provider.search(SessionQueryRequest(query=query, limit=3)).matches is not None
        provider._conn.set_trace_callback(None)
        assert not [s for s in statements if "e.text FROM events e" in s]
        assert again.matches == first.matches
        provider.engine._memo.check(object())  # what a write does: the next search reads again
        provider._conn.set_trace_callback(statements.append)
        assert provider.search(SessionQueryRequest(query="x")).matches == first.matches
    assert len([s for s in statements if "e.text FROM events e" in s]) == 1


def test_hints_are_the_page_words_within_the_typo_budget() -> None:
    assert page_hints(["reprot", "ok"], ["the reports", "a report, reprot and repo"]) == [
        "report",
        "repo",
        "reports",
    ]


#: tokens whose digits a query word's edits may or may not keep (the digit rule)
_WITH_DIGITS = ["python3", "pyhton3", "python31", "acct_99310", "acct_9931x", "v2.14.30", "eu-west-12"]


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(
        st.sampled_from([*WORDS, "repot", "reprot", "rpeort", "Zurich!", "get", "type", *_WITH_DIGITS]),
        max_size=8,
    ),
    word=queries(),
    seed=st.integers(0, 2**16),
)
def test_the_cheap_test_never_drops_an_entry_that_matches(text: list[str], word: str, seed: int) -> None:
    rng = random.Random(seed)
    body = " ".join(edit(rng, t) if rng.random() < 0.3 else t for t in text)
    plan, _ = plan_request(SessionQueryRequest(query=word), Scope.workspace("w"), 50)
    for partial in (False, True):
        if score_text(body, plan.raw_words, plan.words, partial=partial) is not None:
            assert may_match(fold(body.lower()), [needle(w) for w in plan.words], partial), (body, word)
