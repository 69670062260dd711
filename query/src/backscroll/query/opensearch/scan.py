"""Small scopes are scored here, not by the server: the OpenSearch engine's plan by scope size. Pure.

A fuzzy query expands over the shard's whole term dictionary, however few entries the scope holds:
routing a session search to one shard does not make its typo tiers cheaper, and they are most of
the server's time. A session holds tens of entries. When the scope is one session (or a set of
sessions), the engine asks for its entries instead (filters only, their whole ``_source``, which
the server sends faster than a filtered one, in the same ``_msearch`` as the count), at most
:data:`SCAN_MAX_ROWS` + 1 of them, and scores each with
:func:`~backscroll.query.scoring.score_text`, the ranking the server's tiers compute
(:mod:`backscroll.query.opensearch.body`). A scope holding more entries, or more than
:data:`~backscroll.query.scan.SCAN_MAX_CHARS` characters of text, is searched by the index
in a second request, and remembered (:class:`Oversized`) so that its next searches go to the index
at once.

Where the two plans can differ, the scan follows the tiers' definition: the server's substring
tier asks for the word's trigrams anywhere in the entry (not necessarily in one token), and a typo
expands to at most 128 terms of the shard's dictionary per field.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from rapidfuzz import process
from rapidfuzz.distance import OSA

from backscroll.indexer.textfold import fold, mixed_key, word_tokens
from backscroll.query.plan import QueryPlan
from backscroll.query.scan import ARGS_WEIGHT, SCAN_MAX_CHARS, may_match, needle
from backscroll.query.scoring import fuzzy_budget, is_compound, score_text, typo_match

__all__ = ["SCAN_MAX_ROWS", "Oversized", "candidates", "fits", "scan_top"]

#: Most entries a scope may hold to be scored here. Fetching an entry costs the server ~20 µs (a
#: session's entries are spread over the shard's stored-field blocks) and the provider ~12 µs; the
#: index path costs ~8-10 ms whatever the session, so the plans cross near 200 entries (measured with
#: ``benchmarks.bench_os_scan``).
SCAN_MAX_ROWS: Final = 200
_CHECK_EVERY: Final = 128
_REMEMBERED: Final = 4096


def _text(source: dict[str, Any]) -> tuple[str, bool]:
    """The entry's text and whether it is message text (else a tool call's arguments)."""
    text = source.get("text")
    if text is not None:
        return str(text), True
    return str(source.get("args") or ""), False


#: Keys under which a scanned hit keeps what every scoring of it reads again (one search scores
#: the same entries for its page, its window of readings and each reading's lookup).
_PREPARED: Final = "backscroll.prepared"
_TOKENS: Final = "backscroll.tokens"


def _prepared(entry: dict[str, Any]) -> tuple[str, bool, str, str]:
    """The entry's text, whether it is message text, and the text lower-cased and folded."""
    found: tuple[str, bool, str, str] | None = entry.get(_PREPARED)
    if found is None:
        text, message = _text(entry["_source"])
        lowered = text.lower()
        found = entry[_PREPARED] = (text, message, lowered, fold(lowered))
    return found


def fits(entries: Sequence[dict[str, Any]], max_rows: int) -> bool:
    """Whether the entries of a scope (hits of :func:`~backscroll.query.opensearch.body.scan_body` asked
    for ``max_rows + 1``) are all of it and small enough to score here."""
    if len(entries) > max_rows:
        return False
    return sum(len(_text(entry["_source"])[0]) for entry in entries) <= SCAN_MAX_CHARS


def _tokens(lowered: str, folded: str) -> set[str]:
    """The tokens the tiers compare a plain or CJK query word with: the entry's folded words, and
    its lower-cased words where folding changes them (the exact tier)."""
    if lowered.isascii():
        return set(word_tokens(folded))
    return set(word_tokens(folded)).union(word_tokens(lowered))


