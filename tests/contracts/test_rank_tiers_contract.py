"""The tier order docs/matching.md states, proved on both backends: one entry per tier in one
session, the better tier always at the older seq (so recency, the last tie-break, cannot explain
the order)."""

from __future__ import annotations

from typing import Any

import pytest

from backscroll.query import Scope, SessionQueryRequest

from .conftest import Harness
from .test_mcp_contract import _event

PHRASES = [
    "crème brûlée tonight",  # the exact phrase
    "creme brulee tonight",  # the accent-folded phrase
    "crème tonight then brûlée",  # every word exact, not adjacent
    "creme tonight then brulee",  # every word accent-folded, not adjacent
]
WORDS = [
    "my résumé here",  # exact
    "my resume here",  # accent-folded
    "my resumebuilder here",  # prefix (the query's last word)
    "my resune here",  # one edit
    "my myresumebook here",  # inside a longer word: the one-edit tier
    "my rezune here",  # two edits
]


@pytest.fixture
def tiers(harness: Harness) -> Harness:
    header: dict[str, Any] = {
        "v": 1,
        "kind": "header",
        "workspace_id": "ws-r",
        "session_id": "s-r",
        "created_at": "2026-11-02T08:00:00Z",
    }
    texts = [*PHRASES, *WORDS]
    harness.append_all(
        [header, *(_event("ws-r", "s-r", i, text, role="user") for i, text in enumerate(texts))]
    )
    harness.index()
    return harness


def _ranked(harness: Harness, query: str) -> list[tuple[int, float]]:
    provider = harness.provider(Scope.session("s-r"))
    result = provider.search(SessionQueryRequest(query=query, limit=20))
    assert not result.partial
    return [(m.seq, m.score) for m in result.matches]


def test_phrases_rank_above_words_and_folded_phrase_above_exact_words(tiers: Harness) -> None:
    ranked = _ranked(tiers, "crème brûlée")
    assert [seq for seq, _ in ranked] == [0, 1, 2, 3]
    scores = [score for _, score in ranked]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 4


def test_word_tiers_in_order_with_typos_and_substrings_sharing_one(tiers: Harness) -> None:
    ranked = _ranked(tiers, "résumé")
    seqs = [seq - len(PHRASES) for seq, _ in ranked]
    assert seqs[:3] == [0, 1, 2]  # exact, folded, prefix
    assert set(seqs[3:5]) == {3, 4}  # one edit and substring: one tier
    assert seqs[5:] == [5]  # two edits
    scores = dict(ranked)
    base = len(PHRASES)
    assert scores[base] > scores[base + 1] > scores[base + 2] > scores[base + 3] > scores[base + 5]
    assert scores[base + 3] == pytest.approx(scores[base + 4], abs=0.01)
