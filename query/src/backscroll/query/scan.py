"""What scoring a small scope in Python needs on both backends. Pure.

Each backend scans a small scope instead of asking its index (the embedded engine in
:mod:`backscroll.query.sqlite.scan`, the OpenSearch engine in :mod:`backscroll.query.opensearch.scan`),
and scores every entry with :func:`~backscroll.query.scoring.score_text`. Both weigh a tool call's
arguments the same, cap the scope's text the same, and pass each entry through the same cheap
substring test first (:func:`may_match`), so the two scans rank alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from rapidfuzz import process
from rapidfuzz.distance import OSA

from backscroll.indexer.textfold import WORD_RE, is_cjk, word_tokens
from backscroll.query.scoring import fuzzy_budget, is_compound

__all__ = ["ARGS_WEIGHT", "SCAN_MAX_CHARS", "Needle", "may_match", "needle"]

#: Most characters of text a scanned scope may hold (a few huge tool outputs go to the index).
SCAN_MAX_CHARS: Final = 2_000_000
#: A tool call's arguments weigh less than a message's text (the same weight on both paths).
ARGS_WEIGHT: Final = 0.75
_DIGIT_RUNS: Final = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Needle:
    """A cheap necessary test for one query word: the folded text of any entry the word matches
    holds one of ``pieces``; or (no pieces) holds ``word`` or a word within ``budget`` edits."""

    pieces: tuple[str, ...] = ()
    word: str = ""
    budget: int = 0

    def found(self, folded: str, tokens: Callable[[], list[str]]) -> bool:
        """Whether ``folded`` (an entry's folded text; ``tokens`` gives its words) passes."""
        if self.pieces:
            return any(piece in folded for piece in self.pieces)
        if self.word in folded:
            return True
        close = process.extractOne(self.word, tokens(), scorer=OSA.distance, score_cutoff=self.budget)
        return close is not None


def needle(word: str) -> Needle | None:
    """The test of a (folded) query word, ``None`` when there is none. Every tier but the typo one
    contains the word (its parts, for an identifier); a typo within the budget leaves one of the
    word's ``budget + 1`` pieces (separated by one character, so that an edit, an adjacent swap
    included, breaks at most one) intact, or, when the pieces would be single letters, is a word of
    the text within the budget. Digits match exactly at every tier (a word with letters too keeps
    its digit skeleton): the word's longest run of digits is in the text."""
    runs = _DIGIT_RUNS.findall(word)
    if runs and not is_cjk(word):
        return Needle((max(runs, key=len),))
    if is_compound(word):
        parts = [needle(part) for part in WORD_RE.findall(word)]
        if not parts or any(p is None or not p.pieces for p in parts):
            return None
        return Needle(tuple(piece for part in parts if part for piece in part.pieces))  # one part: necessary
    if is_cjk(word):
        return Needle((word,))
    if not word:
        return None
    budget = fuzzy_budget(word)
    if not budget:
        return Needle((word,))
    size = (len(word) - budget) // (budget + 1)
    if size < 2:
        return Needle(word=word, budget=budget)
    cuts = range(0, len(word), size + 1)
    found = [word[at : at + size] for at in cuts][: budget + 1]
    found[-1] = word[cuts[budget] :]
    return Needle(tuple(found))


def may_match(folded: str, needles: Sequence[Needle | None], partial: bool) -> bool:
    """Whether the folded text can match: every word's test passes (``partial``: one word's)."""
    words: list[str] = []

    def tokens() -> list[str]:
        if not words:
            words.extend(word_tokens(folded) or [""])
        return words

    hits = (n is None or n.found(folded, tokens) for n in needles)
    return any(hits) if partial else all(hits)
