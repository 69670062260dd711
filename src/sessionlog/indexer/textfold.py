"""Accent and case folding shared by the projection, the query builder and the excerpts.

Mirrors what the OpenSearch ``sl_folded`` analyzer does (lowercase + asciifolding), so that the
Python side can find the first match in an original text and tokenise queries the same way the
index does. Pure; no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

__all__ = ["WORD_RE", "fold", "fold_with_offsets", "words"]

#: A word is a maximal run of letters, digits and combining marks (the index's ``pattern`` tokenizer
#: splits on everything else, so ``acct_9931`` is the two words ``acct`` and ``9931``).
WORD_RE: Final = re.compile(r"[^\W_]+", re.UNICODE)

#: Letters that have no Unicode decomposition but that Lucene's ASCIIFoldingFilter maps anyway.
_SPECIAL: Final = {
    "đ": "d", "Đ": "d", "ø": "o", "Ø": "o", "æ": "ae", "Æ": "ae", "ß": "ss", "ẞ": "ss",
    "ł": "l", "Ł": "l", "œ": "oe", "Œ": "oe", "þ": "th", "Þ": "th", "ð": "d", "Ð": "d",
    "ı": "i", "ħ": "h", "Ħ": "h", "ŧ": "t", "Ŧ": "t", "ŋ": "n", "Ŋ": "n", "ĸ": "q",
}


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    special = _SPECIAL.get(ch)
    if special is not None:
        return special
    if ch.isascii():
        return ch.lower()
    decomposed = unicodedata.normalize("NFKD", ch)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return stripped.lower()


def fold(text: str) -> str:
    """Lower-case and strip accents: ``"Đơn HÀNG"`` → ``"don hang"``."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


def fold_with_offsets(text: str) -> tuple[str, list[int]]:
    """Fold ``text`` and return, for each folded character, the index of its source character."""
    out: list[str] = []
    offsets: list[int] = []
    for index, ch in enumerate(text):
        folded = _fold_char(ch)
        out.append(folded)
        offsets.extend([index] * len(folded))
    return "".join(out), offsets


def words(text: str) -> list[str]:
    """Folded query words, de-duplicated in first-occurrence order."""
    seen: dict[str, None] = {}
    for match in WORD_RE.finditer(unicodedata.normalize("NFC", text)):
        word = fold(match.group())
        if word:
            seen.setdefault(word, None)
    return list(seen)
