"""The provider's ranking tiers computed in Python, for entries that are not in the index yet
(read-your-writes) and for backends without OpenSearch. Pure.

Per query word the best tier counts: exact token 8, accent-folded token 4, within the typo budget
2 (OpenSearch ``AUTO``: 0 edits up to 2 characters, 1 for 3–5, 2 from 6; an adjacent swap is one
edit), substring of 3+ characters 1. An exact phrase adds 40, a folded phrase 20.
"""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz.distance import OSA

from sessionlog.indexer.textfold import WORD_RE, fold

__all__ = ["TIER_EXACT", "TIER_FOLDED", "TIER_FUZZY", "TIER_SUBSTRING", "score_text", "typo_budget"]

TIER_EXACT = 8.0
TIER_FOLDED = 4.0
TIER_FUZZY = 2.0
TIER_SUBSTRING = 1.0
PHRASE_EXACT = 40.0
PHRASE_FOLDED = 20.0


def typo_budget(word: str) -> int:
    """Edits allowed for a word of this length (OpenSearch's ``fuzziness: AUTO``)."""
    return 0 if len(word) <= 2 else 1 if len(word) <= 5 else 2


def _word_tier(
    raw: str, folded: str, exact_tokens: set[str], folded_tokens: set[str], folded_text: str
) -> float:
    if raw in exact_tokens:
        return TIER_EXACT
    if folded in folded_tokens:
        return TIER_FOLDED
    budget = 0 if any(ch.isdigit() for ch in folded) else typo_budget(folded)
    if budget:
        for token in folded_tokens:
            if (
                abs(len(token) - len(folded)) <= budget
                and OSA.distance(folded, token, score_cutoff=budget) <= budget
            ):
                return TIER_FUZZY
    if len(folded) >= 3 and folded in folded_text:
        return TIER_SUBSTRING
    return 0.0


def score_text(
    text: str, raw_words: Sequence[str], words: Sequence[str], *, weight: float = 1.0, partial: bool = False
) -> float | None:
    """The score of ``text`` for the query, or ``None`` when it does not match (every word must,
    unless ``partial``, when at least one must)."""
    lowered = text.lower()
    exact_tokens = {m.group() for m in WORD_RE.finditer(lowered)}
    folded_text = fold(lowered)
    folded_tokens = {m.group() for m in WORD_RE.finditer(folded_text)}
    total = 0.0
    matched = 0
    for raw, folded in zip(raw_words, words, strict=True):
        tier = _word_tier(raw, folded, exact_tokens, folded_tokens, folded_text)
        if tier:
            matched += 1
            total += tier * weight
        elif not partial:
            return None
    if matched == 0:
        return None
    if len(words) > 1:
        phrase = " ".join(raw_words)
        if phrase in " ".join(m.group() for m in WORD_RE.finditer(lowered)):
            total += PHRASE_EXACT
        elif " ".join(words) in " ".join(m.group() for m in WORD_RE.finditer(folded_text)):
            total += PHRASE_FOLDED
    return total
