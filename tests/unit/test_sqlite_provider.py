"""The embedded provider's own behaviour (the shared contract is in tests/contracts): index-backed
statements only, typo candidates as complete as a brute-force scan, the exact Python ranking, timeouts,
catch-up before search, and its configuration errors."""

from __future__ import annotations

import random
import re
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rapidfuzz.distance import OSA

from backscroll.backends import EmbeddedBackend
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.ingest.sqlite.log import SQLiteEntryLog, connect
from backscroll.query import Scope, SessionQueryError, SessionQueryRequest
from backscroll.query.bounded import Bounded
from backscroll.query.cursor import encode_cursor, request_fingerprint
from backscroll.query.plan import excerpt_budget, plan_request
from backscroll.query.scoring import fuzzy_budget, score_text, typo_budget, typo_match
from backscroll.query.sqlite import candidates
from backscroll.query.sqlite.memo import LENGTHS_KEPT
from backscroll.query.sqlite.provider import SQLiteProvider, typo_candidates

VOCAB = [
    "report",
    "deploy",
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
    "postmortem",
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
    "quarterly",
    "warehouse",
    "gateway",
    "certificate",
    "rotation",
    "ledger",
    "discrepancy",
    "Ærøskøbing",
    "Nguyễn",
    "spreadsheet",
    "acct_9931",
    "v2.14.3",
    "eu-west-1",
    "forecasting",
    "reports",
    "deployed",
]
T0 = datetime(2026, 11, 4, tzinfo=UTC)


