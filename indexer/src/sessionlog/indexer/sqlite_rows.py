"""The text rows of the embedded projection (pure): what an event's text becomes in the full-text
tables of :mod:`sessionlog.indexer.sqlite_schema`, and the ``events.time_us`` of its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from sessionlog.indexer.textfold import cjk_grams, fold, ident_tokens, is_cjk, word_tokens

__all__ = ["MAX_TERM_CHARS", "TextRows", "index_tokens", "text_rows", "time_us"]

#: Longest vocabulary term kept for typo candidates (query words are cut at 64 characters, and
#: a term may be up to two edits longer).
MAX_TERM_CHARS: Final = 66
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def index_tokens(text: str) -> list[str]:
    """The folded words of ``text`` in order, exactly as :func:`sessionlog.query.scoring.score_text`
    sees them (``fold(text.lower())`` split on non-word characters)."""
    return word_tokens(fold(text.lower()))


@dataclass(frozen=True, slots=True)
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


def time_us(iso: str) -> int:
    """Microseconds since the epoch of an RFC 3339 time (sorts instants, not strings)."""
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)
