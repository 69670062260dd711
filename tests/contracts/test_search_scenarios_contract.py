"""Search scenarios on every backend, each on a session of its own: matching, ranking, excerpts,
kinds, scope, folding, typos, query validation, limits and cursors.

Where the reference implementations (Go and TypeScript) differ, these tests pin backscroll's choice:

* the Go "message" kind is our message-bearing event types (``user/message``, ``assistant/message``,
  ``tool/call``, ``tool/result``); the Go compaction kind is ``compaction/summary``, goal is
  ``goal/set`` and model_change is ``model/change``;
* ``tool(args)`` is :meth:`SessionQueryTool.run` on a provider scoped to the run's session;
* scores are not Go's: only the order is pinned;
* the TypeScript tool layer's authorisation checks become scope pinning and self-exclusion (the
  search never finds its own calls);
* query validation differs from TypeScript's where Go's order decides: an empty or syntax-only
  query browses.

Every case gets its own session id in one module-wide pipeline per backend, except those that need
a pipeline of their own (one 50,000-character word, cursors that append). The provider's outages
are ``tests/integration/test_provider_outages.py``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from backscroll.query import (
    Scope,
    SessionQueryError,
    SessionQueryRequest,
    SessionQueryResult,
    SessionQueryTool,
    ToolError,
    session_query_tool,
)

from .conftest import _PARAMS, Harness, make_harness

WS_A = "ws-a"
WS_B = "ws-b"
WS_58 = "ws-58"
_BASE = datetime(2026, 11, 1, tzinfo=UTC)
_SURFACE = {"user/message", "assistant/message", "tool/result"}
_ROLES = {
    "user/message": "user",
    "assistant/message": "assistant",
    "tool/call": "tool",
    "tool/result": "tool",
}

HEADER = re.compile(r"^(\d+) match(?:es)? \(searched (\d+) entries\):$")
MATCH_LINE = re.compile(
    r"^\[seq (\d+)(?:, turn \d+)?, ([a-z/]+)\] score \d+\.\d · \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"
)
NO_HISTORY = "No searchable history yet in this session."


class Log:
    """Builds wire records; seqs are contiguous per session from 0, times a minute apart."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self._next: dict[str, int] = {}
        self.workspace: dict[str, str] = {}

    def session(self, session_id: str, workspace_id: str = WS_A) -> str:
        self._next[session_id] = 0
        self.workspace[session_id] = workspace_id
        self.records.append(
            {
                "v": 1,
                "kind": "header",
                "workspace_id": workspace_id,
                "session_id": session_id,
                "created_at": _BASE.isoformat(),
            }
        )
        return session_id

    def add(
        self,
        session_id: str,
        type_: str,
        text: str | None = None,
        *,
        time: datetime | None = None,
        **extra: Any,
    ) -> int:
        seq = self._next[session_id]
        self._next[session_id] = seq + 1
        record: dict[str, Any] = {
            "v": 1,
            "kind": "event",
            "workspace_id": self.workspace[session_id],
            "session_id": session_id,
            "seq": seq,
            "type": type_,
            "time": (time or _BASE + timedelta(minutes=seq)).isoformat(),
            "turn": seq // 4,
        }
        if text is not None:
            record["text"] = text
        if type_ in _ROLES:
            record["role"] = _ROLES[type_]
        if type_ in _SURFACE:
            record["surface"] = {"op": "append"}
        record.update(extra)
        self.records.append(record)
        return seq

    def msg(self, session_id: str, text: str | None, role: str = "assistant", **extra: Any) -> int:
        return self.add(session_id, f"{role}/message", text, **extra)


