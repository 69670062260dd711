"""Where a hit matched when no query word occurs in it as typed: the spelling to centre its excerpt
on, found in the hit's own text. Pure.

The OpenSearch engine used to ask the server's highlighter for these spellings, which re-analysed
every returned text (up to 1 MiB each) against every tier of the query. Only hits found through a
typo (or an identifier's parts) need one; the excerpt is centred on the earliest of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backscroll.indexer.textfold import WORD_RE, fold, is_cjk
from backscroll.query.scoring import fuzzy_budget, is_compound, typo_match

__all__ = ["typo_hints"]

#: :data:`~backscroll.indexer.textfold.WORD_RE` on lower-cased ASCII text.
_ASCII_WORD = re.compile("[a-z0-9]+")


def _literal(folded: str, word: str) -> bool:
    """Whether :func:`~backscroll.query.excerpt.first_match` finds ``word`` in ``folded`` as is."""
    if len(word) >= 3 or is_cjk(word):
        return word in folded
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", folded) is not None


def typo_hints(text: str, words: Sequence[str]) -> tuple[str, ...]:
    """``()`` when a (folded) query word occurs in ``text`` as the excerpt looks for it; else the
    parts of identifier words that occur, and the tokens of ``text`` within a word's (or a part's)
    typo budget (:func:`~backscroll.query.scoring.typo_match`)."""
    words = [w for w in words if w]
    if not words or not text:
        return ()
    # Folding maps characters one by one and keeps ASCII: a word found in the lower-cased text is
    # in the folded one too, and a long non-ASCII text is folded only when it is not.
    lowered = text.lower()
    if any(w in lowered for w in words if len(w) >= 3 or is_cjk(w)):
        return ()
    folded = fold(text)
    if any(_literal(folded, w) for w in words):
        return ()
    hints: list[str] = []
    targets: list[tuple[str, int]] = []
    for word in words:
        plain = WORD_RE.findall(word) if is_compound(word) else [word]
        for part in plain:
            if part != word and _literal(folded, part):
                hints.append(part)
            budget = fuzzy_budget(part)
            if budget:
                targets.append((part, budget))
    if targets:
        # The distinct tokens, found in C (a 1 MiB tool output usually has a few thousand), then the typo
        # check per distinct token; the excerpt picks the earliest occurrence of any hint.
        tokens = set((_ASCII_WORD if folded.isascii() else WORD_RE).findall(folded))
        # Distance 0 is a part as typed, already a hint.
        hints += sorted(t for t in tokens if any(typo_match(w, t, budget) for w, budget in targets))
    return tuple(dict.fromkeys(hints))
