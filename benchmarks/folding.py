"""Text folding and the containment rule that defines ground truth.

Every system in the benchmark sees the same folded text and the ground truth uses the same rule, so
differences in the numbers come from matching and ranking, not from normalisation.

Folding is the query side's: ASCII folding that also maps the letters that
have no Unicode decomposition (đ→d, ø→o, æ→ae, ß→ss, ł→l, þ→th, œ→oe, ı→i), then lower case. It is
what OpenSearch's ``asciifolding`` + ``lowercase`` filters do for the scripts the corpus holds.

Containment, the definition of "an entry contains a query word":

* text and word are both folded;
* a word of 3 or more characters matches anywhere inside a token ("rev" is in "revenue", "9931" is in
  "acct_9931");
* a word of 1 or 2 characters must equal a whole token ("ai" is not in "braid");
* a token is a maximal run of ``\\w`` characters (letters, digits, underscore), so snake_case names and
  ``acct_9931`` stay one token while dots, hyphens and spaces split.

Query words are themselves runs of ``\\w`` characters, so for words of 3+ characters "inside a token"
is the same as "a substring of the folded text": an occurrence of a ``\\w``-only string can never
straddle a separator. That makes ground truth a plain ``in`` test.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = ["TOKEN_RE", "contains_all", "contains_word", "fold", "fold_words", "strip_accents", "tokens"]

TOKEN_RE = re.compile(r"\w+")

# Letters that NFKD leaves alone; upper and lower case both listed so that ``strip_accents`` keeps case.
_SPECIAL = str.maketrans(
    {
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "Ð": "D",
        "ø": "o",
        "Ø": "O",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ß": "ss",
        "ẞ": "SS",
        "ł": "l",
        "Ł": "L",
        "þ": "th",
        "Þ": "TH",
        "ı": "i",
        "ħ": "h",
        "Ħ": "H",
        "ŧ": "t",
        "Ŧ": "T",
    }
)


@lru_cache(maxsize=1 << 16)
def _strip_word(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.translate(_SPECIAL))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def strip_accents(text: str) -> str:
    """Remove accents but keep case: "Nguyễn Đơn" → "Nguyen Don"."""
    if text.isascii():
        return text
    return _strip_word(text) if len(text) < 64 else _strip_long(text)


def _strip_long(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_SPECIAL))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def fold(text: str) -> str:
    """Accent- and case-fold: "Straße in Łódź" → "strasse in lodz"."""
    return strip_accents(text).lower()


def tokens(folded: str) -> list[str]:
    """Tokens of an already folded text."""
    return TOKEN_RE.findall(folded)


def contains_word(folded_text: str, folded_word: str) -> bool:
    """The containment of one folded word in one folded text (see the module docstring)."""
    if len(folded_word) >= 3:
        return folded_word in folded_text
    return folded_word in set(tokens(folded_text))


def contains_all(folded_text: str, folded_words: Iterable[str]) -> bool:
    return all(contains_word(folded_text, w) for w in folded_words)


def fold_words(words: Sequence[str]) -> list[str]:
    return [fold(w) for w in words]