def _build() -> Log:
    log = Log()
    s = log.session
    log.session("sc01")
    for text in ("revenue was flat", "churn was up", "revenue and churn both moved"):
        log.msg("sc01", text)
    s("sc02")
    log.msg("sc02", "alpha alpha alpha beta")
    log.msg("sc02", "alpha beta")
    s("sc03")
    for seq in range(6):
        if seq in (2, 5):
            # seq 2 has the *later* created_at: recency is seq, not time.
            later = _BASE + timedelta(hours=5 if seq == 2 else 1)
            log.msg("sc03", "deploy ok", time=later)
        else:
            log.msg("sc03", "unrelated filler line")
    s("sc04")
    for _ in range(25):
        log.msg("sc04", "ping")
    s("sc05")
    for _ in range(100):
        log.msg("sc05", "match me")
    s("sc06")
    log.msg("sc06", "Doanh thu tăng")
    s("sc07")
    for text in ("revenue grew", "braided cable", "closed acct_9931 today"):
        log.msg("sc07", text)
    s("sc08")
    for text in ("first note", "second note", "third note"):
        log.msg("sc08", text)
    log.msg("sc08", None)  # an assistant message that only made tool calls: nothing to search
    log.add("sc08", "model/change", "switched model to large")
    log.add("sc08", "model/change", "switched model to small")
    s("sc09")
    log.add("sc09", "model/change", "switched model to large")
    log.add("sc09", "turn/start")
    s("sc09e")  # header only
    s("sc10")
    log.msg("sc10", "needle " + "xxxxxxxxx " * 5_000)  # 50,000 more characters, in words
    s("sc11")
    log.msg("sc11", "ắ" * 2_000)
    s("sc12")
    log.msg("sc12", "Doanh Thu THÁNG Bảy")
    s("sc13")
    log.msg("sc13", "a" * 5_000 + " NEEDLE " + "b" * 5_000)
    s("sc14")
    for letter in "abcdefghijklmnopqrst":
        log.msg("sc14", f"entry {letter}")
    s("sc16")
    log.msg("sc16", "the model answer")
    log.add("sc16", "model/change", "model")
    log.add("sc16", "compaction/summary", "model summary")
    s("sc16s")  # every surface state is searchable
    log.msg("sc16s", "original wording about the zeppelin", role="user")
    log.msg("sc16s", "condensed", surface={"op": "replace", "start": 0, "end": 0}, sources=[0])
    s("sc18")
    log.add("sc18", "goal/set", "ship the report")
    log.add("sc18", "compaction/summary", "report shipped")
    s("sc20a")
    log.msg("sc20a", "my secret figure is 42")
    s("sc20b")
    log.msg("sc20b", "their secret figure is 99")
    s("sc24x", WS_B)
    log.msg("sc24x", "foreign secret figure is 77")
    s("sc27")
    log.msg("sc27", "Doanh thu tháng Bảy tăng 12%.")
    s("sc28")
    log.msg("sc28", "Đơn hàng")
    log.msg("sc28", "don hang")
    s("sc29")
    log.msg("sc29", "revenue forecast")
    s("sc30")
    log.msg("sc30", "long long long—café,\nnext value", role="user")
    s("sc56")
    for text in (
        'they say "needle" loudly',
        "needle in a haystack",
        "needle OR absent literally",
        "absent friends",
    ):
        log.msg("sc56", text)
    for sid, text in (
        ("sc58a", "😀😀 alpha beta BRAID 😀😀"),
        ("sc58b", "alpha beta"),
        ("sc58c", "alpha middle beta"),
        ("sc58d", "alpha beta"),
    ):
        s(sid, WS_58)
        log.msg(sid, text, time=_BASE)
    s("sc58p")
    for text in (
        "alpha middle beta",
        "beta then alpha",
        "alpha beta",
        "ALPHA BETA 😀 braid",
        "alpha and beta",
    ):
        log.msg("sc58p", text)
    s("sc58t")
    for text in ("the cafe", "the café", "the cafx", "the cafeteria"):
        log.msg("sc58t", text)
    s("sc58f")
    log.msg("sc58f", "please rotate credentials now")
    log.add("sc58f", "tool/call", '{"cmd": "rotate credentials now"}', tool_name="shell")
    return log


LOG = _build()


