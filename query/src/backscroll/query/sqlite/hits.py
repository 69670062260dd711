"""The index hits of one embedded search, phase by phase, and the score bound they give each entry.

Per query word, the best tier of every entry its lookups found (anywhere in the file, the scope
applied to candidates; or only among a workspace scope's entries once :meth:`Hits.keep_only`
narrowed them), the entries holding the exact phrase, and the word's occurrences in
each entry, read from the full-text index itself (``fts5vocab`` over ``events_words``): with them
an entry's bound is its exact score whenever its tiers are, and the exact top stops after a page's
worth of candidates instead of scoring every entry of a common word (the occurrences are read only
when a phase has many more candidates than the page needs).

Kept in Python, not in a temporary table: a common word hits thousands of entries of other
workspaces, and grouping and joining them again in SQL for every phase cost more than the
lookups themselves. The engine keeps a query's hits while the data stays the same
(:class:`~backscroll.query.sqlite.memo.SnapshotMemo`): the next call for the same words (closest
matches, the window of readings, the next page) adds only the phases it needs beyond them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

import backscroll.query.sqlite.candidates as arms_of
from backscroll.query.scoring import (
    FIELD_BONUS,
    MAX_COUNTED,
    OCCURRENCE,
    PHRASE_EXACT,
    TIER_EXACT,
    is_compound,
    phrase_words,
)
from backscroll.query.sqlite.candidates import WordArms
from backscroll.query.sqlite.column import read_column
from backscroll.query.sqlite.parts import parts_rowids

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

    def __init__(self, words: Sequence[WordArms], rids: tuple[int, int] | None = None) -> None:
        self.words = list(words)
        # The scope's lowest and highest rowid, when it is narrow enough to be worth it (a
        # session's entries were written together): every lookup is cut to it inside FTS5.
        self.rids = rids
        self.best: list[dict[int, float]] = [{} for _ in words]
        self.phrase: set[int] = set()
        # Per word: its occurrence bonus in each entry holding it as a token (counted words), or
        # ``None``: not counted from the index (its bonus is bounded by the most it can be).
        self.bonus: list[dict[int, float] | None] = [None for _ in words]
        self._most = [0.0 if is_compound(w.text) or w.cjk else _MOST for w in words]
        self.added: set[int] = set()
        # Phases added only for entries that can hold every word (see :meth:`add`).
        self.narrowed: set[int] = set()
        #: Candidates already built from this state: (state, partial) → (the placed map, list).
        self.built: dict[tuple[object, ...], tuple[object, list[Any]]] = {}
        #: The scope's entries, once :meth:`keep_only` narrowed the hits to them.
        self.members: frozenset[int] | None = None

    def held(self) -> int:
        """The most hits one word has so far (what narrowing to the scope would shrink)."""
        return max((len(best) for best in self.best), default=0)

    def keep_only(self, members: frozenset[int]) -> None:
        """Forget the hits outside ``members`` (the scope's entries), and add none from now on: a
        common word of a workspace scope hits every workspace of the file, and each phase would
        otherwise carry the other workspaces' entries through placing and bounding."""
        self.members = members
        self.best = [{rid: tier for rid, tier in best.items() if rid in members} for best in self.best]
        self.phrase.intersection_update(members)
        self.built.clear()

    def _in_scope(self, rids: Iterable[int]) -> Iterable[int]:
        """``rids`` without those outside the scope, once :meth:`keep_only` narrowed the hits."""
        return rids if self.members is None else self.members.intersection(rids)

    def state(self) -> tuple[object, ...]:
        """What the bounds depend on: the phases added and the words counted."""
        added = (frozenset(self.added), frozenset(self.narrowed))
        return (added, tuple(bonus is not None for bonus in self.bonus))

    def _hit_by_all(self, words: Sequence[int]) -> set[int]:
        """The entries every one of ``words`` (indexes) hit."""
        bests = sorted((self.best[i] for i in words), key=len)
        found = set(bests[0])
        for best in bests[1:]:
            found.intersection_update(best)
        return found

    def add(self, conn: sqlite3.Connection, phase: int, partial: bool = True) -> None:
        """Add the hits of ``phase``'s arms (the phrase arm comes with the first); once per phase.

        Not ``partial`` (only entries with every word count), an identifier's parts are looked up
        only in the entries the words already complete all hit: ``test_call`` next to a rare word
        reads the few entries of that word, not every ``test`` and ``call`` entry of the file, and
        the second identifier of a query reads only the entries the first one's parts found. A
        later ``partial`` call adds the phase again, whole."""
        if phase in self.added or (not partial and phase in self.narrowed):
            return
        narrow = not partial and phase == arms_of.PARTS
        # The parts phase is the last: every word but the identifiers already has all its hits.
        done = [i for i, word in enumerate(self.words) if not word.has(arms_of.PARTS)] if narrow else []
        narrowed = False
        within, bounds = ("", ()) if self.rids is None else (" WHERE rowid BETWEEN ? AND ?", self.rids)
        for i, word in enumerate(self.words):
            best = self.best[i]
            for arm in word.arms(phase):
                tier = arm.tier
                if arm.every:
                    only = self._hit_by_all(done) if done else None
                    narrowed = narrowed or only is not None
                    found: Iterable[int] = parts_rowids(conn, arm, within, bounds, only)
                else:
                    sql = f"SELECT rowid FROM ({arm.sql}){within}"
                    found = read_column(conn, sql, (*arm.params, *bounds))
                for rid in self._in_scope(found):
                    if best.get(rid, -1.0) < tier:
                        best[rid] = tier
            if narrow:
                done.append(i)
        (self.narrowed if narrowed else self.added).add(phase)
        if phase == arms_of.EXACT and len(self.words) > 1:
            text = arms_of.phrase(" ".join(phrase_words([w.text for w in self.words])))
            phrase_sql = "SELECT rowid FROM events_tri WHERE events_tri MATCH ?"
            rows = read_column(conn, f"SELECT rowid FROM ({phrase_sql}){within}", (text, *bounds))
            self.phrase.update(self._in_scope(rows))

    def count(self, conn: sqlite3.Connection) -> bool:
        """Read the occurrences of the words the index can count (an ASCII word is one token of
        it, counted exactly as ``score_text`` counts it), once; whether any were read.

        Worth it only when many candidates share the best bounds (a common word, closest
        matches): the instances are read file-wide, which costs about as much as the word's hits.
        Not for a narrow scope (a session's rowid range), whose few candidates are cheaper to
        score."""
        read = False
        for i, word in enumerate(self.words):
            countable = word.plain and word.text.isascii() and word.text.isalnum()
            if self.rids is None and countable and self.bonus[i] is None:
                counts = conn.execute(
                    f"SELECT doc, count(*) FROM temp.{INSTANCES} WHERE term = ? GROUP BY doc", (word.text,)
                )
                self.bonus[i] = {int(doc): _occurrence_bonus(int(count)) for doc, count in counts}
                read = True
        return read

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
        in :func:`~backscroll.query.scoring.score_text`'s order: per word its best tier and
        occurrence bonus, then the phrase, then the field. The bonus counts the query word itself,
        so an entry the word's exact arm did not find (a typo, prefix or substring match) has none."""
        total = 0.0
        for best, bonus, most in zip(self.best, self.bonus, self._most, strict=True):
            tier = best.get(rid)
            if tier is not None:
                if bonus is not None:
                    total += tier + bonus.get(rid, 0.0)
                else:
                    total += tier + (most if tier >= TIER_EXACT else 0.0)
        if rid in self.phrase:
            total += PHRASE_EXACT
        return total if args else total + FIELD_BONUS
