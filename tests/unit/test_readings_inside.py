"""A typo's reading inside longer words in pure code: its tier, which readings are looked up, and
how their entries join the window (the provider core's step; the contract suite runs it on every
backend)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest

from sessionlog.query import Scope
from sessionlog.query.builder import QueryPlan
from sessionlog.query.engine import EngineHit, EngineQuery
from sessionlog.query.opensearch_provider import OpenSearchEngine
from sessionlog.query.readings import (
    INSIDE_MAX,
    Known,
    add_inside,
    diversify,
    inside_needed,
    inside_readings,
    read_as,
)
from sessionlog.query.scoring import TIER_EXACT, TIER_FUZZY2, TIER_INSIDE, reading_inside, score_text


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
    """Hits of ``plan`` in D2's order (score, then the newest)."""
    hits = []
    for seq, text in texts.items():
        score = score_text(text, plan.raw_words, plan.words)
        assert score is not None
        hits.append(_hit(seq, text, score))
    return sorted(hits, key=lambda h: (-h.score, -h.seq))


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
    texts = {0: "slantes", 1: "plante", 2: "plantes", 3: "planxtes", 4: "plaxtes", 5: "plans"}
    # The typed word is no reading and "plans" is two edits away (inside a word: three steps).
    # Closest first: an insertion keeps all seven letters, a deletion six, a substitution six of
    # eight; equally close readings in the pool's order (D2: the newest first).
    assert inside_readings(plan, _scored(plan, texts), {}) == [(0, "planxtes"), (0, "plante"), (0, "plaxtes")]
    assert INSIDE_MAX == 3


def test_added_entries_keep_the_pool_order_and_join_the_readings() -> None:
    plan = _plan("pilxed")
    pool = _scored(plan, {5: "pilxed typed", 0: "the build piled up", 2: "a pile of logs"})
    read = read_as(plan, 0, "piled")
    found = _scored(
        read, {1: "compiled it", 3: "recompiled", 0: "the build piled up", 4: "pilxed recompiled"}
    )
    known: Known = {}
    merged = add_inside(plan, 0, "piled", pool, found, None, known)
    assert [h.seq for h in merged] == [5, 0, 3, 2, 1]  # D2: tier, then the newest
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