@pytest.fixture(scope="module", params=_PARAMS)
def scenarios(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """A pipeline holding :data:`LOG`, appended and indexed (shared by this module's tests)."""
    with make_harness(request.param, tmp_path_factory.mktemp(f"scenarios-{request.param}")) as made:
        made.append_all(LOG.records)
        stats = made.index()
        assert stats.dead_lettered == 0, dict(stats.reasons)
        yield made


def search(pipe: Harness, session_id: str, query: str = "", **kwargs: Any) -> SessionQueryResult:
    """``search(s, q)``: a provider scoped to the session, as an agent would build it."""
    result: SessionQueryResult = pipe.provider(Scope.session(session_id)).search(
        SessionQueryRequest(query=query, **kwargs)
    )
    return result


def tool(pipe: Harness, session_id: str, **kwargs: Any) -> SessionQueryTool:
    made = session_query_tool(pipe.provider(Scope.session(session_id)), **kwargs)
    assert made is not None
    return made


def seqs(result: SessionQueryResult) -> list[int]:
    return [m.seq for m in result.matches]


def rendered_seqs(text: str) -> list[int]:
    return [int(m.group(1)) for line in text.splitlines() if (m := MATCH_LINE.match(line))]


def code_of(call: Any) -> SessionQueryError:
    with pytest.raises(SessionQueryError) as caught:
        call()
    return caught.value


# -- ranking, scoring, limits ----------------------------------------------------------------------


def test_every_word_must_match(scenarios: Harness) -> None:
    result = search(scenarios, "sc01", "revenue churn")
    assert seqs(result) == [2]
    assert not result.partial
    assert result.searched == 3


def test_closest_matches_when_no_entry_has_every_word(scenarios: Harness) -> None:
    """Entries matching the most words, flagged partial and said so in the rendered output."""
    result = search(scenarios, "sc01", "revenue zebra")
    assert result.partial
    assert set(seqs(result)) == {0, 2}
    text = tool(scenarios, "sc01").run({"query": "revenue zebra"})
    assert text.startswith("No entry matched every word; 2 closest matches (searched 3 entries):")


def test_more_occurrences_rank_first(scenarios: Harness) -> None:
    result = search(scenarios, "sc02", "alpha beta")
    assert seqs(result) == [0, 1], "the Go order (seq 0's repeated word first), not its numbers"
    assert result.matches[0].score > result.matches[1].score


def test_ties_are_broken_by_seq_not_time(scenarios: Harness) -> None:
    result = search(scenarios, "sc03", "deploy")
    assert seqs(result) == [5, 2]
    assert result.matches[0].score == result.matches[1].score


def test_default_limit_is_ten_newest_first(scenarios: Harness) -> None:
    result = search(scenarios, "sc04", "ping")
    assert seqs(result) == list(range(24, 14, -1))
    assert len({m.score for m in result.matches}) == 1 and result.matches[0].score > 0
    assert result.searched == 25
    assert result.next_cursor is not None


def test_tool_clamps_to_max_and_non_positive_means_default(scenarios: Harness) -> None:
    run = tool(scenarios, "sc05").run
    text = run({"query": "match", "limit": 999})
    assert text.splitlines()[0] == "50 matches (searched 100 entries):"
    assert len(rendered_seqs(text)) == 50
    for limit in (0, -5):
        text = run({"query": "match", "limit": limit})
        assert text.splitlines()[0] == "10 matches (searched 100 entries):"
        assert rendered_seqs(text) == list(range(99, 89, -1))


def test_tool_with_a_lower_max_limit_returns_that_many(scenarios: Harness) -> None:
    provider = scenarios.provider(Scope.session("sc05"), max_limit=3, default_limit=3)
    text = SessionQueryTool(provider, max_limit=3, default_limit=3).run({"query": "match", "limit": 999})
    assert text.splitlines()[0] == "3 matches (searched 100 entries):"
    assert len(rendered_seqs(text)) == 3


def test_tool_honours_the_providers_max_limit(scenarios: Harness) -> None:
    """The operator lowered the maximum on the provider; the tool must clamp to it, not fail.

    Clamping to the tool's own default maximum (50) would send a limit the provider rejects with
    INVALID_LIMIT on every call, and the model could never search.
    """
    provider = scenarios.provider(Scope.session("sc05"), max_limit=3, default_limit=3)
    made = session_query_tool(provider)
    assert made is not None
    for args in ({"query": "match", "limit": 999}, {"query": "match"}, {}):
        text = made.run(args)
        assert text.splitlines()[0] == "3 matches (searched 100 entries):"


def test_duplicate_and_punctuated_words_count_once(scenarios: Harness) -> None:
    messy = search(scenarios, "sc06", "Doanh, thu! doanh THU?")
    clean = search(scenarios, "sc06", "doanh thu")
    assert seqs(messy) == [0]
    assert messy.matches[0].score == clean.matches[0].score
    # Joined by "-" the words are one identifier (docs/matching.md): still found, by its parts.
    assert seqs(search(scenarios, "sc06", "Doanh-thu")) == [0]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rev", [0]),  # 3+ characters match inside longer words
        ("REV", [0]),
        ("braid", [1]),
        ("9931", [2]),  # inside acct_9931
        ("ai", []),  # 1–2 characters match whole words only ("braided" is not found)
        ("ab", []),
    ],
)
def test_substrings_of_three_or_more_characters(scenarios: Harness, query: str, expected: list[int]) -> None:
    result = search(scenarios, "sc07", query)
    assert seqs(result) == expected
    assert result.searched == 3


def test_searched_counts_only_message_entries_with_text(scenarios: Harness) -> None:
    text = tool(scenarios, "sc08").run({"query": "zzz"})
    assert text == 'No entries matched "zzz" (searched 3 entries).'
    assert search(scenarios, "sc08", "zzz").searched == 3


@pytest.mark.parametrize("session_id", ["sc09", "sc09e", "sc-never-written"])
@pytest.mark.parametrize("args", ['{"query": "x"}', "{}", ""])
def test_nothing_searchable(scenarios: Harness, session_id: str, args: str) -> None:
    assert tool(scenarios, session_id).run(args) == NO_HISTORY


# -- excerpt caps ----------------------------------------------------------------------------------


def _assert_excerpt(excerpt: str, budget: int) -> None:
    raw = excerpt.encode("utf-8")  # a lone surrogate (split code point) would raise here
    assert len(raw) <= budget, (len(raw), budget)
    assert raw.decode("utf-8") == excerpt


