"""The relevance contract on every backend: words with digits, CJK text, identifier and version
prefixes, word prefixes over typo neighbours, the order inside a tier, the readings of an
ambiguous typo, a substring as one more reading, and tenant isolation of typo candidates."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from backscroll.query import Scope, SessionQueryRequest

from .conftest import _PARAMS, Harness, make_harness

BASE = datetime(2026, 11, 20, tzinfo=UTC)
WS = "rel-a"
MAIN = "rel-main"  # the matching examples
ORDER = "rel-order"  # the order inside a tier
TIERS = "rel-tiers"  # the tiers
READINGS = "rel-readings"  # an ambiguous typo
SUBSTR = "rel-substr"  # a fragment inside an identifier, among many typo neighbours
CLOSEST = "rel-closest"  # a short typo with more readings than a page holds
CROWD = "rel-crowd"  # one reading with more entries than the window of readings
CJK_FILLER = "天地玄黄宇宙洪荒日月盈昃辰宿列张寒来暑往秋收冬藏" * 8

MAIN_TEXTS = [
    "installed python3 and set the quixotic25 flag",  # 0
    "the account acct_9931 was charged twice",  # 1
    "the service listens on ipv6 only",  # 2
    "我们的数据库迁移完成了",  # 3
    "全文検索エンジンを使う",  # 4
    "call get_type() then ZSTD_getFrameContentSize on types.Mapping",  # 5
    "upgraded libfoo to 2.2.1-3 and libbar to 9.0.1~rc2",  # 6
    "the backstage crew arrived",  # 7
    "he backs the plan",  # 8: a one-edit neighbour of the fragment "backst"
    "a backst token, spelled like the fragment",  # 9
    "dessert was crème00brûlée again",  # 10
    "pyhton3 typed wrong on purpose",  # 11
    "pinned libbaz to 2.2.10 instead",  # 12
    f"{CJK_FILLER}数据库{CJK_FILLER}",  # 13
    "한국어 텍스트 검색 엔진",  # 14
]
ORDER_TEXTS = [
    # (text, kind) in seq order
    ("zephyr zephyr seen twice in this older and rather longer entry about the winds", "user/message"),  # 0
    ("zephyr once", "user/message"),  # 1
    ("quokka in a message", "user/message"),  # 2
    ("quokka", "tool/call"),  # 3
    ("narwhal first", "user/message"),  # 4
    ("narwhal second", "assistant/message"),  # 5
    ("ocelot", "user/message"),  # 6
    ("a much longer entry that mentions the ocelot only once among many other words", "user/message"),  # 7
]
TIER_TEXTS = [
    "Résumé sent",  # 0 exact
    "resume sent",  # 1 folded
    "resumed later",  # 2 prefix (the query's last word)
    "rezume typo",  # 3 fuzzy (one edit)
    "preresumex glued",  # 4 substring: the one-edit tier
    "rzume two edits",  # 5 fuzzy (two edits)
]

# "planqs" is one edit from planes, planks and plans; plans is by far the most frequent and newest.
READING_TEXTS = [
    "the planes landed",  # 0
    "planks on the deck",  # 1
    *(f"plans for day {n}" for n in range(12)),  # 2..13
    "account acct_9932 closed",  # 14
]

# "lback" inside callback (the oldest entry), and three one-edit neighbours (back, black, lack) with
# twelve newer entries each: more than a page.
SUBSTR_TEXTS = [
    "register the on_callback hook",  # 0: substring
    "an lbäck spelled with an umlaut",  # 1: folded
    "the lbacks are here",  # 2: prefix
    "lback itself",  # 3: exact
    "balance and totals",  # 4: every 3-gram of "bals", but not "bals" inside one word
    *(f"{word} {n}" for n in range(12) for word in ("back", "black", "lack")),  # 5..40
]

# "zorb": "zoreb" keeps every typed letter (the oldest entry), "zor" drops one, the rest change one.
CLOSEST_TEXTS = [
    "zoreb dances",  # 0
    *(f"{word} {n}" for n in range(2) for word in ("zarb", "zerb", "zurb", "zorp", "zor")),  # 1..10
]

# "qorx": "qoryx" (the oldest entry) and "qarx" are readings, and 310 newer "qorz" entries fill
# the 300-entry window of readings on their own.
CROWD_TEXTS = ["the qoryx valve", "a qarx", *(f"qorz reading {n}" for n in range(310))]


def _event(ws: str, sid: str, seq: int, text: str, kind: str = "user/message") -> dict[str, Any]:
    record: dict[str, Any] = {
        "v": 1,
        "kind": "event",
        "workspace_id": ws,
        "session_id": sid,
        "seq": seq,
        "type": kind,
        "time": (BASE + timedelta(minutes=seq)).isoformat(),
        "text": text,
    }
    if kind == "tool/call":
        record.update(role="assistant", tool_name="shell")
    else:
        record.update(surface={"op": "append"}, role=kind.split("/")[0])
    return record


def _header(ws: str, sid: str) -> dict[str, Any]:
    return {"v": 1, "kind": "header", "workspace_id": ws, "session_id": sid, "created_at": BASE.isoformat()}


def records() -> list[dict[str, Any]]:
    out = [_header(WS, sid) for sid in (MAIN, ORDER, TIERS, READINGS, SUBSTR, CLOSEST, CROWD)]
    out += [_event(WS, MAIN, seq, text) for seq, text in enumerate(MAIN_TEXTS)]
    out += [_event(WS, ORDER, seq, text, kind) for seq, (text, kind) in enumerate(ORDER_TEXTS)]
    out += [_event(WS, TIERS, seq, text) for seq, text in enumerate(TIER_TEXTS)]
    out += [_event(WS, READINGS, seq, text) for seq, text in enumerate(READING_TEXTS)]
    out += [_event(WS, SUBSTR, seq, text) for seq, text in enumerate(SUBSTR_TEXTS)]
    out += [_event(WS, CLOSEST, seq, text) for seq, text in enumerate(CLOSEST_TEXTS)]
    out += [_event(WS, CROWD, seq, text) for seq, text in enumerate(CROWD_TEXTS)]
    return out


@pytest.fixture(scope="module", params=_PARAMS)
def rel(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with make_harness(request.param, tmp_path_factory.mktemp(f"rel-{request.param}")) as made:
        made.append_all(records())
        stats = made.index()
        assert stats.dead_lettered == 0
        yield made


def _seqs(harness: Harness, sid: str, query: str, **kwargs: Any) -> list[int]:
    result = harness.provider(Scope.session(sid)).search(SessionQueryRequest(query=query, **kwargs))
    return [m.seq for m in result.matches if not result.partial]


# -- words with digits --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "seq"),
    [("pyhton3", 0), ("quiotic25", 0), ("crèe00brûlée", 10), ("cree00brulee", 10), ("PYTHON3", 0)],
)
def test_typos_in_the_letters_of_a_word_with_digits(rel: Harness, query: str, seq: int) -> None:
    assert seq in _seqs(rel, MAIN, query)


def test_exact_ranks_above_a_digit_word_typo(rel: Harness) -> None:
    assert _seqs(rel, MAIN, "pyhton3")[:2] == [11, 0]


@pytest.mark.parametrize(("query", "never"), [("acct_9932", 1), ("9932", 1), ("ipv4", 2), ("pythn4", 0)])
def test_digits_must_match_exactly(rel: Harness, query: str, never: int) -> None:
    assert never not in _seqs(rel, MAIN, query)


@pytest.mark.parametrize("query", ["acct_9931", "acct 9931", "9931"])
def test_an_account_number_never_finds_its_neighbour(rel: Harness, query: str) -> None:
    assert _seqs(rel, READINGS, query) == []
    assert _seqs(rel, READINGS, "acct_9932") == [14]


# -- CJK -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "seq"),
    [
        ("数据库", 3),
        ("数据", 3),
        ("迁移完成", 3),
        ("検索", 4),
        ("検", 4),
        ("エンジン", 4),
        ("텍스트", 14),
        ("검색", 14),
    ],
)
def test_cjk_words_inside_runs(rel: Harness, query: str, seq: int) -> None:
    assert seq in _seqs(rel, MAIN, query)


def test_cjk_word_not_in_the_text_is_not_found(rel: Harness) -> None:
    assert 3 not in _seqs(rel, MAIN, "数据表")
    assert 4 not in _seqs(rel, MAIN, "検査")


def test_cjk_excerpt_is_centred_on_the_match_without_splitting_characters(rel: Harness) -> None:
    result = rel.provider(Scope.session(MAIN)).search(SessionQueryRequest(query="数据库", excerpt_bytes=60))
    (match,) = [m for m in result.matches if m.seq == 13]
    raw = match.excerpt.encode("utf-8")
    assert len(raw) <= 60 and raw.decode("utf-8") == match.excerpt
    assert "数据库" in match.excerpt and match.excerpt.startswith("…") and match.excerpt.endswith("…")
    two = rel.provider(Scope.session(MAIN)).search(SessionQueryRequest(query="据库", excerpt_bytes=60))
    (match,) = [m for m in two.matches if m.seq == 13]
    assert "据库" in match.excerpt and len(match.excerpt.encode("utf-8")) <= 60


# -- identifiers, versions and prefixes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "seq"),
    [("get_t", 5), ("ZSTD_g", 5), ("types.M", 5), ("zstd_getframe", 5), ("2.2.1", 6), ("9.0.1", 6)],
)
def test_identifier_and_version_fragments_find_their_identifier(rel: Harness, query: str, seq: int) -> None:
    assert _seqs(rel, MAIN, query)[:1] == [seq]


def test_a_version_prefix_ranks_its_versions_above_longer_numbers(rel: Harness) -> None:
    # 2.2.1-3 goes on after the version; 2.2.10 is another number that starts the same way.
    assert _seqs(rel, MAIN, "2.2.1")[:2] == [6, 12]
    assert _seqs(rel, MAIN, "2.2.10") == [12]
    assert _seqs(rel, MAIN, "acct_99") == [1]  # an id typed in part


def test_a_word_prefix_ranks_above_a_typo_neighbour_and_exact_above_both(rel: Harness) -> None:
    assert _seqs(rel, MAIN, "backst")[:3] == [9, 7, 8]


def _score(harness: Harness, sid: str, query: str, seq: int) -> float:
    result = harness.provider(Scope.session(sid)).search(SessionQueryRequest(query=query))
    (match,) = [m for m in result.matches if m.seq == seq]
    return float(match.score)


def test_only_the_last_word_is_a_prefix(rel: Harness) -> None:
    # "backst" inside "backstage": a prefix as the last word, a substring elsewhere.
    assert _score(rel, MAIN, "crew backst", 7) > _score(rel, MAIN, "backst crew", 7)


# -- tiers, then occurrences, then field, then recency -------------------------------------------------


def test_tiers_order_exact_folded_prefix_then_one_edit_or_substring_then_two_edits(rel: Harness) -> None:
    # A substring shares the one-edit tier (each is one more reading, the newest first).
    assert _seqs(rel, TIERS, "Résumé") == [0, 1, 2, 4, 3, 5]


def test_more_occurrences_first_not_shorter_entries(rel: Harness) -> None:
    assert _seqs(rel, ORDER, "zephyr") == [0, 1]


def test_message_text_over_tool_arguments(rel: Harness) -> None:
    assert _seqs(rel, ORDER, "quokka") == [2, 3]


def test_recency_breaks_the_remaining_ties(rel: Harness) -> None:
    assert _seqs(rel, ORDER, "narwhal") == [5, 4]


def test_entry_length_does_not_decide(rel: Harness) -> None:
    assert _seqs(rel, ORDER, "ocelot") == [7, 6]


# -- the readings of an ambiguous typo: each one's best entry before a second of any ---------------------

PLANS = list(range(13, 1, -1))  # newest first


def test_every_reading_of_a_typo_shows_before_a_second_entry_of_any(rel: Harness) -> None:
    # The order inside a tier alone would give the twelve plans first; planes is the oldest entry of the tier.
    assert _seqs(rel, READINGS, "planqs", limit=3) == [13, 1, 0]
    assert _seqs(rel, READINGS, "planqs", limit=20) == [13, 1, 0, *PLANS[1:]]


def test_readings_never_cross_a_tier(rel: Harness) -> None:
    # "plans" itself: every exact match first (by recency), then its one-edit neighbours.
    assert _seqs(rel, READINGS, "plans", limit=20) == [*PLANS, 1, 0]


def test_readings_page_by_cursor_without_repeats_or_gaps(rel: Harness) -> None:
    provider = rel.provider(Scope.session(READINGS))
    pages: list[list[int]] = []
    cursor: str | None = None
    while True:
        result = provider.search(SessionQueryRequest(query="planqs", limit=4, cursor=cursor))
        pages.append([m.seq for m in result.matches])
        cursor = result.next_cursor
        if cursor is None:
            break
    assert pages[0] == [13, 1, 0, 12]
    assert [seq for page in pages for seq in page] == [13, 1, 0, *PLANS[1:]]


# -- a substring is one more reading of the word ---------------------------------------------------------

NEIGHBOURS = list(range(40, 4, -1))  # back, black and lack entries, newest first


def _in(harness: Harness, scope: Scope, query: str, **kwargs: Any) -> list[tuple[str, int]]:
    result = harness.provider(scope).search(SessionQueryRequest(query=query, **kwargs))
    return [(m.session_id, m.seq) for m in result.matches if not result.partial]


# The session is small enough to be scored entry by entry; the workspace takes the index path.
BOTH_PATHS = [pytest.param(Scope.session(SUBSTR), id="session"), pytest.param(Scope.workspace(WS), id="ws")]


@pytest.mark.parametrize("scope", BOTH_PATHS)
def test_a_substring_shows_on_the_first_page_among_many_typo_neighbours(rel: Harness, scope: Scope) -> None:
    # Exact, folded and prefix first; then the best entry of each reading before a second entry of
    # any, the closest spelling first: "lback" inside callback (no edit), then lack and back (four
    # of five letters kept, the newest first), then black (a swap).
    expected = [3, 1, 2, 0, 40, 38, 39, 37, 35, 36]
    assert _in(rel, scope, "lback") == [(SUBSTR, seq) for seq in expected]


def test_a_substring_ranks_as_a_one_edit_typo(rel: Harness) -> None:
    assert _score(rel, SUBSTR, "lback", 0) == pytest.approx(_score(rel, SUBSTR, "lback", 40), abs=0.01)


@pytest.mark.parametrize("scope", BOTH_PATHS)
def test_three_grams_apart_are_not_a_substring(rel: Harness, scope: Scope) -> None:
    # OpenSearch's index path looks for the 3-grams anywhere in the entry; the text decides.
    assert (SUBSTR, 4) not in _in(rel, scope, "bals", limit=50)
    assert _in(rel, scope, "lanc") == [(SUBSTR, 4)]  # inside "balance"


def _every_page(harness: Harness, scope: Scope, query: str, limit: int) -> list[int]:
    """The seqs of every page of ``query``, following the cursor to the end."""
    provider = harness.provider(scope)
    seqs: list[int] = []
    cursor: str | None = None
    while True:
        result = provider.search(SessionQueryRequest(query=query, limit=limit, cursor=cursor))
        seqs += [m.seq for m in result.matches]
        cursor = result.next_cursor
        if cursor is None:
            return seqs


def test_substring_readings_page_by_cursor_without_repeats_or_gaps(rel: Harness) -> None:
    seqs = _every_page(rel, Scope.session(SUBSTR), "lback", 7)
    assert seqs[:7] == [3, 1, 2, 0, 40, 38, 39]
    assert sorted(seqs) == [0, 1, 2, 3, *sorted(NEIGHBOURS)]


@pytest.mark.parametrize(
    "scope", [pytest.param(Scope.session(CLOSEST), id="session"), pytest.param(Scope.workspace(WS), id="ws")]
)
def test_the_closest_readings_of_a_short_typo_come_first(rel: Harness, scope: Scope) -> None:
    # The order inside a tier alone would start with the newest entries; zoreb, the closest
    # spelling, is the oldest.
    assert _in(rel, scope, "zorb", limit=3) == [(CLOSEST, 0), (CLOSEST, 10), (CLOSEST, 9)]
    # Then the other readings by recency (all three change one letter), then the second entries.
    rest = [8, 7, 6, 5, 4, 3, 2, 1]
    assert _in(rel, scope, "zorb", limit=11) == [(CLOSEST, seq) for seq in [0, 10, 9, *rest]]


@pytest.mark.parametrize(
    "scope", [pytest.param(Scope.session(CROWD), id="session"), pytest.param(Scope.workspace(WS), id="ws")]
)
def test_a_reading_that_fills_the_window_does_not_hide_the_others(rel: Harness, scope: Scope) -> None:
    # The first 300 entries in the order inside a tier are all qorz; a second window without them holds the
    # other readings, and the closest (qoryx: every typed letter kept) comes first.
    assert _in(rel, scope, "qorx", limit=3) == [(CROWD, 0), (CROWD, 311), (CROWD, 1)]
    assert sorted(_every_page(rel, scope, "qorx", 50)) == list(range(312))  # each entry once


# -- tenant isolation of typo candidates ------------------------------------------------------------------


def _variants(word: str, count: int) -> list[str]:
    """Distinct one- and two-edit neighbours of ``word`` (substitutions, then insertions)."""
    out: dict[str, None] = {}
    letters = "abcdefghijklmnopqrstuvwxyz"
    for i in range(1, len(word)):
        for ch in letters:
            out.setdefault(word[:i] + ch + word[i + 1 :], None)
            out.setdefault(word[:i] + ch + word[i:], None)
    out.pop(word, None)
    out.pop("forecast", None)
    return list(out)[:count]


def _snapshot(harness: Harness, query: str) -> list[tuple[str, int, float]]:
    result = harness.provider(Scope.workspace("iso-a")).search(SessionQueryRequest(query=query, limit=50))
    return [(m.session_id, m.seq, m.score) for m in result.matches]


def test_another_workspace_full_of_near_variants_changes_nothing_here(harness: Harness) -> None:
    texts = ["the forecast for next quarter", "weather forecasts and forcasting", "an unrelated line"]
    harness.append_all(
        [_header("iso-a", "iso-a1"), *(_event("iso-a", "iso-a1", i, t) for i, t in enumerate(texts))]
    )
    harness.index()
    queries = ("forcast", "forecst", "forcasts", "forcast quarter", "orecas")
    before = {q: _snapshot(harness, q) for q in queries}
    assert 0 in [seq for _, seq, _ in before["forcast"]]
    # More neighbours than the embedded backend used to keep per word from the whole file (64); fewer
    # than OpenSearch expands a typo to over its whole index (128): see docs/matching.md.
    variants = _variants("forcast", 100)
    lines = [" ".join(variants[i : i + 20]) for i in range(0, len(variants), 20)]
    harness.append_all(
        [_header("iso-b", "iso-b1"), *(_event("iso-b", "iso-b1", i, t) for i, t in enumerate(lines))]
    )
    harness.index()
    assert {q: _snapshot(harness, q) for q in queries} == before
