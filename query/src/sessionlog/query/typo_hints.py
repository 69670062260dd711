"""Where a hit matched when no query word occurs in it as typed: the spelling to centre its excerpt
on, found in the hit's own text. Pure.

The OpenSearch engine used to ask the server's highlighter for these spellings, which re-analysed
every returned text (up to 1 MiB each) against every tier of the query. Only hits found through a
typo (or an identifier's parts) need one, and the first such token is enough: the excerpt is
centred on the earliest match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sessionlog.indexer.textfold import WORD_RE, fold, is_cjk
from sessionlog.query.scoring import fuzzy_budget, is_compound, typo_match

__all__ = ["typo_hints"]


def _literal(folded: str, word: str) -> bool:
    """Whether :func:`~sessionlog.query.excerpt.first_match` finds ``word`` in ``folded`` as is."""
    if len(word) >= 3 or is_cjk(word):
        return word in folded
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", folded) is not None


def typo_hints(text: str, words: Sequence[str]) -> tuple[str, ...]:
    """``()`` when a (folded) query word occurs in ``text`` as the excerpt looks for it; else the
    parts of identifier words that occur, and the first token of ``text`` within a word's (or a
    part's) typo budget (:func:`~sessionlog.query.scoring.typo_match`)."""
    words = [w for w in words if w]
    if not words or not text:
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
        seen: set[str] = set()
        for found in WORD_RE.finditer(folded):
            token = found.group()
            if token in seen:
                continue
            seen.add(token)
            # Distance 0 is a part as typed, already a hint.
            if any(typo_match(word, token, budget) for word, budget in targets):
                hints.append(token)
                break
    return tuple(dict.fromkeys(hints))
