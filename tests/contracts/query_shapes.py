"""Random query shapes for the property tests that compare two search paths (scan vs index, on
either backend): words of a list, each kept, typo'd once or twice, cut to its inside, or replaced by
junk, in random case. Pure."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

__all__ = ["edit", "queries_over"]


def edit(rng: random.Random, word: str) -> str:
    """One random edit of ``word``: substitution, insertion, deletion, adjacent swap, or a cut
    (a prefix or a fragment)."""
    i = rng.randrange(len(word))
    op = rng.choice("sidtp")
    if op == "s":
        return word[:i] + rng.choice("aeioust") + word[i + 1 :]
    if op == "i":
        return word[:i] + rng.choice("aeioust") + word[i:]
    if op == "d" and len(word) > 2:
        return word[:i] + word[i + 1 :]
    if op == "t" and i + 1 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[: max(2, i)]  # a prefix or a fragment


def queries_over(words: Sequence[str]) -> Callable[[], st.SearchStrategy[str]]:
    """A strategy of one to three query words drawn from ``words``, each in a random shape."""

    @st.composite
    def queries(draw: st.DrawFn) -> str:
        rng = random.Random(draw(st.integers(0, 2**32)))
        out = []
        for _ in range(draw(st.integers(1, 3))):
            word = rng.choice(words)
            shape = draw(st.sampled_from(("same", "typo", "typo2", "inner", "junk")))
            if shape in ("typo", "typo2"):
                word = edit(rng, word)
                word = edit(rng, word) if shape == "typo2" else word
            elif shape == "inner" and len(word) > 4:
                word = word[1:-1]
            elif shape == "junk":
                word = "qqzx" + word[:2]
            out.append(word.upper() if draw(st.booleans()) else word)
        return " ".join(out)

    return queries