def candidates(raw: str, word: str, vocabulary: Sequence[str]) -> set[str] | None:
    """The tokens of ``vocabulary`` through which an entry can match the query word (``raw`` as
    typed, ``word`` folded) in any tier, or ``None`` when there is no such token-level test (an
    identifier's tiers look at identifiers and phrases of its parts).

    Every tier of a plain or CJK word compares it with one token: the same token (exact, folded),
    a token it starts or is inside of (prefix, substring, a CJK word inside a run), or a token
    within its typo budget; so an entry holding none of these tokens cannot match the word."""
    if is_compound(word):
        return None
    found = {token for token in vocabulary if word in token}
    found.add(raw)
    budget = fuzzy_budget(word)
    if budget:
        if mixed_key(word) is None:  # plain OSA distance: compared in C
            close = process.extract(word, vocabulary, scorer=OSA.distance, score_cutoff=budget, limit=None)
            found.update(token for token, _, _ in close)
        else:
            found.update(t for t in vocabulary if not t.isalpha() and typo_match(word, t, budget) is not None)
    return found


def scan_top(
    entries: Sequence[dict[str, Any]],
    plan: QueryPlan,
    partial: bool,
    need: int,
    check: Callable[[], None],
    skip: frozenset[str] = frozenset(),
) -> list[tuple[dict[str, Any], float]]:
    """The best ``need`` of ``entries`` (hits of :func:`~backscroll.query.opensearch.body.scan_body`) for
    ``plan``, with their scores, in the server's order: score, then seq descending, then session.

    Entries that pass the substring test of :func:`~backscroll.query.scan.may_match` are
    tokenized; each query word's :func:`candidates` among their tokens are found once, and only the
    entries holding one for every word (``partial``: for one) are scored. Scores are compared to four
    decimals: the server sums its tiers in float32, so two entries with the same tiers must tie
    (and fall to recency) whatever order the sums were made in. Entries holding a word of
    ``skip`` are left out."""
    needles = [needle(word) for word in plan.words]
    kept: list[tuple[int, str, bool, set[str]]] = []
    for i, entry in enumerate(entries):
        if i % _CHECK_EVERY == 0:
            check()
        text, message, lowered, folded = _prepared(entry)
        if may_match(folded, needles, partial):  # a substring test, before any tokenizing
            tokens = entry.get(_TOKENS)
            if tokens is None:
                tokens = entry[_TOKENS] = _tokens(lowered, folded)
            kept.append((i, text, message, tokens))
    vocabulary = list(set().union(*(tokens for *_, tokens in kept)))
    wanted = [candidates(raw, word, vocabulary) for raw, word in zip(plan.raw_words, plan.words, strict=True)]
    scored: list[tuple[float, int, str, int, float]] = []
    for n, (i, text, message, tokens) in enumerate(kept):
        if n % _CHECK_EVERY == 0:
            check()
        if skip and not skip.isdisjoint(tokens):
            continue
        found = (words is None or not words.isdisjoint(tokens) for words in wanted)
        if not (any(found) if partial else all(found)):
            continue
        score = score_text(
            text,
            plan.raw_words,
            plan.words,
            weight=1.0 if message else ARGS_WEIGHT,
            partial=partial,
            phrase=message,
        )
        if score is not None:
            source = entries[i]["_source"]
            scored.append((-round(score, 4), -int(source["seq"]), str(source["session_id"]), i, score))
    scored.sort()
    return [(entries[i], score) for *_, i, score in scored[:need]]


class Oversized:
    """The scopes found too big to score here (most recent :data:`_REMEMBERED`): their searches go
    to the index without asking for their entries first. Thread-safe."""

    def __init__(self, size: int = _REMEMBERED) -> None:
        self._size = size
        self._keys: OrderedDict[Hashable, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            if key not in self._keys:
                return False
            self._keys.move_to_end(key)
            return True

    def add(self, key: Hashable) -> None:
        with self._lock:
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self._size:
                self._keys.popitem(last=False)
