"""The readings of an ambiguous typo in pure code: what a reading is, and the order inside a tier."""

from __future__ import annotations

from sessionlog.query.builder import QueryPlan
from sessionlog.query.engine import EngineHit
from sessionlog.query.readings import diversify, tier_of, window_needed
from sessionlog.query.scoring import score_text, typo_reading


def _plan(*words: str) -> QueryPlan:
    return QueryPlan(
        filters=(),
        kinds=("user/message",),
        raw_words=words,
        words=words,
        phrase=" ".join(words),
        default_kinds=True,
    )


def _hits(plan: QueryPlan, texts: list[str]) -> list[EngineHit]:
    """Hits in D2's order (score, then the newest: the last text is the newest)."""
    hits = []
    for seq, text in enumerate(texts):
        score = score_text(text, plan.raw_words, plan.words)
        assert score is not None
        hits.append(
            EngineHit(
                session_id="s", entry_id=f"s:{seq}", seq=seq, kind="user/message", text=text, score=score
            )
        )
    return sorted(hits, key=lambda h: (-h.score, -h.seq))


def test_a_reading_is_the_closest_term_of_each_typo_matched_word() -> None:
    assert typo_reading("the planes landed", ["planqs"], ["planqs"]) == ("planes",)
    assert typo_reading("plans and planes", ["planqs"], ["planqs"]) == ("planes",)  # a tie: alphabetical
    assert typo_reading("plans for the deck", ["deck", "planqs"], ["deck", "planqs"]) == ("", "plans")
    assert typo_reading("planqs itself", ["planqs"], ["planqs"]) == ("",)  # exact: no typo reading


def test_tier_of_drops_the_d2_bonuses_only() -> None:
    assert tier_of(2.0) == 2.0
    assert tier_of(2.011) == 2.0
    assert tier_of(1.5 + 0.321) == 1.5
    assert tier_of(9.9999999) == 10.0  # float32 sums


def test_each_reading_first_then_d2_inside_a_tier() -> None:
    plan = _plan("planqs")
    hits = _hits(plan, ["the planes landed", "planks on deck", *(f"plans day {n}" for n in range(5))])
    assert [h.seq for h in hits] == [6, 5, 4, 3, 2, 1, 0]  # D2 alone: recency
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
