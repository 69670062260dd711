"""The readings of an ambiguous typo in pure code: what a reading is, the order inside a tier, and
a reading found inside longer words (its tier, which readings are looked up, how their entries join
the window; the contract suites run the provider core's steps on every backend)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest

from backscroll.query import Scope
from backscroll.query.engine import EngineHit, EngineQuery
from backscroll.query.opensearch.provider import OpenSearchEngine
from backscroll.query.plan import QueryPlan
from backscroll.query.scoring import (
    TIER_EXACT,
    TIER_FUZZY,
    TIER_FUZZY2,
    TIER_INSIDE,
    reading_inside,
    score_text,
    text_reading,
    typo_reading,
)
from backscroll.query.typo_readings import (
    INSIDE_MAX,
    WINDOW,
    Known,
    add_inside,
    closeness,
    crowded,
    diversify,
    inside_needed,
    inside_readings,
    merge,
    read_as,
    tier_of,
    window_needed,
)


def _plan(*words: str) -> QueryPlan:
    return QueryPlan(
        filters=(),
        kinds=("user/message",),
        raw_words=words,
        words=words,
        phrase=" ".join(words),
        default_kinds=True,
    )


def _hit(seq: int, text: str, score: float) -> EngineHit:
    return EngineHit(
        session_id="s", entry_id=f"s:{seq}", seq=seq, kind="user/message", text=text, score=score
    )


def _scored(plan: QueryPlan, texts: dict[int, str]) -> list[EngineHit]:
    """Hits of ``plan`` in the tier's order (score, then the newest)."""
    hits = []
    for seq, text in texts.items():
        score = score_text(text, plan.raw_words, plan.words)
        assert score is not None
        hits.append(_hit(seq, text, score))
    return sorted(hits, key=lambda h: (-h.score, -h.seq))


def _hits(plan: QueryPlan, texts: list[str]) -> list[EngineHit]:
    """Hits in the tier's order (score, then the newest: the last text is the newest)."""
    return _scored(plan, dict(enumerate(texts)))


def test_a_reading_is_the_closest_term_of_each_typo_matched_word() -> None:
    assert typo_reading("the planes landed", ["planqs"], ["planqs"]) == ("planes",)
    assert typo_reading("plans and planes", ["planqs"], ["planqs"]) == ("planes",)  # a tie: alphabetical
    assert typo_reading("plans for the deck", ["deck", "planqs"], ["deck", "planqs"]) == ("", "plans")
    assert typo_reading("planqs itself", ["planqs"], ["planqs"]) == ("",)  # exact: no typo reading


def test_tier_of_drops_the_occurrence_and_field_bonuses_only() -> None:
    assert tier_of(2.0) == 2.0
    assert tier_of(2.011) == 2.0
    assert tier_of(1.5 + 0.321) == 1.5
    assert tier_of(9.9999999) == 10.0  # float32 sums


def test_each_reading_first_then_the_tiers_order_inside_a_tier() -> None:
    plan = _plan("planqs")
    hits = _hits(plan, ["the planes landed", "planks on deck", *(f"plans day {n}" for n in range(5))])
    assert [h.seq for h in hits] == [6, 5, 4, 3, 2, 1, 0]  # the tier's order alone: recency
    assert [h.seq for h in diversify(plan, hits)] == [6, 1, 0, 5, 4, 3, 2]


def test_tiers_are_never_crossed_and_exact_matches_keep_d2s_order() -> None:
    plan = _plan("plans")
    hits = _hits(plan, ["the planes landed", "planks on deck", "plans a", "plans b"])
    assert [h.seq for h in diversify(plan, hits)] == [3, 2, 1, 0]


def test_a_query_without_a_typo_tier_is_left_alone() -> None:
    plan = _plan("ab", "9931")
    hits = _hits(plan, ["ab 9931", "ab 9931 again"])
    assert diversify(plan, hits) == hits
    assert not window_needed(plan, hits, 2)


def test_a_full_page_that_ends_in_a_typo_tier_asks_for_the_window() -> None:
    plan = _plan("planqs")
    hits = _hits(plan, ["plans a", "plans b", "plans c"])
    assert window_needed(plan, hits, 3)
    assert not window_needed(plan, hits, 4)  # not full: every match is there
    exact = _hits(_plan("plans"), ["plans a", "plans b"])
    assert not window_needed(_plan("plans"), exact, 2)


def test_the_word_inside_a_longer_token_is_one_reading() -> None:
    assert typo_reading("on_callback hook", ["lback"], ["lback"]) == ("lback",)
    assert typo_reading("the fallback", ["lback"], ["lback"]) == ("lback",)  # the same reading
    assert typo_reading("lack of callbacks", ["lback"], ["lback"]) == ("lback",)  # no edit first
    assert typo_reading("generalized", ["nerali"], ["nerali"]) == ("nerali",)
    assert text_reading("generalized", ["nerali"], ["nerali"]) == (TIER_FUZZY, ("nerali",))
    assert text_reading("natalie", ["nerali"], ["nerali"]) is None  # three edits
    assert text_reading("nepalis", ["nerali"], ["nerali"]) == (TIER_FUZZY2, ("nepalis",))
    assert text_reading("balance and totals", ["bals"], ["bals"]) is None  # 3-grams apart


