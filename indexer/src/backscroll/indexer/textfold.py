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

__all__ = [
    "CJK_RANGES",
    "IDENT_RE",
    "QUERY_TOKEN_RE",
    "WORD_RE",
    "cjk_grams",
    "fold",
    "fold_with_offsets",
    "ident_tokens",
    "is_cjk",
    "mixed_key",
    "word_class_ranges",
    "word_start_match",
    "word_tokens",
    "words",
]

#: Inclusive code point ranges.
Ranges = tuple[tuple[int, int], ...]


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


#: Han, Hiragana, Katakana and Hangul (with their compatibility and half-width forms). These
#: scripts write no spaces between words: a run of them is one token, searched inside by character
#: bigrams. The OpenSearch analysis (``backscroll.indexer.document``) uses the same ranges.
CJK_RANGES: Final[tuple[tuple[int, int], ...]] = (
    (0x1100, 0x11FF),
    (0x2E80, 0x2FDF),
    (0x3005, 0x3005),
    (0x3007, 0x3007),
    (0x3021, 0x3029),
    (0x3038, 0x303B),
    (0x3041, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFFDC),
    (0x20000, 0x3FFFF),
)
_CJK: Final = "".join(f"\\U{a:08x}-\\U{b:08x}" if a != b else f"\\U{a:08x}" for a, b in CJK_RANGES)
_MARKS: Final = _mark_class()
#: A letter, digit or mark that is not CJK; one that is.
_W: Final = f"(?:[^\\W_{_CJK}]|[{_MARKS}])"
_C: Final = f"(?:(?=[^\\W_]|[{_MARKS}])[{_CJK}])"

#: A word is a maximal run of CJK characters, or of other letters, digits and combining marks, like
#: the index's ``pattern`` tokenizer, so ``acct_9931`` is ``acct`` and ``9931``, ``用Python写`` is
#: ``用``, ``Python``, ``写``, and a Devanagari word keeps its vowel signs.
WORD_RE: Final = re.compile(f"{_C}+|{_W}+", re.UNICODE)
#: An identifier: words joined by ``_ . - :`` (``get_type``, ``types.Mapping``, ``2.2.1-3``), kept
#: whole by the index next to its parts.
IDENT_RE: Final = re.compile(f"(?<!{_W}){_W}+(?:[_.:\\-]{_W}+)+", re.UNICODE)
#: What a query is split into: identifiers and paths whole (words joined by ``_ . - : /``), else
#: words.
QUERY_TOKEN_RE: Final = re.compile(f"{_W}+(?:[_.:\\-/]{_W}+)*|{_C}+", re.UNICODE)
_CJK_RE: Final = re.compile(f"{_C}+")


@lru_cache(maxsize=1)
def word_class_ranges() -> tuple[Ranges, Ranges, Ranges]:
    """The code points of the classes :data:`WORD_RE` and :data:`IDENT_RE` are made of: a word
    character that is not CJK, a CJK one, and those a run of the first kind can start with (a few
    combining marks are of both kinds, and ``WORD_RE`` tries a CJK run first).

    The OpenSearch tokenizers are built from them (:mod:`backscroll.indexer.opensearch.analysis`), so the
    index splits text exactly as this module does, with this Python's Unicode database. Read off
    the patterns themselves over every code point: about half a second, once per process."""
    every = "".join(map(chr, range(0x110000)))

    def runs(char_class: str) -> Ranges:
        return tuple((m.start(), m.end() - 1) for m in re.finditer(f"(?:{char_class})+", every))

    word, cjk = runs(_W), runs(_C)
    in_cjk = bytearray(0x110000)
    for first, last in cjk:
        in_cjk[first : last + 1] = b"\x01" * (last - first + 1)
    word_start = tuple(
        (first + m.start(), first + m.end() - 1)
        for first, last in word
        for m in re.finditer(rb"\x00+", in_cjk[first : last + 1])
    )
    return word, cjk, word_start


