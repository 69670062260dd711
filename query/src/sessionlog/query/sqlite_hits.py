"""The index hits of one embedded search, phase by phase, and the score bound they give each entry.

Per query word, the best tier of every entry its lookups found (anywhere in the file: the scope
is applied to candidates), the entries holding the exact phrase, and the word's occurrences in
each entry, read from the full-text index itself (``fts5vocab`` over ``events_words``): with them
an entry's bound is its exact score whenever its tiers are, and the exact top stops after a page's
worth of candidates instead of scoring every entry of a common word.

Kept in Python, not in a temporary table: a common word hits thousands of entries of other
workspaces, and grouping and joining them again in SQL for every phase cost more than the
lookups themselves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from sessionlog.query import candidates as arms_of
from sessionlog.query.candidates import WordArms
from sessionlog.query.scoring import (
    FIELD_BONUS,
    MAX_COUNTED,
    OCCURRENCE,
    PHRASE_EXACT,
    is_compound,
    phrase_words,
)

__all__ = ["INSTANCES", "Hits", "create_instances"]

#: The temporary ``fts5vocab`` table of ``events_words``' token instances (``term``, ``doc``).
INSTANCES: Final = "sl_word_instances"
_MOST: Final = (MAX_COUNTED - 1) * OCCURRENCE


def create_instances(conn: sqlite3.Connection) -> None:
    """Create the connection's view of ``events_words``' instances (reads nothing yet)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{INSTANCES} USING fts5vocab(main, events_words, instance)"
    )


def _occurrence_bonus(count: int) -> float:
    return OCCURRENCE * (min(count, MAX_COUNTED) - 1) if count else 0.0


class Hits:
    """The hits of one search so far (see the module docstring)."""

    def __init__(self, words: Sequence[WordArms]) -> None:
        self.words = list(words)
        self.best: list[dict[int, float]] = [{} for _ in words]
        self.phrase: set[int] = set()
        # Per word: its occurrence bonus in each entry holding it as a token (counted words), or
        # ``None``: not counted from the index (its bonus is bounded by the most it can be).
        self.bonus: list[dict[int, float] | None] = [None for _ in words]
        self._most = [0.0 if is_compound(w.text) or w.cjk else _MOST for w in words]

    def add(self, conn: sqlite3.Connection, phase: int) -> None:
        """Add the hits of ``phase``'s arms (the phrase arm and the counts come with the first)."""
        for i, word in enumerate(self.words):
            best = self.best[i]
            for arm in word.arms(phase):
                tier = arm.tier
                for (rid,) in conn.execute(f"SELECT rowid FROM ({arm.sql})", arm.params):
                    if best.get(rid, -1.0) < tier:
                        best[rid] = tier
            if phase == arms_of.EXACT and word.plain and word.text.isascii() and word.text.isalnum():
                # An ASCII word is one token of the index, counted exactly as score_text counts it.
                self.bonus[i] = {
                    int(doc): _occurrence_bonus(int(count))
                    for doc, count in conn.execute(
                        f"SELECT doc, count(*) FROM temp.{INSTANCES} WHERE term = ? GROUP BY doc",
                        (word.text,),
                    )
                }
        if phase == arms_of.EXACT and len(self.words) > 1:
            text = arms_of.phrase(" ".join(phrase_words([w.text for w in self.words])))
            found = conn.execute("SELECT rowid FROM events_tri WHERE events_tri MATCH ?", (text,))
            self.phrase.update(rid for (rid,) in found)

    def entries(self, partial: bool) -> set[int]:
        """Entries hit for every word (``partial``: for any)."""
        if not self.best:
            return set()
        by_size = sorted(self.best, key=len)
        found = set(by_size[0])
        for best in by_size[1:]:
            if partial:
                found.update(best)
            else:
                found.intersection_update(best)
        return found

    def bound(self, rid: int, args: bool) -> float:
        """The most ``rid`` can score given its hits (``args``: its text is tool arguments), summed
        in :func:`~sessionlog.query.scoring.score_text`'s order: per word its best tier and
        occurrence bonus, then the phrase, then the field."""
        total = 0.0
        for best, bonus, most in zip(self.best, self.bonus, self._most, strict=True):
            tier = best.get(rid)
            if tier is not None:
                total += tier + (most if bonus is None else bonus.get(rid, 0.0))
        if rid in self.phrase:
            total += PHRASE_EXACT
        return total if args else total + FIELD_BONUS