def test_long_entry_default_and_explicit_cap(scenarios: Harness) -> None:
    for budget, kwargs in ((600, {}), (200, {"excerpt_bytes": 200})):
        (match,) = search(scenarios, "sc10", "needle", **kwargs).matches
        _assert_excerpt(match.excerpt, budget)
        assert match.excerpt.startswith("needle xxxxxxxxx"), "match at the start: no leading ellipsis"
        assert match.excerpt.endswith("…")
        assert len(match.excerpt.encode()) > budget - 16, "the budget is used, not wasted"


def test_one_50000_character_word_is_indexed_and_found(harness: Harness) -> None:
    """The reference input: "needle " + 50,000 "x" — one word longer than Lucene's 32,766-byte
    term limit. It must be indexed (not dead-lettered as an immense term) and found."""
    log = Log()
    log.session("s1")
    log.msg("s1", "needle " + "x" * 50_000)
    harness.append_all(log.records)
    stats = harness.index()
    assert stats.dead_lettered == 0, dict(stats.reasons)
    for budget in (600, 200):
        (match,) = search(harness, "s1", "needle", excerpt_bytes=budget).matches
        _assert_excerpt(match.excerpt, budget)
        assert match.excerpt.startswith("needle x") and match.excerpt.endswith("…")


def test_never_splits_a_code_point(scenarios: Harness) -> None:
    (match,) = search(scenarios, "sc11", "", excerpt_bytes=100).matches
    _assert_excerpt(match.excerpt, 100)
    assert match.excerpt.endswith("…") and set(match.excerpt[:-1]) == {"ắ"}
    (found,) = search(scenarios, "sc11", "ắắắ", excerpt_bytes=100).matches
    _assert_excerpt(found.excerpt, 100)


@pytest.mark.parametrize("budget", [1, 2, 3, 7, 10, 16, 31])
def test_tiny_budgets_are_still_a_ceiling(scenarios: Harness, budget: int) -> None:
    """Never more than excerpt_bytes, however small (not raised to a minimum)."""
    for session_id, query in (("sc11", ""), ("sc13", "needle"), ("sc12", "thang")):
        (match,) = search(scenarios, session_id, query, excerpt_bytes=budget).matches
        _assert_excerpt(match.excerpt, budget)


@pytest.mark.parametrize("budget", [0, -1])
def test_non_positive_budget_means_default(scenarios: Harness, budget: int) -> None:
    (match,) = search(scenarios, "sc13", "needle", excerpt_bytes=budget).matches
    _assert_excerpt(match.excerpt, 600)
    assert len(match.excerpt.encode()) > 500


def test_short_text_is_verbatim(scenarios: Harness) -> None:
    (match,) = search(scenarios, "sc12", "thang").matches
    assert match.excerpt == "Doanh Thu THÁNG Bảy"


def test_excerpt_is_centred_on_the_match(scenarios: Harness) -> None:
    (match,) = search(scenarios, "sc13", "needle").matches
    _assert_excerpt(match.excerpt, 600)
    assert match.excerpt.startswith("…a") and match.excerpt.endswith("b…")
    assert " NEEDLE " in match.excerpt
    before, after = match.excerpt.split("NEEDLE")
    assert len(before) >= 100 and len(after) >= 100, "context on both sides"


# -- empty-query browse ----------------------------------------------------------------------------


def test_browse_newest_first_and_punctuation_is_browse(scenarios: Harness) -> None:
    result = search(scenarios, "sc14", "", limit=5)
    assert seqs(result) == [19, 18, 17, 16, 15]
    assert all(m.score == 0 for m in result.matches)
    assert [m.excerpt for m in result.matches] == [f"entry {c}" for c in "tsrqp"]
    punct = search(scenarios, "sc14", "?!")
    assert seqs(punct) == list(range(19, 9, -1))
    assert all(m.score == 0 for m in punct.matches)


@pytest.mark.parametrize("args", ["", "   ", "{}", None, {}, b"{}", '{"query": null}', '{"query": "  "}'])
def test_tool_argument_forms_that_browse(scenarios: Harness, args: Any) -> None:
    text = tool(scenarios, "sc14").run(args)
    assert text.splitlines()[0] == "10 matches (searched 20 entries):"
    assert rendered_seqs(text) == list(range(19, 9, -1))


@pytest.mark.parametrize("args", ["not json", '{"limit": "5"}', '{"limit": 2.5}', "[1, 2]", '{"query": 5}'])
def test_malformed_tool_arguments(scenarios: Harness, args: str) -> None:
    with pytest.raises(ToolError, match=r"^invalid arguments"):
        tool(scenarios, "sc14").run(args)


# -- kinds filter ----------------------------------------------------------------------------------


def test_default_kinds_are_message_bearing_events(scenarios: Harness) -> None:
    result = search(scenarios, "sc16", "model")
    assert [(m.seq, m.kind, m.role) for m in result.matches] == [(0, "assistant/message", "assistant")]
    assert result.searched == 1


