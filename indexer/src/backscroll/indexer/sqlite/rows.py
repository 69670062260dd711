"""The text rows of the embedded projection (pure): what an event's text becomes in the full-text
tables of :mod:`backscroll.indexer.sqlite.schema`, the vocabulary rows of new terms, and the
``events.time_us`` of its time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

from backscroll.indexer.textfold import cjk_grams, fold, ident_tokens, is_cjk, word_tokens
from backscroll.indexer.values import value_type

__all__ = [
    "MAX_TERM_CHARS",
    "KnownTerms",
    "TextRows",
    "VocabRow",
    "index_tokens",
    "terms_by_workspace",
    "text_rows",
    "time_us",
    "vocab_rows",
]

#: Longest vocabulary term kept for typo candidates (query words are cut at 64 characters, and
#: a term may be up to two edits longer).
MAX_TERM_CHARS: Final = 66
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)
_NONE: Final[frozenset[str]] = frozenset()

#: A ``vocab`` row: workspace, term, its length, the term reversed.
VocabRow = tuple[str, str, int, str]


def index_tokens(text: str) -> list[str]:
    """The folded words of ``text`` in order, exactly as :func:`backscroll.query.scoring.score_text`
    sees them (``fold(text.lower())`` split on non-word characters)."""
    return word_tokens(fold(text.lower()))


@value_type
class TextRows:
    """What the full-text tables hold for one text (``""``: no row)."""

    tokens: list[str]
    words: str
    idents: str
    cjk: str


def text_rows(text: str) -> TextRows:
    """The bodies of an event's ``events_words``/``events_tri``, ``events_ident`` and ``events_cjk``
    rows (deterministic: a contentless row is deleted by writing the same body again)."""
    folded = fold(text.lower())
    tokens = word_tokens(folded)  # index_tokens(text), without folding the text twice
    idents = list(dict.fromkeys(ident_tokens(folded)))
    runs = [] if folded.isascii() else [t for t in tokens if is_cjk(t)]
    cjk = ""
    if runs:
        singles = dict.fromkeys(ch for run in runs for ch in run)
        cjk = " 0 ".join(" ".join(cjk_grams(run)) for run in runs) + " 0 " + " ".join(singles)
    return TextRows(tokens, " ".join(tokens), f" {' '.join(idents)} " if idents else "", cjk)


def terms_by_workspace(texts: Iterable[tuple[str, TextRows]]) -> dict[str, set[str]]:
    """The words of each workspace's texts (``(workspace, rows)`` pairs)."""
    by_ws: dict[str, set[str]] = {}
    for ws, rows in texts:
        by_ws.setdefault(ws, set()).update(rows.tokens)
    return by_ws


def vocab_rows(terms: Mapping[str, set[str]]) -> list[VocabRow]:
    """The ``vocab`` rows of each workspace's terms."""
    return [(ws, term, len(term), term[::-1]) for ws, fresh in terms.items() for term in fresh]


class KnownTerms:
    """The vocabulary a writer knows to be stored, by workspace, so that a batch sends only its
    new terms. Bounded: past ``limit`` terms it starts again from nothing (a term sent twice is
    ignored by the table's unique index, so forgetting costs only a resend)."""

    def __init__(self, limit: int = 500_000) -> None:
        self.limit = limit
        self._terms: dict[str, set[str]] = {}
        self._count = 0

    def unseen(
        self, by_ws: Mapping[str, set[str]], pending: Mapping[str, set[str]] | None = None
    ) -> dict[str, set[str]]:
        """The terms of each workspace neither known nor in ``pending`` (terms already written by
        an open transaction), leaving out those longer than :data:`MAX_TERM_CHARS`."""
        unseen: dict[str, set[str]] = {}
        for ws, terms in by_ws.items():
            fresh = terms - self._terms.get(ws, _NONE)
            if pending is not None:
                fresh -= pending.get(ws, _NONE)
            fresh = {term for term in fresh if len(term) <= MAX_TERM_CHARS}
            if fresh:
                unseen[ws] = fresh
        return unseen

    def learn(self, stored: Mapping[str, set[str]]) -> None:
        """Terms now known to be stored (or sent in a transaction that will store them)."""
        added = sum(len(terms) for terms in stored.values())
        if self._count + added > self.limit:
            self.forget()
        for ws, terms in stored.items():
            self._terms.setdefault(ws, set()).update(terms)
        self._count += added

    def forget(self) -> None:
        """Know nothing (the table may have been emptied by another process)."""
        self._terms.clear()
        self._count = 0


def time_us(iso: str) -> int:
    """Microseconds since the epoch of an RFC 3339 time (sorts instants, not strings)."""
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND
