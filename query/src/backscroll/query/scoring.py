"""The provider's ranking computed in Python, for entries that are not in the index yet
(read-your-writes) and for the embedded backend, which verifies its candidates with it. Pure.

A query is split into *words* (:data:`~backscroll.indexer.textfold.QUERY_TOKEN_RE`): plain words,
identifiers (words joined by ``_ . - : /``, kept whole) and CJK runs. Per query word the best tier
counts (the OpenSearch body in :mod:`backscroll.query.opensearch.body` gives the same tiers):

========  ====================================================================================
8 exact   the word as a token, case-insensitive with its accents (an identifier typed in ASCII
          as a whole identifier token; a CJK word as a whole CJK run)
4 folded  the word as a token, accent-folded; an identifier as its parts in a row
          (``acct 9931`` for ``acct_9931``); a CJK word inside a CJK run (character bigrams)
3 prefix  the last query word (3+ characters) as the start of a longer token (``backst`` →
          ``backstage``); an identifier as the start of an identifier token (``get_t`` →
          ``get_type``, ``2.2.1`` → ``2.2.1-3``). 2.5 when a fragment ending in a digit goes on
          into a longer number (``2.2.1`` in ``2.2.10``, ``acct_29`` in ``acct_29615``)
2 near    one edit within the typo budget (OpenSearch ``AUTO``: 0 edits up to 2 characters, 1
          for 3–5, 2 from 6; an adjacent swap is one edit). In a word with digits only its
          letters may differ, and the budget is that of its letters (``pyhton3`` → ``python3``;
          ``ipv4`` never finds ``ipv6``). Also a word of 3+ characters inside a longer token, as
          typed (``9931`` in ``acct_9931``, ``lback`` in ``callback``): a *substring*. An
          identifier at the start of a later segment of a longer one (``parse_he`` in
          ``self.parse_header``, ``query/sc`` in ``query/scoring.py``). An identifier whose parts
          are words in a row, each within its own typo budget, one edit in all (``exmple.com``)
1.5       two edits within the budget; an identifier's parts in a row with two or more edits in
          all, each part within its own budget (``exmaple.cmo`` → ``example.com``); also a
          *reading inside a longer word*: a word of 5+ letters read as a whole word one edit away
          that occurs inside a longer token (``pilxed`` read as ``piled``, inside ``compiled``:
          :func:`reading_inside`)
1 parts   an identifier whose parts all match somewhere (``get_tpye`` → ``get`` … ``type``)
========  ====================================================================================

A substring and a one-edit typo are each one step from the word as typed, and neither is the word:
they share a tier, and :mod:`backscroll.query.typo_readings` treats the word as a substring as one
more *reading* of it (:func:`typo_reading`).

An exact phrase of all words adds 40, a folded one 20. Inside a tier: more occurrences
(each word's whole-token count, up to :data:`MAX_COUNTED` counted), then message text over tool
arguments; recency (seq descending) is the caller's sort key after the score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rapidfuzz import process
from rapidfuzz.distance import OSA

from backscroll.indexer.textfold import (
    WORD_RE,
    fold,
    ident_tokens,
    is_cjk,
    mixed_key,
    word_start_match,
    word_tokens,
)

__all__ = [
    "FIELD_BONUS",
    "MAX_COUNTED",
    "OCCURRENCE",
    "PHRASE_EXACT",
    "PHRASE_FOLDED",
    "TIER_EXACT",
    "TIER_FOLDED",
    "TIER_FUZZY",
    "TIER_FUZZY2",
    "TIER_INSIDE",
    "TIER_PARTS",
    "TIER_PREFIX",
    "TIER_PREFIX_NUMBER",
    "TIER_SUBSTRING",
    "extends",
    "fuzzy_budget",
    "fuzzy_tier",
    "is_compound",
    "max_bonus",
    "near_compound",
    "phrase_words",
    "reading_inside",
    "score_text",
    "text_reading",
    "typo_budget",
    "typo_match",
    "typo_reading",
]

TIER_EXACT = 8.0
TIER_FOLDED = 4.0
TIER_PREFIX = 3.0
TIER_PREFIX_NUMBER = 2.5
TIER_FUZZY = 2.0
TIER_FUZZY2 = 1.5
#: A word of 3+ characters inside a longer token: the tier of a one-edit typo (one more reading).
TIER_SUBSTRING = TIER_FUZZY
#: A reading one edit away found inside a longer token: an edit and a substring, two steps from the
#: word as typed, like a two-edit typo.
TIER_INSIDE = TIER_FUZZY2
#: An identifier whose parts all match somewhere, in any tier but the prefix one.
TIER_PARTS = 1.0
PHRASE_EXACT = 40.0
PHRASE_FOLDED = 20.0
#: Added per extra occurrence of a query word (the 2nd and 3rd count); 32 words × 2 × 0.005 stays
#: below the smallest gap between tiers (0.5).
OCCURRENCE = 0.005
MAX_COUNTED = 3
#: Message text over tool arguments, below one occurrence.
FIELD_BONUS = 0.001


def typo_budget(word: str) -> int:
    """Edits allowed for a word of this length (OpenSearch's ``fuzziness: AUTO``)."""
    return 0 if len(word) <= 2 else 1 if len(word) <= 5 else 2


def is_compound(word: str) -> bool:
    """Whether a query word is an identifier (words joined by ``_ . - : /``)."""
    return any(ch in "_.:-/" for ch in word)


def near_compound(word: str) -> bool:
    """Whether a query word is an identifier that may match in the one- or two-edit tiers: inside
    a longer identifier, or with typos in its parts."""
    return is_compound(word) and len(word) >= 3


def fuzzy_budget(word: str) -> int:
    """Typo budget of a plain query word: ``AUTO`` of the word, or of its letters when it also has
    digits (which must match exactly); 0 for numbers, identifiers and CJK."""
    if is_compound(word) or is_cjk(word):
        return 0
    key = mixed_key(word)
    if key is not None:
        return typo_budget(key[1])
    if any(ch.isdecimal() for ch in word):
        return 0
    return typo_budget(word)


def typo_match(word: str, token: str, budget: int) -> int | None:
    """Edit distance of ``token`` from ``word`` when within ``budget`` under the digit rule (equal
    digit skeletons, edits in the letters only), else ``None``."""
    key = mixed_key(word)
    if key is not None:
        other = mixed_key(token)
        if other is None or other[0] != key[0]:
            return None
        a, b = key[1], other[1]
    else:
        a, b = word, token
    if abs(len(a) - len(b)) > budget:
        return None
    distance = OSA.distance(a, b, score_cutoff=budget)
    return distance if distance <= budget else None


def extends(token: str, fragment: str) -> float:
    """The prefix tier of ``token`` for ``fragment`` (0: ``token`` does not start with it, or is it):
    :data:`TIER_PREFIX_NUMBER` when a fragment ending in a digit goes on into a longer number."""
    if len(token) <= len(fragment) or not token.startswith(fragment):
        return 0.0
    if fragment[-1].isdecimal() and token[len(fragment)].isdecimal():
        return TIER_PREFIX_NUMBER
    return TIER_PREFIX


def fuzzy_tier(distance: int) -> float:
    """The tier of a typo match ``distance`` edits away."""
    return TIER_FUZZY if distance <= 1 else TIER_FUZZY2


def phrase_words(words: Sequence[str]) -> list[str]:
    """The query as index tokens (identifiers split into their parts), for the phrase bonus."""
    return WORD_RE.findall(" ".join(words))


@dataclass(slots=True)
class _Text:
    """One entry text as the tiers see it."""

    exact: set[str]
    folded: list[str]
    folded_set: set[str]
    joined: str
    folded_text: str
    exact_joined: str
    counts: dict[str, int] = field(default_factory=dict)
    _idents: set[str] | None = None

    @classmethod
    def of(cls, text: str) -> _Text:
        lowered = text.lower()
        if lowered.isascii():  # nothing to fold: the exact and folded tokens are the same
            folded = word_tokens(lowered)
            folded_set = set(folded)
            joined = f" {' '.join(folded)} "
            return cls(folded_set, folded, folded_set, joined, lowered, joined)
        exact = word_tokens(lowered)
        folded_text = fold(lowered)
        folded = word_tokens(folded_text)
        return cls(
            exact=set(exact),
            folded=folded,
            folded_set=set(folded),
            joined=f" {' '.join(folded)} ",
            folded_text=folded_text,
            exact_joined=f" {' '.join(exact)} ",
        )

    @property
    def idents(self) -> set[str]:
        """The identifier tokens (read only for identifier query words)."""
        if self._idents is None:
            self._idents = set(ident_tokens(self.folded_text))
        return self._idents

    def count(self, word: str) -> int:
        if not self.counts:
            for token in self.folded:
                self.counts[token] = self.counts.get(token, 0) + 1
        return self.counts.get(word, 0)

    def close_terms(self, word: str, budget: int) -> list[tuple[int, str]]:
        """``(edits, token)`` of the text's tokens within ``budget`` of ``word`` (digit rule included)."""
        if mixed_key(word) is None:  # plain OSA distance: compared in C
            found = process.extract(
                word, self.folded_set, scorer=OSA.distance, score_cutoff=budget, limit=None
            )
            return [(int(distance), token) for token, distance, _ in found]
        return [(d, t) for t in self.folded_set if (d := typo_match(word, t, budget)) is not None]

    def closest(self, word: str, budget: int) -> int | None:
        """The fewest edits from ``word`` to a token of the text within ``budget`` (digit rule
        included), else ``None``."""
        if mixed_key(word) is None:  # plain OSA distance: compared in C
            found = process.extractOne(word, self.folded_set, scorer=OSA.distance, score_cutoff=budget)
            return None if found is None else int(found[1])
        # A token of letters only has no digit skeleton: never a neighbour of a word with digits.
        distances = [
            d for t in self.folded_set if not t.isalpha() and (d := typo_match(word, t, budget)) is not None
        ]
        return min(distances) if distances else None


def _plain_tier(raw: str, word: str, text: _Text, last: bool) -> float:
    if raw in text.exact:
        return TIER_EXACT
    if word in text.folded_set:
        return TIER_FOLDED
    best = 0.0
    if last and len(word) >= 3 and f" {word}" in text.joined:  # a token starts with it (found in C)
        best = max((extends(t, word) for t in text.folded_set), default=0.0)
        if best == TIER_PREFIX:
            return best
    if best < TIER_SUBSTRING and _inside(word, text):
        return TIER_SUBSTRING
    budget = fuzzy_budget(word)
    if budget and best < TIER_FUZZY:
        distance = text.closest(word, budget)
        if distance is not None:
            best = max(best, fuzzy_tier(distance))
    return best


def _inside(word: str, text: _Text) -> bool:
    """Whether ``word`` (3+ characters, not a token of ``text``) occurs inside a longer token."""
    return len(word) >= 3 and word in text.joined


def _compound_tier(raw: str, word: str, text: _Text) -> float:
    if word in text.idents:
        return TIER_EXACT if raw == word else TIER_FOLDED
    parts = WORD_RE.findall(word)
    if f" {' '.join(parts)} " in text.joined:
        return TIER_FOLDED
    if len(word) >= 3 and (best := max((extends(t, word) for t in text.idents), default=0.0)):
        return best
    if len(word) >= 3 and word_start_match(text.folded_text, word):
        return TIER_SUBSTRING  # from a later segment of a longer identifier or path on
    edits = _parts_in_a_row(parts, text)
    if edits is not None:
        return fuzzy_tier(edits)
    if parts and all(_plain_tier(p, p, text, False) for p in parts):
        return TIER_PARTS
    return 0.0


def _parts_in_a_row(parts: Sequence[str], text: _Text) -> int | None:
    """The fewest edits in all (at least one) with which ``parts`` are words of ``text`` in a row,
    each within its own typo budget (the digit rule included), else ``None``."""
    budgets = [fuzzy_budget(part) for part in parts]
    if len(parts) < 2 or not any(budgets):
        return None
    near: list[dict[str, int]] = []
    for part, budget in zip(parts, budgets, strict=True):
        found = {part: 0}
        if budget:
            found.update((token, edits) for edits, token in text.close_terms(part, budget) if token != part)
        near.append(found)
    if any(found.keys().isdisjoint(text.folded_set) for found in near):
        return None
    tokens, best = text.folded, None
    for start in range(len(tokens) - len(parts) + 1):
        total = 0
        for offset, found in enumerate(near):
            edits = found.get(tokens[start + offset])
            if edits is None:
                break
            total += edits
        else:
            if total and (best is None or total < best):
                best = total
    return best


def _cjk_tier(raw: str, word: str, text: _Text) -> float:
    if raw in text.exact:
        return TIER_EXACT
    if word in text.joined:  # inside a CJK run (runs are whole tokens, words have no spaces)
        return TIER_FOLDED
    return 0.0


def word_tier(raw: str, word: str, text: _Text, last: bool) -> float:
    if is_compound(word):
        return _compound_tier(raw, word, text)
    if is_cjk(word):
        return _cjk_tier(raw, word, text)
    return _plain_tier(raw, word, text, last)


def max_bonus(words: Sequence[str]) -> float:
    """The most the occurrence and field bonuses can add to a score."""
    return len(words) * (MAX_COUNTED - 1) * OCCURRENCE + FIELD_BONUS


def _phrase(seen: _Text, raw_words: Sequence[str], words: Sequence[str]) -> float:
    if len(words) > 1:
        if f" {' '.join(phrase_words(raw_words))} " in seen.exact_joined:
            return PHRASE_EXACT
        if f" {' '.join(phrase_words(words))} " in seen.joined:
            return PHRASE_FOLDED
    return 0.0


def _word_tiers(
    seen: _Text, raw_words: Sequence[str], words: Sequence[str], partial: bool = False
) -> list[float] | None:
    """Each word's tier in ``seen``; ``None`` as soon as one does not match (unless ``partial``)."""
    last = len(words) - 1
    tiers = []
    for index, (raw, word) in enumerate(zip(raw_words, words, strict=True)):
        tier = word_tier(raw, word, seen, index == last)
        if not tier and not partial:
            return None
        tiers.append(tier)
    return tiers


def score_text(
    text: str,
    raw_words: Sequence[str],
    words: Sequence[str],
    *,
    weight: float = 1.0,
    partial: bool = False,
    phrase: bool = True,
) -> float | None:
    """The score of ``text`` for the query, or ``None`` when it does not match (every word must,
    unless ``partial``, when at least one must). ``weight`` below 1 marks tool arguments;
    ``phrase=False`` leaves the phrase bonus out (OpenSearch looks for the phrase in message text
    only, not in tool arguments)."""
    seen = _Text.of(text)
    tiers = _word_tiers(seen, raw_words, words, partial)
    if tiers is None or not any(tiers):
        return None
    total = 0.0
    for tier, word in zip(tiers, words, strict=True):
        if tier:
            total += tier
            if not is_compound(word) and not is_cjk(word):
                total += OCCURRENCE * (min(seen.count(word), MAX_COUNTED) - 1 if seen.count(word) else 0)
    if phrase:
        total += _phrase(seen, raw_words, words)
    if weight >= 1.0:
        total += FIELD_BONUS
    return total


def text_reading(
    text: str, raw_words: Sequence[str], words: Sequence[str]
) -> tuple[float, tuple[str, ...]] | None:
    """The tier sum of ``text`` (the words' tiers plus the phrase bonus: its score without the
    occurrence and field bonuses) and the *reading* of the query it matches, or ``None`` when it
    does not match every word.

    The reading has, per query word whose tier is a typo tier, the closest term of ``text``
    (fewest edits, then alphabetical), or the word itself when it occurs inside a longer token (no
    edit: the word as a substring is one reading); else ``""``. ``planqs`` read as ``planes`` and
    read as ``plans`` are two readings, ``lback`` inside ``callback`` and inside ``fallback`` one;
    an entry matched without either has the reading of empty strings."""
    seen = _Text.of(text)
    tiers = _word_tiers(seen, raw_words, words)
    if tiers is None:
        return None
    out: list[str] = []
    for tier, word in zip(tiers, words, strict=True):
        term = ""
        if is_compound(word) or is_cjk(word):
            pass
        elif tier == TIER_SUBSTRING and _inside(word, seen):
            term = word
        elif tier in (TIER_FUZZY, TIER_FUZZY2):
            close = seen.close_terms(word, fuzzy_budget(word))
            term = min(close)[1] if close else ""
        out.append(term)
    return sum(tiers) + _phrase(seen, raw_words, words), tuple(out)


def reading_inside(
    text: str, raw_words: Sequence[str], words: Sequence[str], index: int, reading: str
) -> float | None:
    """The tier sum of ``text`` when query word ``index`` is read as ``reading`` (a whole word one
    edit from it) found inside a longer token: :data:`TIER_INSIDE` for that word, the others' tiers
    as :func:`score_text` gives them. ``None`` when ``text`` holds ``reading`` as a whole token (the
    typo tier has it), does not hold it inside a token, matches the typed word itself, or misses
    another word. No phrase bonus: the typed word is not a token of ``text``."""
    seen = _Text.of(text)
    if reading in seen.folded_set or not _inside(reading, seen):
        return None
    last = len(words) - 1
    total = 0.0
    for position, (raw, word) in enumerate(zip(raw_words, words, strict=True)):
        tier = word_tier(raw, word, seen, position == last)
        if position == index:
            if tier:
                return None
            tier = TIER_INSIDE
        elif not tier:
            return None
        total += tier
    return total


def typo_reading(text: str, raw_words: Sequence[str], words: Sequence[str]) -> tuple[str, ...]:
    """The reading of :func:`text_reading` (empty strings when ``text`` does not match)."""
    found = text_reading(text, raw_words, words)
    return found[1] if found is not None else ("",) * len(words)