def test_every_surface_state_is_searchable(scenarios: Harness) -> None:
    """A message replaced on the surface (shadowed) is still history worth finding."""
    assert seqs(search(scenarios, "sc16s", "zeppelin")) == [0]
    assert seqs(search(scenarios, "sc16s", "condensed")) == [1]


def test_explicit_kinds(scenarios: Harness) -> None:
    result = search(scenarios, "sc16", "model", kinds=("compaction/summary",))
    assert [(m.seq, m.kind, m.excerpt) for m in result.matches] == [
        (2, "compaction/summary", "model summary")
    ]
    assert result.searched == 1
    both = search(scenarios, "sc16", "model", kinds=("model/change", "assistant/message"))
    assert seqs(both) == [1, 0]


def test_each_entry_uses_its_own_text(scenarios: Harness) -> None:
    result = search(scenarios, "sc18", "report", kinds=("goal/set", "compaction/summary"))
    assert {(m.seq, m.kind, m.excerpt) for m in result.matches} == {
        (0, "goal/set", "ship the report"),
        (1, "compaction/summary", "report shipped"),
    }
    assert search(scenarios, "sc18", "report").searched == 0


def test_the_tool_cannot_reach_bookkeeping(scenarios: Harness) -> None:
    text = tool(scenarios, "sc16").run({"query": "summary", "kinds": ["compaction/summary"]})
    assert text == 'No entries matched "summary" (searched 1 entries).'


# -- scope pinning and gating ----------------------------------------------------------------------


def test_the_model_cannot_widen_scope(scenarios: Harness) -> None:
    args = {"query": "secret figure", "session_id": "sc20b"}
    text = tool(scenarios, "sc20a").run(args)
    assert "42" in text and "99" not in text
    # Pinned by the tool on a workspace provider: the same fence.
    pinned = SessionQueryTool(scenarios.provider(Scope.workspace(WS_A)), session_id="sc20a").run(args)
    assert "42" in pinned and "99" not in pinned
    assert rendered_seqs(pinned) == [0]


def test_the_provider_receives_the_pinned_request(scenarios: Harness) -> None:
    real = scenarios.provider(Scope.session("sc20a"))
    seen: list[SessionQueryRequest] = []

    class Spy:
        def search(self, request: SessionQueryRequest) -> SessionQueryResult:
            seen.append(request)
            result: SessionQueryResult = real.search(request)
            return result

    made = session_query_tool(Spy())
    assert made is not None
    made.run({"query": "x", "session_id": "s9", "kinds": ["goal/set"], "excerpt_bytes": 5})
    assert seen == [SessionQueryRequest(session_id=None, query="x", kinds=(), limit=10, excerpt_bytes=600)]


def test_declines_without_a_provider_and_installs_with_one(scenarios: Harness) -> None:
    assert session_query_tool(None) is None
    made = session_query_tool(scenarios.provider(Scope.session("sc20a")))
    assert made is not None and made.name == "session_query"


def test_self_gated_and_parallel_safe(scenarios: Harness) -> None:
    made = tool(scenarios, "sc20a")
    assert made.parallel_safe is True and made.self_gated is True
    assert made.mcp_tool()["annotations"]["readOnlyHint"] is True


def test_another_workspace_is_indistinguishable_from_missing(scenarios: Harness) -> None:
    provider = scenarios.provider(Scope.workspace(WS_A))
    foreign = code_of(lambda: provider.search(SessionQueryRequest(session_id="sc24x", query="secret")))
    missing = code_of(lambda: provider.search(SessionQueryRequest(session_id="sc24-none", query="secret")))
    assert foreign.code == missing.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert foreign.message.replace("sc24x", "X") == missing.message.replace("sc24-none", "X")
    browse = code_of(lambda: provider.search(SessionQueryRequest(session_id="sc24x")))
    assert browse.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    # Through the tool: the same refusal, and the same words, for both.
    errors = []
    for session_id in ("sc24x", "sc24-none"):
        with pytest.raises(ToolError) as caught:
            SessionQueryTool(provider, session_id=session_id).run({"query": "secret"})
        errors.append(str(caught.value).replace(session_id, "X"))
    assert errors[0] == errors[1] and "SESSION_QUERY_SESSION_NOT_FOUND" in errors[0]
    # And an unnarrowed workspace search never shows the other workspace's entry.
    result = provider.search(SessionQueryRequest(query="secret figure", limit=50))
    assert {m.session_id for m in result.matches} == {"sc20a", "sc20b"}


# -- accent, case and typo tolerance ---------------------------------------------------------------


@pytest.mark.parametrize(
    "query", ["doanh thu", "DOANH THU", "thang bay", "tháng bảy", "THÁNG BẢY", "tang 12"]
)
def test_accent_and_case_folding(scenarios: Harness, query: str) -> None:
    result = search(scenarios, "sc27", query)
    assert seqs(result) == [0] and not result.partial