# Over ASCII text (no marks, no CJK there) the words are the runs of letters and digits, which
# ``str.split`` finds once every other character is a space, and the identifiers this pattern: ten
# times faster than the Unicode classes above.
_ASCII_NON_WORD_TO_SPACE: Final = str.maketrans(
    {chr(i): chr(i) if chr(i).isalnum() else " " for i in range(128)}
)
_ASCII_IDENT_RE: Final = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[_.:\-][A-Za-z0-9]+)+")
# Every identifier holds a joiner between two word characters: a text without one has none, and
# most texts are told so by one scan (on the benchmark corpus: 40 % less time than the pattern alone).
_ASCII_JOINED_RE: Final = re.compile(r"[A-Za-z0-9][_.:\-][A-Za-z0-9]")


def _ascii_spaced(text: str) -> str | None:
    """``text`` with each non-ASCII character as a space when none of them is a word character
    (dashes, quotes, symbols, emoji): the words and identifiers of both are the same, and the ASCII
    patterns find them ten times faster. None when one is (a letter, a digit, a mark, CJK)."""
    if WORD_RE.search("".join(_NON_ASCII.findall(text))):
        return None
    return _NON_ASCII.sub(" ", text)


def word_tokens(text: str) -> list[str]:
    """``WORD_RE.findall(text)``, faster on ASCII text."""
    if not text.isascii():
        spaced = _ascii_spaced(text)
        if spaced is None:
            return WORD_RE.findall(text)
        text = spaced
    return text.translate(_ASCII_NON_WORD_TO_SPACE).split()


def ident_tokens(text: str) -> list[str]:
    """``IDENT_RE.findall(text)``, faster on ASCII text."""
    if not text.isascii():
        spaced = _ascii_spaced(text)
        if spaced is None:
            return IDENT_RE.findall(text)
        text = spaced
    return _ASCII_IDENT_RE.findall(text) if _ASCII_JOINED_RE.search(text) else []


@lru_cache(maxsize=256)
def _at_word_start(fragment: str) -> re.Pattern[str]:
    return re.compile(f"(?<!{_W}){re.escape(fragment)}", re.UNICODE)


def word_start_match(text: str, fragment: str) -> re.Match[str] | None:
    """The first occurrence of ``fragment`` in ``text`` where no word character comes before it:
    at the start of a word, so ``parse_he`` is at the start of a segment of ``self.parse_header``
    and never inside ``reparse_header``."""
    return _at_word_start(fragment).search(text)


_HALFWIDTH: Final = range(0xFF61, 0xFFDD)


def is_cjk(word: str) -> bool:
    """Whether ``word`` is a run of CJK characters (searched inside by bigrams)."""
    return bool(word) and _CJK_RE.fullmatch(word) is not None


def cjk_grams(run: str) -> list[str]:
    """The character bigrams of a CJK run (a lone character is its own gram), like OpenSearch's
    ``cjk_bigram``."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def mixed_key(token: str) -> tuple[str, str] | None:
    """``(digit skeleton, letters)`` of a folded token holding both digits and other characters
    (``python3`` → ``("a3", "python")``), else ``None``. Typos are tolerated in the letters only:
    two tokens are typo neighbours when their skeletons are equal (the digits match exactly)."""
    if token.isalpha():  # the common case, decided in C
        return None
    has_digit = any(ch.isdecimal() for ch in token)
    if not has_digit or all(ch.isdecimal() for ch in token):
        return None
    return re.sub(r"\D+", "a", token), re.sub(r"\d+", "", token)


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
    if ord(ch) in _HALFWIDTH:  # half-width katakana and hangul, like OpenSearch's cjk_width
        return unicodedata.normalize("NFKC", ch)
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
    return _fold_run(text, False)


def _fold_run(text: str, ascii_before: bool) -> list[str]:
    out: list[str] = []
    for ch in text:
        if ascii_before and unicodedata.combining(ch):
            out.append("")
            continue
        folded = _fold_char(ch)
        out.append(folded)
        ascii_before = bool(folded) and folded.isascii() and folded.isalnum()
    return out


_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]+")


def fold(text: str) -> str:
    """Lower-case and strip accents: ``"Đơn HÀNG"`` → ``"don hang"``."""
    if text.isascii():
        return text.lower()
    # ASCII runs fold with str.lower; only the other characters go one by one (_folded_pieces).
    out: list[str] = []
    at = 0
    for run in _NON_ASCII.finditer(text):
        before = text[at : run.start()]
        out.append(before.lower())
        out.extend(_fold_run(run.group(), bool(before) and before[-1].isalnum()))
        at = run.end()
    out.append(text[at:].lower())
    return "".join(out)


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
