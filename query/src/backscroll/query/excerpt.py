"""Match-centred excerpts. Pure.

The excerpt is centred on the first match (about a third of the budget before it), whitespace runs
are collapsed to one space, "…" marks each cut side, the result never exceeds ``budget`` UTF-8
bytes and never splits a code point; case and accents are preserved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backscroll.indexer.textfold import fold, fold_with_offsets, is_cjk

__all__ = ["ELLIPSIS", "excerpt", "first_match"]

ELLIPSIS = "…"
_ELLIPSIS_BYTES = len(ELLIPSIS.encode("utf-8"))
_SPACE = re.compile(r"\s+")


def first_match(text: str, words: Sequence[str], hints: Sequence[str] = ()) -> tuple[int, int]:
    """Character span of the earliest occurrence of any query word (folded), else of any hint.

    Words of 3+ characters and CJK words match inside tokens; shorter ones only as whole tokens,
    and an identifier as itself (``get_t`` inside ``get_type``). Hints are
    the surface forms the index highlighted (e.g. the stored spelling a fuzzy query matched).
    """
    # ASCII folds one character to one character: skip the per-character offsets (1 MiB tool outputs).
    offsets: list[int] | None
    folded, offsets = (text.lower(), None) if text.isascii() else fold_with_offsets(text)
    best: tuple[int, int] | None = None
    for word in words:
        if not word:
            continue
        if len(word) >= 3 or is_cjk(word):  # a CJK word is found inside a run of any length
            at = folded.find(word)
            span = None if at < 0 else (at, at + len(word))
        else:
            found = re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", folded)
            span = found.span() if found else None
        if span and (best is None or span[0] < best[0]):
            best = span
    if best is None:
        for hint in hints:
            at = folded.find(fold(hint)) if hint else -1
            if at >= 0 and (best is None or at < best[0]):
                best = (at, at + len(fold(hint)))
    if best is None or not folded:
        return (0, 0)
    if offsets is None:
        return best
    start = offsets[best[0]]
    end = offsets[min(best[1], len(offsets)) - 1] + 1
    return (start, end)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def excerpt(text: str, words: Sequence[str], budget: int, hints: Sequence[str] = ()) -> str:
    """An excerpt of ``text`` of at most ``budget`` UTF-8 bytes, centred on the first match."""
    start, _end = first_match(text, words, hints)
    # Only a window around the match matters; collapsing whitespace over 1 MiB would be waste.
    reach = max(budget, 16) * 2
    lo, hi = max(0, start - reach), min(len(text), start + reach)
    left = _SPACE.sub(" ", text[lo:start])
    right = _SPACE.sub(" ", text[start:hi])
    if lo == 0:
        left = left.lstrip()
        if not left:  # no match (start 0) or only whitespace before it: the text's own start
            right = right.lstrip()
    if hi == len(text):
        right = right.rstrip()
    whole = left + right
    if lo == 0 and hi == len(text) and _bytes(whole) <= budget:
        return whole
    avail = budget - 2 * _ELLIPSIS_BYTES
    if avail <= 0:
        return ""  # no room for the ellipses that would mark the cut
    lead_budget = avail // 3
    # Walk left from the match up to a third of the budget, then right with what is left.
    i, used = len(left), 0
    while i > 0:
        size = _bytes(left[i - 1])
        if used + size > lead_budget:
            break
        i -= 1
        used += size
    j = 0
    while j < len(right):
        size = _bytes(right[j])
        if used + size > avail:
            break
        j += 1
        used += size
    # Give unused room back to the left side (match near the end of the text).
    while i > 0:
        size = _bytes(left[i - 1])
        if used + size > avail:
            break
        i -= 1
        used += size
    body = left[i:] + right[:j]
    cut_left = i > 0 or lo > 0
    cut_right = j < len(right) or hi < len(text)
    return (ELLIPSIS if cut_left else "") + body + (ELLIPSIS if cut_right else "")