def test_letters_without_a_decomposition_fold(scenarios: Harness) -> None:
    """Folding: "don hang" finds "Đơn hàng"; an exact accented match outranks a folded one."""
    assert seqs(search(scenarios, "sc28", "don hang")) == [1, 0]
    assert seqs(search(scenarios, "sc28", "đơn hàng")) == [0, 1]
    assert seqs(search(scenarios, "sc28", "ĐƠN")) == [0, 1]


@pytest.mark.parametrize("query", ["revnue", "reveneu", "forecats", "revenue forcast"])
def test_typos_are_tolerated_within_scope(scenarios: Harness, query: str) -> None:
    result = search(scenarios, "sc29", query)
    assert [(m.session_id, m.seq) for m in result.matches] == [("sc29", 0)]
    assert not result.partial


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("forcast", [0]),  # 7 characters, 1 edit
        ("forcst", [0]),  # 6 characters: 2 edits allowed
        ("rvnue", []),  # 5 characters: 1 edit allowed, "revenue" is 2 away
        ("frcst", []),  # 5 characters, 3 edits
        ("qxzvbn", []),
    ],
)
def test_typo_budget_follows_auto(scenarios: Harness, query: str, expected: list[int]) -> None:
    """AUTO: 0 edits up to 2 characters, 1 for 3–5, 2 from 6 (counted on the query word)."""
    assert seqs(search(scenarios, "sc29", query)) == expected


def test_fts_diacritics(scenarios: Harness) -> None:
    (match,) = search(scenarios, "sc30", "CAFE").matches
    assert match.excerpt == "long long long—café, next value", "whitespace runs collapse to one space"
    (small,) = search(scenarios, "sc30", "CAFE", excerpt_bytes=32).matches
    _assert_excerpt(small.excerpt, 32)
    assert small.excerpt.startswith("…")
    assert "café" in small.excerpt and "—" in small.excerpt and "\n" not in small.excerpt


# -- query validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\t\n", "*", "?!", '+-&&||!(){}[]^"~*?:\\/'])
def test_empty_blank_or_syntax_only_query_browses(scenarios: Harness, query: str) -> None:
    """Differs from TypeScript (INVALID_QUERY): as in Go, a query without words browses, newest first."""
    result = search(scenarios, "sc56", query)
    assert seqs(result) == [3, 2, 1, 0]
    assert all(m.score == 0 for m in result.matches) and not result.partial


@pytest.mark.parametrize("query", ["\x00", "needle\x00", "\x00 needle"])
def test_nul_is_an_invalid_query(scenarios: Harness, query: str) -> None:
    err = code_of(lambda: search(scenarios, "sc56", query))
    assert err.code == "SESSION_QUERY_INVALID_QUERY"
    with pytest.raises(ToolError, match=r"^invalid arguments"):
        tool(scenarios, "sc56").run({"query": query})


def test_syntax_is_data(scenarios: Harness) -> None:
    quoted = search(scenarios, "sc56", 'say "needle"')
    assert seqs(quoted) == [0] and not quoted.partial
    boolean = search(scenarios, "sc56", "needle OR absent")
    assert seqs(boolean) == [2] and not boolean.partial, "OR is a word, not an operator"
    for query in ("needle AND NOT absent", "needle^10", "needle~2", "text:needle", "needle*", "(needle)"):
        result = search(scenarios, "sc56", query)
        assert all(m.session_id == "sc56" for m in result.matches)


# -- limits and kinds ------------------------------------------------------------------------------


def test_the_api_rejects_limits_outside_one_to_max(scenarios: Harness) -> None:
    small = scenarios.provider(Scope.session("sc04"), max_limit=3, default_limit=3)
    for limit in (0, 4, -1):
        err = code_of(lambda limit=limit: small.search(SessionQueryRequest(query="ping", limit=limit)))
        assert err.code == "SESSION_QUERY_INVALID_LIMIT"
    assert len(small.search(SessionQueryRequest(query="ping", limit=3)).matches) == 3
    default = scenarios.provider(Scope.session("sc04"))
    err = code_of(lambda: default.search(SessionQueryRequest(query="ping", limit=51)))
    assert err.code == "SESSION_QUERY_INVALID_LIMIT"
    assert len(default.search(SessionQueryRequest(query="", limit=50)).matches) == 25
    raised = scenarios.provider(Scope.session("sc05"), max_limit=200)
    assert len(raised.search(SessionQueryRequest(query="match", limit=200)).matches) == 100


def test_invalid_provider_configuration(harness: Harness) -> None:
    for kwargs in ({"max_limit": 3}, {"max_limit": 0, "default_limit": 0}, {"request_timeout_s": 0}):
        err = code_of(lambda kwargs=kwargs: harness.provider(Scope.session("s1"), **kwargs))
        assert err.code == "SESSION_QUERY_INVALID_CONFIG"