def test_the_substring_reading_shows_among_the_typo_readings() -> None:
    plan = _plan("lback")
    texts = ["on_callback hook", *(f"{w} {n}" for n in range(4) for w in ("back", "black", "lack"))]
    order = [h.seq for h in diversify(plan, _hits(plan, texts))]
    # The substring first (no edit), then lack and back (four of the five letters kept) by recency,
    # then black (a swap: one edit, but two letters out of order).
    assert order[:4] == [0, 12, 10, 11]


def test_closeness_is_the_share_of_letters_kept_in_order() -> None:
    assert closeness(["caro"], ["claro"]) > closeness(["caro"], ["car"]) > closeness(["caro"], ["card"])
    assert closeness(["caro"], [""]) == closeness(["caro"], ["caro"]) == 1.0  # no typo, or inside a word
    assert closeness(["caro", "bill"], ["card", ""]) == closeness(["caro"], ["card"]) + 1.0
    assert closeness(["caro", "bill"], ()) == 2.0  # an entry above the typo tiers


def test_the_closest_readings_come_first_when_a_page_cannot_hold_them_all() -> None:
    plan = _plan("caro")
    # The tier's order alone puts the newest first: claro, written first, is the oldest entry.
    texts = ["claro que si", *(f"{w} note" for w in ("card", "cart", "coro", "care", "cars", "car"))]
    order = [h.text.split()[0] for h in diversify(plan, _hits(plan, texts))]
    assert order == ["claro", "car", "cars", "care", "coro", "cart", "card"]


def test_a_hit_the_engine_over_matched_takes_the_tier_of_its_text() -> None:
    # OpenSearch's substring filter asks for the word's 3-grams anywhere in the entry.
    plan = _plan("bals")
    hits = [_hit(3, "balance and totals", 2.001), _hit(2, "the globals", 2.001), _hit(1, "bass", 2.001)]
    assert [h.seq for h in diversify(plan, hits)] == [2, 1]
    # A two-edit match the engine scored in the one-edit tier goes below the one-edit tier.
    plan = _plan("nerali")
    hits = [_hit(3, "nepalis", 2.001), _hit(2, "generalized", 2.001), _hit(1, "general", 2.001)]
    assert [h.seq for h in diversify(plan, hits)] == [2, 3]