def _corpus(seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for s in range(6):
        ws, sid = f"ws-{s % 2}", f"p-{s}"
        out.append(
            {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": T0.isoformat()}
        )
        for seq in range(60):
            kind = "tool/call" if seq % 7 == 3 else ("user/message" if seq % 2 == 0 else "assistant/message")
            record: dict[str, Any] = {
                "v": 1, "kind": "event", "workspace_id": ws, "session_id": sid, "seq": seq, "type": kind,
                "time": (T0 + timedelta(minutes=s, seconds=seq)).isoformat(),
                "text": " ".join(rng.choice(VOCAB) for _ in range(rng.randint(4, 12))),
            }  # fmt: skip
            if kind != "tool/call":
                record["surface"] = {"op": "append"}
            else:
                record["tool_name"] = "run_sql"
            out.append(record)
    return out


CORPUS = _corpus()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("provider") / "p.db"
    with SQLiteEntryLog(path) as log:
        log.append_many(CORPUS)
    with embedded_runner(path) as indexer:
        assert indexer.run_until_idle().dead_lettered == 0
    return path


@pytest.fixture
def provider(db: Path) -> Iterator[SQLiteProvider]:
    with SQLiteProvider(Scope.workspace("ws-0"), db) as made:
        yield made


# -- ranking equals the Python ranking over the whole scope ----------------------------------------


def _brute_force(scope_ws: str, query: str, partial: bool) -> dict[tuple[str, int], float]:
    """Every in-scope entry's Python score (entries that do not match are left out)."""
    plan, _ = plan_request(SessionQueryRequest(query=query), Scope.workspace(scope_ws), 50)
    scores = {}
    for r in CORPUS:
        if r["kind"] != "event" or r["workspace_id"] != scope_ws:
            continue
        weight = 0.75 if r["type"] == "tool/call" else 1.0
        score = score_text(r["text"], plan.raw_words, plan.words, weight=weight, partial=partial)
        if score is not None:
            scores[(r["session_id"], r["seq"])] = score
    return scores


def _assert_exact_top(result: Any, scores: dict[tuple[str, int], float], limit: int) -> None:
    """The page holds the best Python scores, each entry with its own Python score (the order of
    equal scores is the tiebreak's business)."""
    got = [(m.session_id, m.seq) for m in result.matches]
    assert [m.score for m in result.matches] == [
        round(s, 4) for s in sorted(scores.values(), reverse=True)[:limit]
    ]
    assert all(round(scores[key], 4) == m.score for key, m in zip(got, result.matches, strict=True))
    assert len(set(got)) == len(got)


QUERIES = [
    "Zürich", "Zurich", "zurich cafe", "cafe", "report", "reprot", "forcast", "quartely", "discrepency",
    "Sao Paulo", "don hang", "Nguyen", "aeroskobing", "9931", "acct", "west", "budget review",
    "approvd ledger", "naive", "certificat rotaton", "v2", "deploy", "deployd", "eu", "forecast reports",
]  # fmt: skip


@pytest.mark.parametrize("query", QUERIES)
def test_the_ranking_is_the_exact_python_ranking(provider: SQLiteProvider, query: str) -> None:
    result = provider.search(SessionQueryRequest(query=query, limit=20))
    assert result.matches
    _assert_exact_top(result, _brute_force("ws-0", query, result.partial), 20)


def test_partial_ranking_is_the_python_partial_ranking(provider: SQLiteProvider) -> None:
    result = provider.search(SessionQueryRequest(query="ledger qqqzzzx", limit=20))
    assert result.partial is True
    _assert_exact_top(result, _brute_force("ws-0", "ledger qqqzzzx", True), 20)


def test_one_edit_above_two_then_recency_not_spelling(tmp_path: Path) -> None:
    path = tmp_path / "tie.db"
    texts = ["the reason we left", "what do you reckon", "the region was cold"] + ["common words"] * 5
    records = [
        {"v": 1, "kind": "event", "workspace_id": "w", "session_id": "t-1", "seq": seq,
         "type": "user/message", "surface": {"op": "append"}, "time": T0.isoformat(), "text": text}
        for seq, text in enumerate(texts)
    ]  # fmt: skip
    with SQLiteEntryLog(path) as log:
        log.append_many(records)
    with embedded_runner(path) as indexer:
        indexer.run_until_idle()
    with SQLiteProvider(Scope.session("t-1"), path) as provider:
        result = provider.search(SessionQueryRequest(query="rexkon"))
    # Every one is a typo-tier match (two edits allowed for six letters): one edit ("reckon") is
    # the better typo tier; the two-edit ones tie and recency orders them.
    assert len({m.score for m in result.matches}) == 2
    assert [m.seq for m in result.matches] == [1, 2, 0]


# -- no full scans ---------------------------------------------------------------------------------

_FULL_SCAN = re.compile(r"^SCAN (e|events|terms|sessions|log)\b(?! VIRTUAL TABLE)")


def test_every_statement_uses_an_index(db: Path) -> None:
    statements: list[str] = []
    with SQLiteProvider(Scope.workspace("ws-0"), db) as provider:
        provider.search(SessionQueryRequest(query="x"))  # opens the connection
        assert provider._conn is not None
        provider._conn.set_trace_callback(statements.append)
        provider.engine._memo.check(object())  # what that search read is read again, traced
        for query in ("reprot budget", "quartely", "", "Zürich cafe", "9931", "ledger qqqzzzx"):
            provider.search(SessionQueryRequest(query=query))
            provider.search(SessionQueryRequest(query=query, session_id="p-2"))
    with SQLiteProvider(Scope.sessions(["p-1", "p-3"]), db) as provider:
        provider.search(SessionQueryRequest(query="x"))  # opens the connection
        assert provider._conn is not None
        provider._conn.set_trace_callback(statements.append)
        provider.engine._memo.check(object())  # what that search read is read again, traced
        provider.search(SessionQueryRequest(query=""))
        provider.search(SessionQueryRequest(query="forcast"))
    selects = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH", "INSERT"))]
    assert len(selects) > 30
    conn = sqlite3.connect(db)
    try:
        for sql in selects:
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            assert not [step for step in plan if _FULL_SCAN.match(step)], (sql, plan)
    finally:
        conn.close()


# -- typo candidates -------------------------------------------------------------------------------


def _random_word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnoprstuy") for _ in range(rng.randint(3, 11)))


def _edit(rng: random.Random, word: str, edits: int) -> str:
    for _ in range(edits):
        i = rng.randrange(len(word))
        op = rng.choice("sidt")
        if op == "s":
            word = word[:i] + rng.choice("abcdefghijklmnoprstuy") + word[i + 1 :]
        elif op == "i":
            word = word[:i] + rng.choice("abcdefghijklmnoprstuy") + word[i:]
        elif op == "d" and len(word) > 3:
            word = word[:i] + word[i + 1 :]
        elif op == "t" and i + 1 < len(word):
            word = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word


def _vocabulary_file(path: Path, vocab: list[str]) -> sqlite3.Connection:
    """A view file whose workspace ``w`` has ``vocab`` as its terms, opened."""
    with SQLiteView(path) as view:
        view.ensure_schema()
        with view.transaction():
            view._add_vocab({"w": set(vocab)})
    return connect(path)


@pytest.mark.parametrize("compared_max", [None, 10])
def test_typo_candidates_are_complete_for_one_edit_and_nearly_for_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compared_max: int | None
) -> None:
    # Every term of a near length compared (complete), or, past that many (the trigram probe
    # plus the one-edit ranges), every one-edit term and most two-edit ones.
    if compared_max is not None:
        monkeypatch.setattr(candidates, "_SCAN_TERMS_MAX", compared_max)
    rng = random.Random(5)
    vocab = sorted({_random_word(rng) for _ in range(4000)})
    conn = _vocabulary_file(tmp_path / "terms.db", vocab)
    found_far = wanted_far = 0
    try:
        for _ in range(400):
            query = _edit(rng, rng.choice(vocab), rng.choice((1, 1, 2)))
            budget = typo_budget(query)
            truth = {
                t for t in vocab
                if t != query and abs(len(t) - len(query)) <= budget and OSA.distance(query, t) <= budget
            }  # fmt: skip
            got = set(typo_candidates(conn, query, ["w"], limit=10_000))
            assert got <= truth
            near = {t for t in truth if OSA.distance(query, t) <= 1}
            assert near <= got, (query, near - got)  # every one-edit term, whatever the budget
            found_far += len(got & (truth - near))
            wanted_far += len(truth - near)
    finally:
        conn.close()
    assert wanted_far > 20
    if compared_max is None:
        assert found_far == wanted_far
    assert found_far / wanted_far >= 0.8, (found_far, wanted_far)


def test_terms_of_a_length_read_once_give_the_same_typo_candidates(tmp_path: Path) -> None:
    # The engine keeps the vocabulary's terms of each length it read on the same data: a later
    # word of a near length reads only the lengths not kept yet, and finds the same candidates.
    rng = random.Random(9)
    vocab = sorted({_random_word(rng) for _ in range(3000)})
    conn = _vocabulary_file(tmp_path / "terms.db", vocab)
    reads: list[str] = []
    conn.set_trace_callback(lambda sql: reads.append(sql) if "len = ?" in sql else None)
    lengths: Bounded[list[str]] = Bounded(LENGTHS_KEPT)
    try:
        for _ in range(150):
            query = _edit(rng, rng.choice(vocab), rng.choice((1, 2)))
            alone = candidates.expansions(conn, query, ["w"])
            before = len(reads)
            kept = candidates.expansions(conn, query, ["w"], lengths=lengths)
            assert kept == alone, query
            if fuzzy_budget(query) == 2:
                assert len(reads) - before <= 5  # at most the window's lengths, fewer once kept
        reads.clear()
        word = next(t for t in vocab if fuzzy_budget(t) == 2)
        candidates.expansions(conn, word, ["w"], lengths=lengths)
        candidates.expansions(conn, word + "x", ["w"], lengths=lengths)
    finally:
        conn.close()
    assert len(reads) <= 6  # the second word's window shares four of its five lengths
    assert lengths.get(("w", len(word))) is not None


def _mixed_word(rng: random.Random) -> str:
    runs = [_random_word(rng)[: rng.randint(2, 5)], str(rng.randint(0, 99))]
    if rng.random() < 0.5:
        runs.append(_random_word(rng)[: rng.randint(1, 4)])
    if rng.random() < 0.3:
        runs.append(str(rng.randint(0, 9)))
    return "".join(runs)


def test_typo_candidates_of_a_word_with_digits_are_every_term_the_digit_rule_allows(tmp_path: Path) -> None:
    # A word with digits compares only the terms holding its digit runs in order (GLOB), then the
    # digit rule (equal digit skeletons, edits in the letters): nothing the rule allows is missed.
    rng = random.Random(9)
    vocab = sorted({_mixed_word(rng) for _ in range(3000)} | {_random_word(rng) for _ in range(1000)})
    conn = _vocabulary_file(tmp_path / "mixed.db", vocab)
    mixed = [t for t in vocab if any(c.isdigit() for c in t)]
    try:
        for _ in range(300):
            term = rng.choice(mixed)
            letters = [i for i, c in enumerate(term) if c.isalpha()]
            i = rng.choice(letters)
            query = term[:i] + rng.choice("abcdefghijklmnoprstuy") + term[i + 1 :]
            if rng.random() < 0.5 and len(letters) > 1:
                query = query[:i] + query[i + 1 :] if query[i].isalpha() else query
            budget = fuzzy_budget(query)  # the letters' budget
            truth = {t for t in vocab if t != query and budget and typo_match(query, t, budget) is not None}
            assert set(typo_candidates(conn, query, ["w"], limit=10_000)) == truth, query
    finally:
        conn.close()


def test_no_typo_candidates_for_short_words_or_numbers(db: Path) -> None:
    conn = connect(db)
    try:
        assert typo_candidates(conn, "eu", ["ws-0"]) == []
        assert typo_candidates(conn, "9932", ["ws-0"]) == []
        assert "reports" in typo_candidates(conn, "reprots", ["ws-0"])
    finally:
        conn.close()


# -- cursors, timeouts, files, configuration -------------------------------------------------------


def test_a_signed_cursor_with_a_bad_offset_is_invalid(db: Path) -> None:
    key = b"k" * 32
    with SQLiteProvider(Scope.workspace("ws-0"), db, cursor_key=key) as provider:
        request = SessionQueryRequest(query="report", limit=2)
        first = provider.search(request)
        assert first.next_cursor is not None
        second = provider.search(request.model_copy(update={"cursor": first.next_cursor}))
        assert [m.seq for m in second.matches] != [m.seq for m in first.matches]
        plan, sid = plan_request(request, provider.scope, 50)
        fingerprint = request_fingerprint(
            provider.scope.fingerprint(), sid, plan.words, plan.kinds, request.limit, excerpt_budget(request)
        )
        for after in (["x"], [-1], [1, 2], [1.5]):
            forged = encode_cursor(key, fingerprint, 0, after, False)
            with pytest.raises(SessionQueryError) as err:
                provider.search(request.model_copy(update={"cursor": forged}))
            assert err.value.code == "SESSION_QUERY_INVALID_CURSOR"


def test_a_search_past_its_deadline_is_index_failed(db: Path) -> None:
    with SQLiteProvider(Scope.workspace("ws-0"), db, request_timeout_s=1e-9) as provider:
        with pytest.raises(SessionQueryError) as err:
            provider.search(SessionQueryRequest(query="reprot budget"))
        assert err.value.code == "SESSION_QUERY_INDEX_FAILED" and err.value.retriable
        assert "longer than" in err.value.message


def test_missing_file_or_tables_are_an_empty_history(tmp_path: Path) -> None:
    with SQLiteProvider(Scope.workspace("ws-0"), tmp_path / "absent.db") as provider:
        result = provider.search(SessionQueryRequest(query="x y"))
        assert result.matches == () and result.searched == 0
    assert not (tmp_path / "absent.db").exists()
    with SQLiteEntryLog(tmp_path / "log-only.db") as log:
        log.end_offset()
    with SQLiteProvider(Scope.workspace("ws-0"), tmp_path / "log-only.db") as provider:
        result = provider.search(SessionQueryRequest(query="x y"))
        assert result.matches == () and result.searched == 0


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"scope": "ws-0"}, "SESSION_QUERY_INVALID_SCOPE"),
        ({"default_limit": 0}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"default_limit": 20, "max_limit": 10}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"max_limit": 20_000}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"request_timeout_s": 0}, "SESSION_QUERY_INVALID_CONFIG"),
        ({"path": ""}, "SESSION_QUERY_INVALID_CONFIG"),
    ],
)
def test_configuration_errors(tmp_path: Path, kwargs: dict[str, Any], code: str) -> None:
    args: dict[str, Any] = {"scope": Scope.workspace("w"), "path": tmp_path / "x.db", **kwargs}
    with pytest.raises(SessionQueryError) as err:
        SQLiteProvider(args.pop("scope"), args.pop("path"), **args)
    assert err.value.code == code