@pytest.mark.parametrize(
    "kind", ["", "Future", "user message", "user/", "a/b/c/d/e", "*", "user/message\x00"]
)
def test_malformed_kinds_are_an_invalid_filter(scenarios: Harness, kind: str) -> None:
    err = code_of(lambda: search(scenarios, "sc16", "model", kinds=(kind,)))
    assert err.code == "SESSION_QUERY_INVALID_FILTER"


def test_a_well_formed_unknown_kind_finds_nothing(scenarios: Harness) -> None:
    """Event types are an open set on the wire: an unseen one is zero hits, not an error."""
    result = search(scenarios, "sc16", "model", kinds=("future/kind",))
    assert result.matches == () and result.searched == 0


# -- phrase and ranking ----------------------------------------------------------------------------


def test_phrase_matches_rank_above_scattered_words_across_sessions(scenarios: Harness) -> None:
    result = scenarios.provider(Scope.workspace(WS_58)).search(SessionQueryRequest(query="alpha beta"))
    ids = [m.session_id for m in result.matches]
    assert set(ids[:3]) == {"sc58a", "sc58b", "sc58d"}
    assert ids[3:] == ["sc58c"], "every word matches, but not as a phrase: ranked last, not absent"
    for match in result.matches:
        _assert_excerpt(match.excerpt, 600)


def test_phrase_first_within_a_session(scenarios: Harness) -> None:
    result = search(scenarios, "sc58p", "alpha beta")
    assert set(seqs(result)[:2]) == {2, 3}
    assert set(seqs(result)[2:]) == {0, 1, 4}


def test_ranking_tiers_exact_folded_prefix_fuzzy(scenarios: Harness) -> None:
    result = search(scenarios, "sc58t", "cafe")
    # cafe, café, then "cafeteria" (the last word as a prefix) above the typo "cafx".
    assert seqs(result) == [0, 1, 3, 2], "tiers beat recency"
    scores = [m.score for m in result.matches]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 4


def test_message_text_outranks_tool_arguments(scenarios: Harness) -> None:
    result = search(scenarios, "sc58f", "rotate credentials")
    assert [(m.seq, m.kind) for m in result.matches] == [(0, "assistant/message"), (1, "tool/call")]
    assert "rotate credentials" in result.matches[1].excerpt


# -- cursors ---------------------------------------------------------------------------------------


@pytest.fixture
def cursors(harness: Harness) -> tuple[Harness, Log]:
    log = Log()
    log.session("T", "w59")
    for text in ("needle one", "filler", "needle two", "needle three", "filler again"):
        log.msg("T", text)
    log.session("O", "w59")
    log.msg("O", "needle other")
    harness.append_all(log.records)
    harness.index()
    return harness, log


def _page_all(provider: Any, request: SessionQueryRequest) -> list[list[tuple[str, int]]]:
    pages: list[list[tuple[str, int]]] = []
    cursor: str | None = None
    for _ in range(20):
        result = provider.search(request.model_copy(update={"cursor": cursor}))
        pages.append([(m.session_id, m.seq) for m in result.matches])
        cursor = result.next_cursor
        if cursor is None:
            return pages
    raise AssertionError("paging did not end")


def test_paging_to_exhaustion(cursors: tuple[Harness, Log]) -> None:
    pipe, _ = cursors
    provider = pipe.provider(Scope.workspace("w59"))
    narrowed = _page_all(provider, SessionQueryRequest(session_id="T", query="needle", limit=1))
    assert narrowed == [[("T", 3)], [("T", 2)], [("T", 0)]]
    wide = [hit for page in _page_all(provider, SessionQueryRequest(query="needle", limit=1)) for hit in page]
    assert len(wide) == 4 and set(wide) == {("T", 0), ("T", 2), ("T", 3), ("O", 0)}
    pages = _page_all(provider, SessionQueryRequest(session_id="T", limit=2))
    browse = [hit for page in pages for hit in page]
    assert browse == [("T", s) for s in (4, 3, 2, 1, 0)]
    wide_browse = [hit for page in _page_all(provider, SessionQueryRequest(limit=2)) for hit in page]
    assert len(wide_browse) == 6 and len(set(wide_browse)) == 6
    closest = [
        hit
        for page in _page_all(provider, SessionQueryRequest(session_id="T", query="needle zebra", limit=1))
        for hit in page
    ]
    assert sorted(closest) == [("T", 0), ("T", 2), ("T", 3)]