def test_a_reading_that_fills_most_of_a_full_window_asks_for_the_others() -> None:
    plan = _plan("hane")
    crowd = _hits(plan, ["hand 1", "hate 2", *(f"have {n}" for n in range(WINDOW - 2))])
    assert crowded(plan, crowd) == {"have", "hand", "hate"}  # every reading seen: skip them all
    assert crowded(plan, crowd[:-1]) == frozenset()  # not full: every match is there
    half = WINDOW // 2
    mixed = _hits(plan, [*(f"hand {n}" for n in range(half)), *(f"hate {n}" for n in range(half))])
    assert crowded(plan, mixed) == {"hand", "hate"}  # half each: crowded
    spread = _hits(plan, [*(f"hand {n}" for n in range(100)), *(f"hate {n}" for n in range(WINDOW - 100))])
    assert crowded(plan, spread) == {"hand", "hate"}
    three = [*(f"{w} {n}" for n in range(WINDOW // 3) for w in ("hand", "hate", "have"))]
    assert crowded(plan, _hits(plan, three)) == frozenset()  # no reading holds half


def test_merge_keeps_the_first_window_then_what_is_new() -> None:
    plan = _plan("hane")
    first = _hits(plan, ["have a", "have b"])
    second = [_hit(0, "have a", 2.0), _hit(5, "havne c", 2.0)]  # have a is in the first
    assert [h.text for h in merge(first, second)] == ["have b", "have a", "havne c"]


# -- a reading inside longer words --------------------------------------------------------------


def test_the_tier_is_that_of_a_two_edit_typo() -> None:
    assert TIER_INSIDE == TIER_FUZZY2
    assert reading_inside("compiled the module", ["pilxed"], ["pilxed"], 0, "piled") == TIER_INSIDE
    assert reading_inside("the piledriver", ["pilxed"], ["pilxed"], 0, "piled") == TIER_INSIDE  # at the start
    two = reading_inside("compiled the module", ["module", "pilxed"], ["module", "pilxed"], 1, "piled")
    assert two == TIER_EXACT + TIER_INSIDE


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("the build piled up", "the reading as a whole word: its own typo tier"),
        ("compiled and piled", "the reading as a whole word too"),
        ("nothing here", "no reading at all"),
        ("compiled pilxed", "the typed word itself matches"),
        ("recompilxed", "the typed word inside a longer word matches"),
    ],
)
def test_only_entries_holding_the_reading_inside_and_not_the_typed_word(text: str, why: str) -> None:
    assert reading_inside(text, ["pilxed"], ["pilxed"], 0, "piled") is None, why


def test_every_other_word_must_still_match() -> None:
    assert reading_inside("compiled", ["module", "pilxed"], ["module", "pilxed"], 1, "piled") is None


def test_read_as_replaces_one_word_typed_that_way() -> None:
    plan = read_as(_plan("module", "pilxed"), 1, "piled")
    assert (plan.raw_words, plan.words, plan.phrase) == (
        ("module", "piled"),
        ("module", "piled"),
        "module piled",
    )


def test_needed_when_every_match_is_in_or_the_pool_ends_at_the_tier() -> None:
    plan = _plan("pilxed")
    full_at_one_edit = [_hit(0, "piled", 2.001)]
    assert inside_needed(plan, full_at_one_edit, full=False)
    assert inside_needed(plan, [], full=False)  # a later page may hold only such entries
    assert not inside_needed(plan, full_at_one_edit, full=True)
    assert inside_needed(plan, [_hit(0, "pile", 1.501)], full=True)
    # Words of fewer than five letters, numbers and identifiers are never read inside longer words.
    for short in ("bolx", "piled9", "get_pilxed"):
        assert not inside_needed(_plan(short), [], full=False)


def test_the_one_edit_readings_closest_first_and_capped() -> None:
    plan = _plan("plantes")
    texts = {0: "slantes", 1: "plante", 3: "planxtes", 4: "plaxtes", 5: "plans"}
    # "plans" is two edits away (inside a word: three steps).
    # Closest first: an insertion keeps all seven letters, a deletion six, a substitution six of
    # eight; equally close readings in the pool's order (the newest first).
    assert inside_readings(plan, _scored(plan, texts), {}) == [(0, "planxtes"), (0, "plante"), (0, "plaxtes")]
    assert INSIDE_MAX == 3
    # A word the pool holds as typed (whole, as a prefix or inside a longer word) is not read.
    for typed in ("plantes", "plantest", "implantes"):
        assert inside_readings(plan, _scored(plan, {**texts, 2: typed}), {}) == []
    two = _plan("plantes", "deck")
    assert inside_readings(two, _scored(two, {0: "plante deck", 1: "plantes decks"}), {}) == []
    found = inside_readings(two, _scored(two, {0: "plante deck", 1: "plants deck"}), {})
    assert found == [(0, "plants"), (0, "plante")]  # as close: the newest first


def test_added_entries_keep_the_pool_order_and_join_the_readings() -> None:
    plan = _plan("pilxed")
    pool = _scored(plan, {5: "pilxed typed", 0: "the build piled up", 2: "a pile of logs"})
    read = read_as(plan, 0, "piled")
    found = _scored(
        read, {1: "compiled it", 3: "recompiled", 0: "the build piled up", 4: "pilxed recompiled"}
    )
    known: Known = {}
    merged = add_inside(plan, 0, "piled", pool, found, None, known)
    assert [h.seq for h in merged] == [5, 0, 3, 2, 1]  # tier, then the newest
    added = {h.seq: h for h in merged if h.seq in (1, 3)}
    assert added[1].score == pytest.approx(TIER_INSIDE + 0.001)  # the engine's field bonus kept
    assert "piled" in added[1].hints
    assert known["s:1"] == (TIER_INSIDE, ("piled",))
    # The closest reading's best entry first, then "pile", then the second entry of "piled".
    assert [h.seq for h in diversify(plan, merged, known)] == [5, 0, 3, 2, 1]


def test_a_full_window_takes_only_the_entries_that_rank_before_its_last() -> None:
    plan = _plan("pilxed")
    pool = [_hit(0, "the build piled up", 2.001), _hit(2, "a pile of logs", 1.501)]
    found = [_hit(3, "recompiled", 2.001), _hit(1, "compiled", 2.001)]
    merged = add_inside(plan, 0, "piled", pool, found, pool[-1], {})
    assert [h.seq for h in merged] == [0, 3, 2]  # seq 1 is older than the window's last: not fetched


def _engine(
    found: list[dict[str, Any]], fetched_without: frozenset[str]
) -> tuple[OpenSearchEngine, EngineQuery]:
    access = cast(Any, SimpleNamespace(settings=SimpleNamespace(index_prefix="t")))
    engine = OpenSearchEngine(Scope.session("s"), access)
    query = EngineQuery(plan=_plan("piled"), session_id=None, single=True, size=10)
    query.scratch["opensearch.scanned"] = (fetched_without, found)
    return engine, query


def test_a_scan_answers_only_queries_that_exclude_what_it_did_not_fetch() -> None:
    def entry(seq: int, text: str) -> dict[str, Any]:
        source = {"session_id": "s", "seq": seq, "type": "user/message", "text": text}
        return {"_id": f"s:{seq}", "_source": source}

    engine, query = _engine([entry(1, "piled"), entry(2, "piled again")], frozenset({"s:0"}))
    deadline = cast(Any, SimpleNamespace(check=lambda: None))
    assert engine.rescan(replace(query, exclude=()), deadline) is None  # s:0 was never fetched
    same = engine.rescan(replace(query, exclude=("s:0",)), deadline)
    assert same is not None and [h.seq for h in same] == [2, 1]
    fewer = engine.rescan(replace(query, exclude=("s:0", "s:2")), deadline)
    assert fewer is not None and [h.seq for h in fewer] == [1]
