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


def _mark_class() -> str:
    """A regex character class of every combining mark (Unicode categories Mn, Mc, Me)."""
    ranges: list[tuple[int, int]] = []
    # Marks live in planes 0 and 1 (and the variation selectors of plane 14); scanning only those
    # keeps the import fast.
    for cp in (*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)):
        if unicodedata.category(chr(cp)).startswith("M"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(f"\\U{a:08x}-\\U{b:08x}" if a != b else f"\\U{a:08x}" for a, b in ranges)


#: A word is a maximal run of letters, digits and combining marks, like the index's ``pattern``
#: tokenizer (``[^\\p{L}\\p{N}\\p{M}]+`` splits), so ``acct_9931`` is ``acct`` and ``9931`` and a
#: Devanagari word keeps its vowel signs.
WORD_RE: Final = re.compile(f"(?:[^\\W_]|[{_mark_class()}])+", re.UNICODE)

#: Letters that have no Unicode decomposition but that Lucene's ASCIIFoldingFilter maps anyway.
_SPECIAL: Final = {
    "đ": "d",
    "Đ": "d",
    "ø": "o",
    "Ø": "o",
    "æ": "ae",
    "Æ": "ae",
    "ß": "ss",
    "ẞ": "ss",
    "ł": "l",
    "Ł": "l",
    "œ": "oe",
    "Œ": "oe",
    "þ": "th",
    "Þ": "th",
    "ð": "d",
    "Ð": "d",
    "ı": "i",
    "ħ": "h",
    "Ħ": "h",
    "ŧ": "t",
    "Ŧ": "t",
    "ŋ": "n",
    "Ŋ": "n",
    "ĸ": "q",
}


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    special = _SPECIAL.get(ch)
    if special is not None:
        return special
    if ch.isascii():
        return ch.lower()
    # Like Lucene's ASCIIFoldingFilter: fold only what has an ASCII equivalent (é → e, ﬁ → fi);
    # leave other scripts and standalone marks alone (the index does not fold them either).
    decomposed = unicodedata.normalize("NFKD", ch)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    if stripped and stripped.isascii():
        return stripped.lower()
    return ch.lower()


def _folded_pieces(text: str) -> list[str]:
    """The fold of each character; a combining mark after a letter that folded to ASCII (a
    decomposed ``e`` + U+0301) is dropped like the accent of a precomposed ``é``."""
    out: list[str] = []
    ascii_before = False
    for ch in text:
        if ascii_before and unicodedata.combining(ch):
            out.append("")
            continue
        folded = _fold_char(ch)
        out.append(folded)
        ascii_before = bool(folded) and folded.isascii() and folded.isalnum()
    return out


def fold(text: str) -> str:
    """Lower-case and strip accents: ``"Đơn HÀNG"`` → ``"don hang"``."""
    if text.isascii():
        return text.lower()
    return "".join(_folded_pieces(text))


def fold_with_offsets(text: str) -> tuple[str, list[int]]:
    """Fold ``text`` and return, for each folded character, the index of its source character."""
    offsets: list[int] = []
    pieces = _folded_pieces(text)
    for index, folded in enumerate(pieces):
        offsets.extend([index] * len(folded))
    return "".join(pieces), offsets


def words(text: str) -> list[str]:
    """Folded query words, de-duplicated in first-occurrence order."""
    seen: dict[str, None] = {}
    for match in WORD_RE.finditer(unicodedata.normalize("NFC", text)):
        word = fold(match.group())
        if word:
            seen.setdefault(word, None)
    return list(seen)