def test_threads_share_one_provider(provider: SQLiteProvider) -> None:
    expected = provider.search(SessionQueryRequest(query="reprot budget", limit=10))
    results: list[Any] = []

    def work() -> None:
        for _ in range(10):
            results.append(provider.search(SessionQueryRequest(query="reprot budget", limit=10)))

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 60 and all(r == expected for r in results)


# -- catch-up --------------------------------------------------------------------------------------


def test_the_embedded_backend_catches_up_before_each_search(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "live.db")
    event = {
        "v": 1,
        "kind": "event",
        "workspace_id": "w",
        "session_id": "live-1",
        "seq": 0,
        "type": "user/message",
        "surface": {"op": "append"},
        "time": T0.isoformat(),
        "text": "fresh words",
    }
    with backend.open_provider(Scope.session("live-1")) as provider:
        assert provider.search(SessionQueryRequest(query="fresh")).searched == 0
        assert not (tmp_path / "live.db").exists()
        with backend.open_log() as log:
            log.append(event)
        assert [m.seq for m in provider.search(SessionQueryRequest(query="fresh")).matches] == [0]
        with backend.open_log() as log:
            log.append({**event, "seq": 1, "text": "more fresh words"})
        assert sorted(m.seq for m in provider.search(SessionQueryRequest(query="fresh")).matches) == [0, 1]


def test_a_failing_catch_up_is_index_failed(db: Path) -> None:
    def broken() -> None:
        raise RuntimeError("disk on fire")

    with SQLiteProvider(Scope.workspace("ws-0"), db, catch_up=broken) as provider:
        with pytest.raises(SessionQueryError) as err:
            provider.search(SessionQueryRequest(query="report"))
        assert err.value.code == "SESSION_QUERY_INDEX_FAILED" and "disk on fire" in err.value.message
