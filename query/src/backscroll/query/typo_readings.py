"""Every reading of a typo before a second entry of any one. Pure.

A typo is often one edit from several words: ``planqs`` from ``planes``, ``plans`` and
``planks``; ``meetp`` from ``meetup`` and ``meet``. Each such word is a *reading* of the query
(:func:`~backscroll.query.scoring.typo_reading`). The tier's order is by occurrences, field and
recency, so a common reading would fill the page and hide the others. Inside a tier, entries are
therefore ordered by their rank among the entries of the same reading first, then by the tier's order:
the first page shows the best entry (in the tier's order) of every reading before the second of any.
Tiers are never crossed, and entries matched without a typo count as one reading (their order is
exactly the tier's).

When a short typo has more readings than a page holds (``caro``: ``car``, ``care``, ``card``,
``cairo``, ``claro``, …), the readings whose spelling is closest to the typed word come first
(:func:`closeness`): every reading is one edit away, but ``claro`` keeps all four typed letters
in order and ``card`` keeps three. Among equally close readings, the tier's order of their best entries
decides. The word itself inside a longer word is the closest reading (no edit at all).

A reading may also occur inside longer words: ``pilxed`` is read as ``piled``, and ``compiled``
holds ``piled`` as much as the entry that has the word alone. Those entries form one more reading
(:func:`inside_readings`), in the tier of a two-edit typo
(:data:`~backscroll.query.scoring.TIER_INSIDE`): the core asks the engine for each of the
closest readings as a word, without the entries holding it whole (:func:`read_as`), and adds what
it finds to the window (:func:`add_inside`).

Both backends apply this the same way, in the provider core, to the engine's hits in the tier's order:
when a page could end inside a tier that may hold typo matches, the engine is asked for the first
:data:`WINDOW` entries (not returned by earlier pages) and the page is taken from their reordering.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from rapidfuzz.distance import Indel

from backscroll.query.engine import EngineHit
from backscroll.query.plan import QueryPlan
from backscroll.query.scoring import (
    TIER_EXACT,
    TIER_FUZZY,
    TIER_INSIDE,
    fuzzy_budget,
    near_compound,
    reading_inside,
    text_reading,
    typo_match,
)

__all__ = [
    "INSIDE_MAX",
    "WINDOW",
    "Known",
    "add_inside",
    "closeness",
    "crowded",
    "diversify",
    "inside_needed",
    "inside_readings",
    "merge",
    "read_as",
    "tier_of",
    "window_needed",
]

#: Entries (in the tier's order) whose readings a page is drawn from.
WINDOW: Final = 300
#: The readings (closest first) whose entries inside longer words one search looks up.
INSIDE_MAX: Final = 3
#: A typed word is read inside longer words from this length (a reading then has 4+ letters: a
#: shorter one is inside too many words to mean anything).
INSIDE_FROM: Final = 5
#: A reading holding at least this share of a full window crowds the others out of it.
CROWDED: Final = 0.5
# The occurrence and field bonuses stay below 0.33, tiers are multiples of 0.5; OpenSearch scores
# are float32 sums.
_SLACK: Final = 1e-4


def tier_of(score: float) -> float:
    """The tier sum of a score (the score without the occurrence and field bonuses)."""
    return math.floor(score * 2 + _SLACK) / 2


def _typo_ceiling(plan: QueryPlan) -> float:
    """The highest tier sum an entry with a typo match can have (-1: the query has no typo tier)."""
    if not any(fuzzy_budget(word) or near_compound(word) for word in plan.words):
        return -1.0
    return (len(plan.words) - 1) * TIER_EXACT + TIER_FUZZY


def window_needed(plan: QueryPlan, hits: Sequence[EngineHit], size: int) -> bool:
    """Whether the page (``hits``, ``size`` asked) ends in a tier that may hold typo matches, so that
    a reading beyond it could belong in the page.

    An identifier has one reading in these tiers (its parts in a row, or the identifier itself
    inside a longer one), so for it alone the window only serves an engine that over-matched:
    when a hit of the page scores above what its text holds, the entries after the page may take
    its place."""
    if len(hits) < size or not hits or tier_of(hits[-1].score) > _typo_ceiling(plan):
        return False
    if any(fuzzy_budget(word) for word in plan.words):
        return True
    ceiling = _typo_ceiling(plan)
    for hit in hits:
        tier = tier_of(hit.score)
        if tier <= ceiling:
            found = text_reading(hit.text, plan.raw_words, plan.words)
            if found is None or found[0] < tier:
                return True
    return False


#: The reading of each hit read so far in one search (by entry id; ``None``: its text does not
#: match): :func:`crowded` and :func:`diversify` read the same window.
Known = dict[str, tuple[float, tuple[str, ...]] | None]


def _reading(plan: QueryPlan, hit: EngineHit, known: Known | None) -> tuple[float, tuple[str, ...]] | None:
    if known is None:
        return text_reading(hit.text, plan.raw_words, plan.words)
    if hit.entry_id not in known:
        known[hit.entry_id] = text_reading(hit.text, plan.raw_words, plan.words)
    return known[hit.entry_id]


def diversify(plan: QueryPlan, hits: Sequence[EngineHit], known: Known | None = None) -> list[EngineHit]:
    """``hits`` (in the tier's order) ordered by tier, then rank within their reading, then the reading's
    :func:`closeness` to the typed words, then the tier's order.

    The tier and the reading of a hit in a tier that may hold typo matches come from its text
    (:func:`~backscroll.query.scoring.text_reading`), so the order is the one ``score_text`` gives
    on both backends: a hit the engine over-matched (OpenSearch's trigram filter asks for every
    3-gram of a word somewhere in the entry, not the word inside one token) takes its exact tier,
    or is left out when its text does not match. ``known`` keeps the readings between calls."""
    ceiling = _typo_ceiling(plan)
    if not hits or tier_of(min(hit.score for hit in hits)) > ceiling:
        return list(hits)
    seen: dict[tuple[float, tuple[str, ...]], int] = {}
    keyed: list[tuple[float, int, float, int, EngineHit]] = []
    for index, hit in enumerate(hits):
        tier = tier_of(hit.score)
        reading: tuple[str, ...] = ()
        if tier <= ceiling:
            found = _reading(plan, hit, known)
            if found is None:
                continue
            tier = min(tier, found[0])
            reading = found[1]
        rank = seen.get((tier, reading), 0)
        seen[tier, reading] = rank + 1
        keyed.append((-tier, rank, -closeness(plan.words, reading), index, hit))
    keyed.sort(key=lambda item: item[:4])
    return [item[4] for item in keyed]


def closeness(words: Sequence[str], reading: Sequence[str]) -> float:
    """How close a reading's spelling is to the typed words: per word, the share of the letters
    of both spellings that they have in common in order (normalized Indel similarity, 1.0 for the
    word itself or a word read without a typo), summed over the words.

    ``caro`` read as ``claro`` (all four letters kept) is closer than read as ``card`` (three
    kept), though both are one edit away."""
    if not reading:  # an entry above the typo tiers
        return float(len(words))
    total = float(len(words))
    for word, term in zip(words, reading, strict=True):
        if term and term != word:
            total -= 1.0 - Indel.normalized_similarity(word, term)
    return total


def crowded(plan: QueryPlan, window: Sequence[EngineHit], known: Known | None = None) -> frozenset[str]:
    """The words of the window's typo readings when one of them holds at least :data:`CROWDED`
    of a full window (else none).

    ``have`` fills 252 of the 300 entries of ``hane``'s window in a big workspace, so a rarer
    reading (``havne``) may not be in it at all. The provider then asks for a second window
    without the entries holding any reading already seen (:attr:`EngineQuery.skip`): each of
    those has its best entry in the first window, and the second holds the readings not seen
    yet. The page is drawn from both (:func:`merge`)."""
    if len(window) < WINDOW:
        return frozenset()
    ceiling = _typo_ceiling(plan)
    counts: dict[str, int] = {}
    for hit in window:
        if tier_of(hit.score) > ceiling:
            continue
        found = _reading(plan, hit, known)
        for word, term in zip(plan.words, found[1] if found else (), strict=False):
            if term and term != word:
                counts[term] = counts.get(term, 0) + 1
    if not any(count >= CROWDED * len(window) for count in counts.values()):
        return frozenset()
    return frozenset(counts)


def merge(window: Sequence[EngineHit], more: Sequence[EngineHit]) -> list[EngineHit]:
    """``window`` then the entries of ``more`` it does not hold: still the tier's order, since every
    entry outside the first window ranks after all of it."""
    seen = {hit.entry_id for hit in window}
    return [*window, *(hit for hit in more if hit.entry_id not in seen)]


def _read_inside(word: str) -> bool:
    """Whether a typed word may be read inside longer words: a plain word of
    :data:`INSIDE_FROM`+ letters."""
    return len(word) >= INSIDE_FROM and word.isalpha() and fuzzy_budget(word) > 0


def _inside_worthy(word: str, term: str) -> bool:
    """Whether ``term`` (a reading of ``word``) is looked up inside longer words: one edit from a
    word that may be read that way."""
    return _read_inside(word) and typo_match(word, term, 1) == 1


def inside_needed(plan: QueryPlan, pool: Sequence[EngineHit], full: bool) -> bool:
    """Whether entries of a reading inside longer words could belong among ``pool`` (the page or
    the window, in the tier's order, maybe empty on a later page; ``full``: the engine may hold more
    entries after it): a word may be read that way, and the pool ends at or below their tier, or
    holds every match."""
    if not any(_read_inside(word) for word in plan.words):
        return False
    return not full or tier_of(pool[-1].score) <= (len(plan.words) - 1) * TIER_EXACT + TIER_INSIDE


def inside_readings(plan: QueryPlan, pool: Sequence[EngineHit], known: Known) -> list[tuple[int, str]]:
    """The one-edit readings of ``pool``'s typo matches that may occur inside longer words, as
    (word index, reading): the closest first (then the first seen), at most :data:`INSIDE_MAX`.

    Only for the words ``pool`` never holds as typed (a whole word, a prefix or inside a longer
    word): a word the scope holds was likely meant as it is, and its entries rank first."""
    ceiling = _typo_ceiling(plan)
    as_typed = [False] * len(plan.words)
    found: dict[tuple[int, str], None] = {}
    for hit in pool:
        if tier_of(hit.score) > ceiling:
            as_typed = [True] * len(plan.words)  # every word matched without a typo
            break
        reading = _reading(plan, hit, known)
        for index, term in enumerate(reading[1] if reading else ()):
            word = plan.words[index]
            if not term or term == word:
                as_typed[index] = True
            elif _inside_worthy(word, term):
                found.setdefault((index, term), None)
    wanted = [item for item in found if not as_typed[item[0]]]
    wanted.sort(key=lambda item: -closeness(plan.words[item[0] : item[0] + 1], (item[1],)))
    return wanted[:INSIDE_MAX]


def read_as(plan: QueryPlan, index: int, term: str) -> QueryPlan:
    """``plan`` with word ``index`` replaced by ``term`` (typed that way)."""
    raw_words = (*plan.raw_words[:index], term, *plan.raw_words[index + 1 :])
    words = (*plan.words[:index], term, *plan.words[index + 1 :])
    return replace(plan, raw_words=raw_words, words=words, phrase=" ".join(raw_words))


def _order(hit: EngineHit) -> tuple[float, int, str]:
    """The tier's order of a hit (scores to 4 places: OpenSearch's are float32)."""
    return (-round(hit.score, 4), -hit.seq, hit.session_id)


def add_inside(
    plan: QueryPlan,
    index: int,
    term: str,
    pool: Sequence[EngineHit],
    found: Sequence[EngineHit],
    last: EngineHit | None,
    known: Known,
) -> list[EngineHit]:
    """``pool`` (in the tier's order) with the entries of ``found`` (the search for the plan read as
    ``term``, :func:`read_as`) that hold ``term`` inside a longer word and not the typed word,
    scored in their tier with the occurrence and field bonuses the engine gave them, in the tier's order.
    ``last``: the last entry of a full window, the entries after which the engine was not asked
    for (only those ranking before it are added). Their readings go into ``known``."""
    have = {hit.entry_id for hit in pool}
    reading = tuple(term if position == index else "" for position in range(len(plan.words)))
    added: list[EngineHit] = []
    for hit in found:
        if hit.entry_id in have:
            continue
        tiers = reading_inside(hit.text, plan.raw_words, plan.words, index, term)
        if tiers is None:
            continue
        hints = hit.hints if term in hit.hints else (*hit.hints, term)
        moved = replace(hit, score=tiers + hit.score - tier_of(hit.score), hints=hints)
        if last is not None and _order(moved) >= _order(last):
            continue
        known[hit.entry_id] = (tiers, reading)
        added.append(moved)
    added.sort(key=_order)
    out: list[EngineHit] = []
    for hit in pool:  # the pool keeps its own order (the engine's)
        while added and _order(added[0]) < _order(hit):
            out.append(added.pop(0))
        out.append(hit)
    return [*out, *added]
