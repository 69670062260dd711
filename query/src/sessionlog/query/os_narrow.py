"""Which entries of a scanned scope can match a query: the filter that narrows a scan. Pure.

The server takes about 20 µs to fetch one entry (its stored fields), so fetching a whole session
of 150 entries to score a handful is most of a session search. A scan therefore asks only for the
entries that may match, with a filter built from each query word's tiers
(:mod:`sessionlog.query.scoring`), each loosened into a cheap necessary test on the index's fields:

* exact or folded: the word as a whole token (``term`` on the folded and the exact field);
* prefix or substring (3+ characters): every 3-gram of the word in the entry (the trigram field,
  as the index's own substring tier asks);
* a typo: a token within the word's budget, by the server's Levenshtein automaton with
  transpositions (the scan's OSA distance). The expansion is not capped (``constant_score``
  rewrite: every term within the budget, where the index's ranking tier keeps 128), and the
  automaton walks the term dictionary once; the session's filter leads the conjunction, so the
  postings read are the session's;
* an identifier: each of its parts of 3+ characters but CJK ones, as a plain word (every tier of
  an identifier holds each part: the whole token, the phrase of its parts, a prefix of it, or each
  part in its own tier).

A word looked for inside longer words only (a reading of a typo,
:func:`sessionlog.query.readings.inside_readings`) needs only its 3-grams. So that such a search
needs no request of its own, the test of a word of 7+ letters that may be read that way also keeps
every entry holding, inside a token, a string one edit from it (:func:`reading_covered`).

A CJK word, and an identifier without such a part, have no test (a CJK run is one token, which
the server cuts at 256 characters).
The filter is the words' tests OR-ed when every word has one, so that it also serves the closest
matches (any word) and every further ranking of the same search without asking again; else the
tests that exist AND-ed (every word must match), or nothing when the search wants any word.

What the scan then finds follows the index's analysis, like the index path: the server cuts
tokens at 256 characters, so a word past the 256th character of one token is found by neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sessionlog.indexer.textfold import WORD_RE, is_cjk, mixed_key
from sessionlog.query.builder import MAX_LEAVES, QueryPlan, leaves, spread, trigrams
from sessionlog.query.readings import inside_worthy, read_inside
from sessionlog.query.scoring import fuzzy_budget, is_compound

__all__ = ["Narrowing", "narrowing", "reading_covered", "scan_filter"]

_FIELDS: Final = ("text", "args")
#: 3-grams per test, fewer when a long query's filter would hold too many leaf queries.
_GRAMS: Final = (12, 4, 2)
_Level = tuple[bool, int]
#: Whether the tests keep the words' readings inside longer words, and their 3-grams per list.
_LEVELS: Final[tuple[_Level, ...]] = (
    (True, _GRAMS[0]),
    (False, _GRAMS[0]),
    (False, _GRAMS[1]),
    (False, _GRAMS[2]),
)
#: Leaf queries of a filter (the scope's filters and exclusions take the rest of the server's limit).
_MAX_LEAVES: Final = MAX_LEAVES - 100
#: The part of an identifier a filter can test: shorter ones may be the start of a longer token.
_MIN_PART: Final = 3


def _any(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"bool": {"should": clauses, "minimum_should_match": 1}}


def _typo(field: str, word: str, budget: int) -> dict[str, Any]:
    """The tokens within ``budget`` edits of ``word``, every one of them (digits exact)."""
    key = mixed_key(word)
    if key is None:
        value, fixed, target = word, 0, field
    else:  # the digit skeleton is a fixed prefix; the edits are in the letters
        skeleton, letters = key
        value, fixed, target = f"{skeleton}|{letters}", len(skeleton) + 1, f"{field}.mixed"
    rule = {
        "value": value,
        "fuzziness": budget,
        "prefix_length": fixed,
        "transpositions": True,
        "rewrite": "constant_score",
    }
    return {"fuzzy": {target: rule}}


def _grams(field: str, grams: list[str]) -> dict[str, Any]:
    return {"bool": {"filter": [{"term": {f"{field}.tri": g}} for g in grams]}}


def _edited(word: str, cap: int = _GRAMS[0]) -> list[list[str]] | None:
    """For each place of one edit in ``word``, the 3-grams of ``word`` it leaves whole: any string
    one edit from ``word`` holds every 3-gram of one of these lists. An adjacent swap at ``i``
    keeps ``word[:i]`` and ``word[i + 2:]``, and a substitution, deletion or insertion there keeps
    at least as much. ``None`` when an edit can leave no 3-gram whole (words under 7 letters)."""
    kept: list[list[str]] = []
    for i in range(len(word) - 1):
        grams = list(dict.fromkeys([*trigrams(word[:i]), *trigrams(word[i + 2 :])]))
        if not grams:
            return None
        kept.append(spread(grams, cap))
    return kept


def reading_covered(word: str, term: str) -> bool:
    """Whether the test of ``word`` also keeps the entries holding ``term`` (a one-edit reading of
    it) inside longer words, so that a search for that reading needs no other entries."""
    return inside_worthy(word, term) and _edited(word) is not None


def _plain(raw: str, word: str, level: _Level) -> dict[str, Any]:
    """The necessary test of a plain word (letters, digits or both) in any of its tiers, and of its
    one-edit readings inside longer words where it may be read that way (:func:`_edited`)."""
    readings, cap = level
    budget = fuzzy_budget(word)
    clauses: list[dict[str, Any]] = []
    for field in _FIELDS:
        clauses += [{"term": {field: word}}, {"term": {f"{field}.exact": raw}}]
        if len(word) >= 3:
            clauses.append(_grams(field, trigrams(word, cap)))
        if budget:
            clauses.append(_typo(field, word, budget))
    edited = _edited(word, cap) if readings and read_inside(word) else None
    for grams in edited or ():
        clauses += [_grams(field, grams) for field in _FIELDS]
    return _any(clauses)


def _word(raw: str, word: str, inside: bool, level: _Level) -> dict[str, Any] | None:
    """The necessary test of one query word (``inside``: looked for inside longer words only),
    ``None`` when it has none."""
    if is_cjk(word):
        return None
    if inside:
        return (
            _any([_grams(field, trigrams(word, level[1])) for field in _FIELDS]) if len(word) >= 3 else None
        )
    if is_compound(word):
        parts = [_plain(p, p, level) for p in WORD_RE.findall(word) if len(p) >= _MIN_PART and not is_cjk(p)]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"bool": {"filter": parts}}
    return _plain(raw, word, level)


@dataclass(frozen=True, slots=True)
class Narrowing:
    """The filter of a scan (``None``: every entry of the scope), and whether it keeps the entries
    holding the one-edit readings inside longer words of the words it may keep them for
    (:func:`reading_covered`)."""

    filter: dict[str, Any] | None
    readings: bool


def narrowing(plan: QueryPlan, partial: bool, inside: frozenset[str] = frozenset()) -> Narrowing:
    """The filter that keeps every entry of the scope that can match ``plan`` (``partial``: any of
    its words, else all of them; the words of ``inside`` inside longer words only), ``None`` when
    no word has a test (browsing has no words). A long query's filter is loosened until it fits the
    server's clause limit: without the readings, then with fewer 3-grams, then none."""
    for level in _LEVELS:
        found = _filter(plan, partial, inside, level)
        if found is None or leaves(found) <= _MAX_LEAVES:
            return Narrowing(found, found is not None and level[0])
    return Narrowing(None, False)


def scan_filter(
    plan: QueryPlan, partial: bool, inside: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """:func:`narrowing`'s filter."""
    return narrowing(plan, partial, inside).filter


def _filter(plan: QueryPlan, partial: bool, inside: frozenset[str], level: _Level) -> dict[str, Any] | None:
    pairs = zip(plan.raw_words, plan.words, strict=True)
    tests = [_word(raw, word, word in inside, level) for raw, word in pairs]
    found = [test for test in tests if test is not None]
    if not found:
        return None
    if len(found) == len(tests):
        return found[0] if len(found) == 1 else _any(found)
    if partial:
        return None
    return found[0] if len(found) == 1 else {"bool": {"filter": found}}
