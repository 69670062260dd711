"""Small scopes are scanned, not looked up: the embedded engine's plan by scope size.

A session holds tens of entries; the full-text tables hold the whole file. A lookup there returns
every matching entry of every tenant (a common word: a large share of the file) before the scope
filter drops all but a handful, so its cost grows with the file, not with the scope. When the
scope (after the kind filter) holds at most :data:`SCAN_MAX_ROWS` entries and
:data:`~backscroll.query.scan.SCAN_MAX_CHARS` characters of text, reading its rows by the scope
index and scoring each with :func:`~backscroll.query.scoring.score_text` costs what the scope
costs, whatever the file's size.

The result is the ranking the index path computes (that path is exact: its candidates are every
entry :func:`score_text` can match, scored by the same function, ordered by the same key), so the
plan changes latency only; a property test holds both paths to the same pages. Typo candidates
(excerpt hints) come from the page's own texts, which are a subset of the scope's vocabulary.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from backscroll.indexer.textfold import WORD_RE, fold, word_tokens
from backscroll.query.plan import QueryPlan
from backscroll.query.scan import ARGS_WEIGHT, SCAN_MAX_CHARS, may_match, needle
from backscroll.query.scoring import fuzzy_budget, score_text, typo_match

__all__ = [
    "SCAN_MAX_ROWS",
    "ScopeRow",
    "page_hints",
    "scan_rank",
    "scope_rows",
]

#: Most entries a scope may hold to be scanned (scoring one costs ~10-40 µs of Python).
SCAN_MAX_ROWS: Final = 1000
_CHECK_EVERY: Final = 128

Ranked = list[tuple[int, float]]


@dataclass(frozen=True, slots=True)
class ScopeRow:
    """One entry of a scanned scope, its text folded once for every query scanned over it."""

    rid: int
    seq: int
    session_id: str
    weight: float
    text: str
    folded: str


def scope_rows(
    conn: sqlite3.Connection,
    where: tuple[str, list[Any]],
    check: Callable[[], None],
    max_rows: int = SCAN_MAX_ROWS,
) -> tuple[ScopeRow, ...] | None:
    """The entries matching ``where`` (an SQL condition over ``events e`` and its parameters: scope
    and kind filter), or ``None`` when they are more than ``max_rows`` or hold more than
    :data:`~backscroll.query.scan.SCAN_MAX_CHARS` characters (the caller then uses the index)."""
    sql, params = where
    count = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM events e WHERE {sql} LIMIT ?)", [*params, max_rows + 1]
    ).fetchone()[0]
    if int(count) > max_rows:
        return None
    found: list[ScopeRow] = []
    chars = 0
    rows = conn.execute(
        f"SELECT e.rid, e.seq, e.session_id, e.type, e.text FROM events e WHERE {sql}", params
    )
    for i, (rid, seq, session_id, kind, text) in enumerate(rows):
        if i % _CHECK_EVERY == 0:
            check()
        chars += len(text)
        if chars > SCAN_MAX_CHARS:
            return None
        weight = ARGS_WEIGHT if kind == "tool/call" else 1.0
        found.append(ScopeRow(int(rid), int(seq), str(session_id), weight, text, fold(text.lower())))
    return tuple(found)


def scan_rank(
    rows: Sequence[ScopeRow],
    plan: QueryPlan,
    partial: bool,
    need: int,
    check: Callable[[], None],
    skip: frozenset[str] = frozenset(),
    scores: dict[int, float | None] | None = None,
) -> tuple[Ranked, dict[int, str]]:
    """The top ``need`` ``(rid, score)`` of ``rows`` (:func:`scope_rows`) and the page's texts by
    rid. Entries holding a word of ``skip`` are left out. ``scores`` keeps each entry's score
    under this plan (``None``: no match) for the engine's next scan of the same query on the same
    data (the provider asks again for a wider window of the same ranking)."""
    known: dict[int, float | None] = {} if scores is None else scores
    scored: list[tuple[float, int, str, int]] = []
    texts: dict[int, str] = {}
    needles = [needle(word) for word in plan.words]
    for i, row in enumerate(rows):
        if i % _CHECK_EVERY == 0:
            check()
        if row.rid in known:
            score = known[row.rid]
        elif may_match(row.folded, needles, partial):
            score = score_text(row.text, plan.raw_words, plan.words, weight=row.weight, partial=partial)
            known[row.rid] = score
        else:
            score = known[row.rid] = None
        if score is None or (skip and not skip.isdisjoint(word_tokens(row.folded))):
            continue
        scored.append((score, row.seq, row.session_id, row.rid))
        texts[row.rid] = row.text
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    top = [(rid, score) for score, _, _, rid in scored[:need]]
    return top, {rid: texts[rid] for rid, _ in top}


def page_hints(words: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Each query word's typo candidates among the words of ``texts`` (closest first, word by word),
    as the index path lists its vocabulary candidates."""
    tokens = {token for text in texts for token in WORD_RE.findall(fold(text.lower()))}
    hints: list[str] = []
    for word in words:
        budget = fuzzy_budget(word)
        if not budget:
            continue
        close = []
        for token in tokens:
            if token != word:
                distance = typo_match(word, token, budget)
                if distance is not None:
                    close.append((distance, token))
        hints.extend(term for _, term in sorted(close))
    return hints