def test_cursor_is_bound_to_the_request(cursors: tuple[Harness, Log]) -> None:
    pipe, _ = cursors
    provider = pipe.provider(Scope.workspace("w59"))
    request = SessionQueryRequest(session_id="T", query="needle", limit=1)
    cursor = provider.search(request).next_cursor
    assert cursor is not None
    mismatched = [
        request.model_copy(update={"query": "different"}),
        request.model_copy(update={"session_id": "O"}),
        request.model_copy(update={"session_id": None}),
        request.model_copy(update={"kinds": ("tool/result",)}),
    ]
    for other in mismatched:
        err = code_of(lambda other=other: provider.search(other.model_copy(update={"cursor": cursor})))
        assert err.code == "SESSION_QUERY_INVALID_CURSOR", other
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    for garbage in ("not-json", "", "====", tampered, "x" * 5000):
        err = code_of(lambda garbage=garbage: provider.search(request.model_copy(update={"cursor": garbage})))
        assert err.code == "SESSION_QUERY_INVALID_CURSOR", garbage
    # Another provider instance (another process) cannot read it unless they share the cursor key.
    stranger = pipe.provider(Scope.workspace("w59"))
    err = code_of(lambda: stranger.search(request.model_copy(update={"cursor": cursor})))
    assert err.code == "SESSION_QUERY_INVALID_CURSOR"
    key = b"k" * 32
    first, second = (pipe.provider(Scope.workspace("w59"), cursor_key=key) for _ in range(2))
    shared = first.search(request).next_cursor
    assert [m.seq for m in second.search(request.model_copy(update={"cursor": shared})).matches] == [2]


def _append(pipe: Harness, log: Log, session_id: str, workspace_id: str, text: str) -> None:
    """Index one more message (a new session if ``session_id`` is new)."""
    log.records.clear()
    if session_id not in log.workspace:
        log.session(session_id, workspace_id)
    log.msg(session_id, text, role="user")
    pipe.append_all(log.records)
    pipe.index()


def test_appending_to_the_scope_makes_its_cursor_stale(cursors: tuple[Harness, Log]) -> None:
    pipe, log = cursors
    provider = pipe.provider(Scope.workspace("w59"))
    narrowed = SessionQueryRequest(session_id="T", query="needle", limit=1)
    wide = SessionQueryRequest(query="needle", limit=1)
    browse = SessionQueryRequest(session_id="T", limit=1)
    issued = [(r, provider.search(r).next_cursor) for r in (narrowed, wide, browse)]
    _append(pipe, log, "T", "w59", "needle appended")
    for request, cursor in issued:
        assert cursor is not None
        err = code_of(lambda r=request, c=cursor: provider.search(r.model_copy(update={"cursor": c})))
        assert err.code == "SESSION_QUERY_STALE_CURSOR", request
    assert [m.seq for m in provider.search(narrowed).matches] == [5], "a fresh search sees the new entry"


def test_a_new_session_in_the_workspace_stales_only_the_workspace_cursor(
    cursors: tuple[Harness, Log],
) -> None:
    pipe, log = cursors
    provider = pipe.provider(Scope.workspace("w59"))
    narrowed = SessionQueryRequest(session_id="T", query="needle", limit=1)
    wide = SessionQueryRequest(query="needle", limit=1)
    narrowed_cursor = provider.search(narrowed).next_cursor
    wide_cursor = provider.search(wide).next_cursor
    _append(pipe, log, "U", "w59", "needle unrelated")
    err = code_of(lambda: provider.search(wide.model_copy(update={"cursor": wide_cursor})))
    assert err.code == "SESSION_QUERY_STALE_CURSOR"
    # T's own corpus did not change: its cursor is still valid and continues where it stopped.
    page = provider.search(narrowed.model_copy(update={"cursor": narrowed_cursor}))
    assert [m.seq for m in page.matches] == [2], "page 2 must not repeat page 1 (seq 3)"


@pytest.mark.parametrize("elsewhere", ["other-workspace", "other-session"])
def test_a_valid_cursor_never_repeats_or_skips(cursors: tuple[Harness, Log], elsewhere: str) -> None:
    """Writes outside a cursor's corpus leave it valid, so its pages must stay exact: no entry twice,
    none skipped, while other sessions keep being written between pages."""
    pipe, log = cursors
    scope = Scope.session("T") if elsewhere == "other-session" else Scope.workspace("w59")
    provider = pipe.provider(scope)
    request = SessionQueryRequest(query="needle", limit=1)
    seen: list[int] = []
    cursor: str | None = None
    for page in range(10):
        result = provider.search(request.model_copy(update={"cursor": cursor}))
        seen += [m.seq for m in result.matches if m.session_id == "T"]
        cursor = result.next_cursor
        if cursor is None:
            break
        workspace = "w-elsewhere" if elsewhere == "other-workspace" else "w59"
        _append(pipe, log, f"X{page}", workspace, "needle " * (page + 1) + "elsewhere")
    expected = [3, 2, 0]
    assert seen == expected, f"pages gave {seen}"
