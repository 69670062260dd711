"""The OpenSearch analysis of the events and sessions indices: tokenizers, token filters and
analyzers. Pure; no I/O.

Words and identifiers are split exactly as :mod:`backscroll.indexer.textfold` splits them (the
provider scores and excerpts with that module), by ``simple_pattern`` tokenizers: Lucene runs their
patterns as automata, one step per character. Their character classes are the code points
``textfold``'s own patterns match (:func:`~backscroll.indexer.textfold.word_class_ranges`).

Java ``pattern`` tokenizers with Unicode property classes (``[\\p{L}\\p{N}\\p{M}&&[...]]``) did the
same split before; they took 47 % of OpenSearch's CPU to index the benchmark corpus (about 40
against 21 CPU s for 272,000 entries, docs/benchmarks.md). Indices made with them split text the same way,
but for a few combining marks inside the CJK ranges, so they are searched as they are.

Code points this Python's Unicode database does not know (category ``Cn``) between two ranges of
a class join them, so the automata have 273 ranges instead of 757 (a character assigned later
inside a script's blocks is a letter of it far more often than not). Lucene builds each analyzer's
matcher by stepping every state through every range boundary, so this makes creating or opening
an index take about 0.18 s instead of 0.73 s, and a thread's first use of an analyzer 18 ms
instead of 70. Every character the database knows is classed as ``textfold`` classes it.
"""

from __future__ import annotations

import copy
import unicodedata
from functools import lru_cache
from typing import Any

from backscroll.indexer.textfold import CJK_RANGES, Ranges, word_class_ranges

__all__ = ["analysis_settings"]


def _lucene_class(ranges: Ranges) -> str:
    """A character class of Lucene's regular expressions: every endpoint is a letter, digit or
    mark, never one of the syntax's own characters, so none needs escaping."""
    return "[" + "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges) + "]"


def _in_cjk(cp: int) -> bool:
    return any(first <= cp <= last for first, last in CJK_RANGES)


def _bridged(ranges: Ranges) -> Ranges:
    """``ranges`` with each gap of unassigned code points between two of them filled (never across
    the border of the CJK ranges, so a CJK run and another one still split)."""
    out: list[tuple[int, int]] = []
    for first, last in ranges:
        if out:
            gap = range(out[-1][1] + 1, first)
            cjk = _in_cjk(first)
            if all(unicodedata.category(chr(cp)) == "Cn" and _in_cjk(cp) == cjk for cp in gap):
                out[-1] = (out[-1][0], last)
                continue
        out.append((first, last))
    return tuple(out)


@lru_cache(maxsize=1)
def _analysis() -> dict[str, Any]:
    word, cjk, word_start = (_lucene_class(_bridged(ranges)) for ranges in word_class_ranges())
    return {
        "tokenizer": {
            # Runs of CJK characters, or of other letters, digits and marks (textfold.WORD_RE,
            # which tries a CJK run first: a run of the other kind starts with no CJK character).
            "sl_words": {"type": "simple_pattern", "pattern": f"{cjk}+|{word_start}{word}*"},
            # Identifiers: words joined by _ . - : (textfold.IDENT_RE). An automaton has no
            # look-behind, and one that failed inside a long word would try again at each of its
            # characters (a 1 MiB token: 10^12 steps). So it takes every word whole, joined or not,
            # which starts it only where a word starts; the ``sl_joined`` filter then drops the
            # plain ones.
            "sl_idents": {"type": "simple_pattern", "pattern": f"{word}+([_.:\\-]{word}+)*"},
        },
        "filter": {
            # Lucene refuses a term over 32,766 bytes ("immense term"): a 1 MiB hex blob in a tool
            # output must not make its entry unindexable. The full text stays in _source.
            "sl_truncate": {"type": "truncate", "length": 256},
            "sl_fold": {"type": "asciifolding", "preserve_original": False},
            "sl_trigram": {"type": "ngram", "min_gram": 3, "max_gram": 3},
            "sl_cjk_only": {"type": "keep_types", "types": ["<DOUBLE>", "<SINGLE>"]},
            # Words with digits become "skeleton|letters" (python3 → a3|python, textfold.mixed_key), so
            # a fuzzy query with the skeleton as its exact prefix tolerates typos in the letters only.
            # Words without digits, or without anything else, are dropped (emptied, then removed).
            "sl_mixed_no_digit": {"type": "pattern_replace", "pattern": "^\\P{Nd}*$", "replacement": ""},
            "sl_mixed_all_digits": {"type": "pattern_replace", "pattern": "^\\p{Nd}*$", "replacement": ""},
            "sl_non_empty": {"type": "length", "min": 1},
            # The identifiers tokenizer also yields plain words (see above): they are dropped here.
            "sl_joined": {"type": "pattern_replace", "pattern": "^[^_.:\\-]*$", "replacement": ""},
            "sl_mixed_twice": {"type": "pattern_replace", "pattern": "^(.*)$", "replacement": "$1|$1"},
            "sl_mixed_skeleton": {
                "type": "pattern_replace",
                "pattern": "[^\\p{Nd}|]+(?=.*\\|)",
                "replacement": "a",
            },
            "sl_mixed_letters": {
                "type": "pattern_replace",
                "pattern": "\\p{Nd}+(?!.*\\|)",
                "replacement": "",
            },
        },
        "analyzer": {
            "sl_folded": {
                "type": "custom",
                "tokenizer": "sl_words",
                "filter": ["sl_truncate", "cjk_width", "lowercase", "sl_fold"],
            },
            "sl_exact": {
                "type": "custom",
                "tokenizer": "sl_words",
                "filter": ["sl_truncate", "cjk_width", "lowercase"],
            },
            "sl_trigram": {
                "type": "custom",
                "tokenizer": "sl_words",
                "filter": ["sl_truncate", "cjk_width", "lowercase", "sl_fold", "sl_trigram"],
            },
            "sl_ident": {
                "type": "custom",
                "tokenizer": "sl_idents",
                "filter": ["sl_joined", "sl_non_empty", "sl_truncate", "lowercase", "sl_fold"],
            },
            "sl_cjk": {
                "type": "custom",
                "tokenizer": "standard",
                "filter": ["cjk_width", "lowercase", "cjk_bigram", "sl_cjk_only"],
            },
            "sl_mixed": {
                "type": "custom",
                "tokenizer": "sl_words",
                "filter": [
                    "sl_truncate",
                    "lowercase",
                    "sl_fold",
                    "sl_mixed_no_digit",
                    "sl_mixed_all_digits",
                    "sl_non_empty",
                    "sl_mixed_twice",
                    "sl_mixed_skeleton",
                    "sl_mixed_letters",
                ],
            },
        },
    }


def analysis_settings() -> dict[str, Any]:
    """The ``analysis`` settings of the events and sessions indices (a fresh copy each call). The
    first call in a process reads the character classes off ``textfold``: about half a second."""
    return copy.deepcopy(_analysis())
