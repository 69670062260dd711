"""Candidate generation for the embedded provider: per query word, the full-text lookups ("arms")
that find every entry the word can match at each tier of :mod:`backscroll.query.scoring`, and its
typo candidates from the scope's own vocabulary.

The tables are those of :mod:`backscroll.indexer.sqlite.schema`. Phases run from the best tier down
(:data:`EXACT`, :data:`PREFIX`, :data:`TYPO` — typos and substrings, which share a tier — and
:data:`PARTS`, an identifier's parts anywhere); an arm's tier is an upper bound of the tier
:func:`~backscroll.query.scoring.score_text` gives an entry that only that arm found, so the
provider can stop as soon as no later phase can reach its page.

Typo candidates come from ``vocab`` restricted to the scope's workspaces, so another tenant's words
never change this one's results; every term within the budget is kept (no cut that could drop the
right one), up to a safety valve that marks the expansion incomplete instead.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from rapidfuzz import process
from rapidfuzz.distance import OSA

from backscroll.indexer.textfold import WORD_RE, cjk_grams, is_cjk, mixed_key
from backscroll.query.bounded import Bounded
from backscroll.query.scoring import (
    TIER_EXACT,
    TIER_FOLDED,
    TIER_FUZZY,
    TIER_FUZZY2,
    TIER_PARTS,
    TIER_PREFIX,
    TIER_SUBSTRING,
    fuzzy_budget,
    is_compound,
    near_compound,
    typo_match,
)
from backscroll.query.sqlite.column import read_column

__all__ = [
    "EXACT",
    "MAX_EXPANSIONS",
    "PARTS",
    "PHASES",
    "PREFIX",
    "TYPO",
    "Arm",
    "WordArms",
    "phrase",
    "scope_workspaces",
    "typo_candidates",
]

EXACT, PREFIX, TYPO, PARTS = 0, 1, 2, 3
PHASES: Final = (EXACT, PREFIX, TYPO, PARTS)
#: A safety valve, not a ranking cut: past it the expansion is marked incomplete (``complete``)
#: rather than silently losing candidates.
MAX_EXPANSIONS: Final = 10_000
#: Vocabulary terms a trigram probe may return before verification (closest first).
_TRIGRAM_PROBE_LIMIT: Final = 20_000
#: Up to this many terms of a near length, the scope's terms are all compared with the word (in C:
#: cheaper than a trigram probe of the whole file's vocabulary, and complete); past it, the probe.
#: At 1M entries (the largest workspace has ~50,000 such terms) comparing them all took 18–38 ms
#: and the probe 21–110 ms.
_SCAN_TERMS_MAX: Final = 150_000
_TOP: Final = "\U0010ffff"
_DIGIT_RUNS: Final = re.compile(r"\d+")


def phrase(text: str) -> str:
    """An FTS5 string literal (a phrase of whatever tokens the table's tokenizer makes of it)."""
    return '"' + text.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class Arm:
    """One lookup: ``sql`` selects the ``rowid`` of matching events; ``tier`` bounds their tier.

    An identifier's parts arm (:data:`PARTS`) also carries ``every``: per part, the lookups of
    which one must find the entry; ``sql`` is then the whole intersection, for a caller that
    cannot start from the rarest part (:mod:`backscroll.query.sqlite.parts`)."""

    sql: str
    params: tuple[Any, ...]
    tier: float
    every: tuple[tuple[Arm, ...], ...] = ()


def _words_arm(match: str, tier: float) -> Arm:
    return Arm("SELECT rowid FROM events_words WHERE events_words MATCH ?", (match,), tier)


def _table_arm(table: str, match: str, tier: float) -> Arm:
    return Arm(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (match,), tier)


class WordArms:
    """One folded query word: its arms per phase and its typo candidates (after :meth:`expand`)."""

    def __init__(self, text: str, *, last: bool = False, typos: bool = True) -> None:
        self.text = text
        self.last = last
        self.compound = is_compound(text)
        self.cjk = not self.compound and is_cjk(text)
        self.budget = fuzzy_budget(text) if typos else 0
        self.parts = [WordArms(p) for p in WORD_RE.findall(text)] if self.compound else []
        #: An identifier inside a longer one, from a segment on (the substring tier).
        self.segment = near_compound(text) and bool(self.parts)
        #: An identifier's parts may be words in a row with typos (the typo tiers).
        self.part_typos = any(p.budget for p in self.parts)
        self.expansions: list[tuple[int, str]] = []
        self.expanded = False
        self.complete = True

    @property
    def plain(self) -> bool:
        return not (self.compound or self.cjk)

    def expand(
        self,
        conn: sqlite3.Connection,
        workspaces: Sequence[str],
        limit: int = MAX_EXPANSIONS,
        known: Bounded[tuple[list[tuple[int, str]], bool]] | None = None,
        sizes: Bounded[int] | None = None,
        lengths: Bounded[list[str]] | None = None,
    ) -> None:
        """Find the typo candidates (this word's, or its parts'); ``known`` keeps those found
        earlier on the same data (``sizes`` and ``lengths``: see :func:`expansions`)."""
        if self.expanded:
            return
        self.expanded = True
        for part in self.parts:
            part.expand(conn, workspaces, limit, known, sizes, lengths)
        if self.budget:
            key = (self.text, tuple(workspaces), limit)
            found = known.get(key) if known is not None else None
            if found is None:
                found = expansions(conn, self.text, workspaces, limit, sizes, lengths)
                if known is not None:
                    known.put(key, found)
            self.expansions, self.complete = found

    def _inside_ok(self) -> bool:
        return self.plain and len(self.text) >= 3

    def _prefix_ok(self) -> bool:
        return len(self.text) >= 3 and (self.compound or (self.plain and self.last))

    def arms(self, phase: int) -> list[Arm]:
        """The lookups of ``phase`` (after :meth:`expand` for :data:`TYPO` and later)."""
        word = self.text
        if phase == EXACT:
            if self.cjk:
                grams = cjk_grams(word) if len(word) > 2 else [word]
                return [_table_arm("events_cjk", phrase(" ".join(grams)), TIER_EXACT)]
            if self.compound:
                parts = " ".join(p.text for p in self.parts)
                return [
                    _table_arm("events_ident", phrase(f" {word} "), TIER_EXACT),
                    _table_arm("events_tri", phrase(f" {parts} "), TIER_FOLDED),
                ]
            return [_words_arm(phrase(word), TIER_EXACT)]
        if phase == PREFIX and self._prefix_ok():
            if self.compound:
                return [_table_arm("events_ident", phrase(f" {word}"), TIER_PREFIX)]
            return [_words_arm(phrase(word) + " *", TIER_PREFIX)]
        if phase == TYPO:
            out = []
            for distance, tier in ((1, TIER_FUZZY), (2, TIER_FUZZY2)):
                terms = [phrase(t) for d, t in self.expansions if d == distance]
                if terms:
                    out.append(_words_arm(" OR ".join(terms), tier))
            if self._inside_ok():  # a substring: the one-edit tier, so looked up with the typos
                out.append(_table_arm("events_tri", phrase(word), TIER_SUBSTRING))
            if self.segment:  # its parts in a row, the last one maybe cut: inside a longer identifier
                parts = " ".join(p.text for p in self.parts)
                out.append(_table_arm("events_tri", phrase(f" {parts}"), TIER_SUBSTRING))
            return out
        if phase == PARTS and self.compound and self.parts:
            every = tuple(p._any_arms() for p in self.parts)
            sql = " INTERSECT ".join(
                f"SELECT rowid FROM ({' UNION '.join(a.sql for a in arms)})" for arms in every
            )
            params = tuple(v for arms in every for a in arms for v in a.params)
            # Each part within its own budget, in a row, is a typo tier (checked by score_text).
            return [Arm(sql, params, TIER_FUZZY if self.part_typos else TIER_PARTS, every)]
        return []

    def _any_arms(self) -> tuple[Arm, ...]:
        """The lookups of entries where this (plain) part matches at any tier but the prefix one."""
        terms = [phrase(self.text), *(phrase(t) for _, t in self.expansions)]
        arms = [_words_arm(" OR ".join(terms), TIER_EXACT)]
        if len(self.text) >= 3:
            arms.append(_table_arm("events_tri", phrase(self.text), TIER_SUBSTRING))
        return tuple(arms)

    def has(self, phase: int) -> bool:
        if phase == TYPO:
            return bool(self.expansions) or self._inside_ok() or self.segment
        if phase == PREFIX:
            return self._prefix_ok()
        if phase == PARTS:
            return self.compound and bool(self.parts)
        return True

    def best_after(self, phase: int) -> float:
        """The best tier this word can reach through arms of later phases (0: none)."""
        later = []
        if phase < PREFIX and self._prefix_ok():
            later.append(TIER_PREFIX)
        if phase < TYPO and (self.budget or self._inside_ok() or self.segment):
            later.append(TIER_FUZZY)  # a typo or a substring
        if phase < PARTS and self.compound and self.parts:
            later.append(TIER_FUZZY if self.part_typos else TIER_PARTS)
        return max(later, default=0.0)


def scope_workspaces(conn: sqlite3.Connection, kind: str, ids: Sequence[str]) -> list[str]:
    """The workspaces whose vocabulary serves a scope: its own, or those of its sessions."""
    if kind != "sessions":
        return list(ids)
    found = []
    for session_id in ids:
        row = conn.execute(
            "SELECT workspace_id FROM events WHERE session_id = ? LIMIT 1", (session_id,)
        ).fetchone()
        if row is not None:
            found.append(str(row[0]))
    return sorted(set(found))


def typo_candidates(
    conn: sqlite3.Connection, word: str, workspaces: Sequence[str], *, limit: int = MAX_EXPANSIONS
) -> list[str]:
    """Terms of the workspaces' vocabulary within ``word``'s typo budget (not the word), closest first."""
    return [term for _, term in expansions(conn, word, workspaces, limit)[0]]


def expansions(
    conn: sqlite3.Connection,
    word: str,
    workspaces: Sequence[str],
    limit: int = MAX_EXPANSIONS,
    sizes: Bounded[int] | None = None,
    lengths: Bounded[list[str]] | None = None,
) -> tuple[list[tuple[int, str]], bool]:
    """``(edit distance, term)`` of :func:`typo_candidates`, and whether nothing was cut.

    Index-backed: ``(ws, len, term)`` and ``(ws, len, rterm)`` ranges for the halves of the word
    (every one-edit variant keeps one of them), and for a two-edit budget every term of the scope of
    a near length (when there are at most 150,000: complete) or else the padded trigrams of the word
    in ``vocab_tri``; each candidate is verified by :func:`~backscroll.query.scoring.typo_match`.
    ``sizes`` keeps the length windows found too large to compare every term on the same data,
    ``lengths`` the workspaces' terms of each length read so far on the same data."""
    budget = fuzzy_budget(word)
    n = len(word)
    if budget == 0 or not workspaces:
        return [], True
    marks = ",".join("?" * len(workspaces))
    found: set[str] = set()
    complete = True
    scanned = False
    if budget >= 2:
        window = (*workspaces, n - budget, n + budget)
        crowded = sizes is not None and sizes.get(window) is not None
        near = None if crowded else _near_terms(conn, word, budget, marks, window, lengths)
        if near is not None:  # the scope's own terms of a near length, every one compared
            found.update(near)
            scanned = True  # complete: the one-edit ranges below would add nothing
        else:
            if sizes is not None:
                sizes.put(window, _SCAN_TERMS_MAX + 1)
            probed = _trigram_probe(conn, word, budget, workspaces)
            complete = len(probed) < _TRIGRAM_PROBE_LIMIT
            found.update(probed)
    half = n // 2
    prefix, suffix = word[:half], word[half + 1 :]
    for length in range(max(1, n - budget), n + budget + 1) if not scanned else ():
        for column, start in (("term", prefix), ("rterm", suffix[::-1])):
            if start:
                found.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT term FROM vocab WHERE ws IN ({marks}) AND len = ? "
                        f"AND {column} >= ? AND {column} < ?",
                        (*workspaces, length, start, start + _TOP),
                    )
                )
    scored = []
    for term in found:
        if term == word:
            continue
        distance = typo_match(word, term, budget)
        if distance is not None:
            scored.append((distance, term))
    scored.sort()
    return scored[:limit], complete and len(scored) <= limit


def _near_terms(
    conn: sqlite3.Connection,
    word: str,
    budget: int,
    marks: str,
    window: tuple[Any, ...],
    lengths: Bounded[list[str]] | None = None,
) -> list[str] | None:
    """The workspaces' terms of a near length within ``budget`` edits of ``word`` (OSA distance,
    compared in C), or ``None`` when they are more than :data:`_SCAN_TERMS_MAX` (read without
    counting them first: a count of the largest workspace's 50,000 cost a third of reading them).
    For a word with digits, the terms holding its digit runs in the same order (``GLOB``, in C:
    every term with the same digit skeleton does); the caller's ``typo_match`` then applies the
    digit rule.

    The other words' terms are read length by length, each length kept in ``lengths``: reading
    them is most of the cost (at 1M entries, 17–20 ms of a two-edit word's 20–24 in the largest
    workspace), and the words of one query and of the next searches share most lengths."""
    if mixed_key(word) is not None:
        runs = "*" + "*".join(_DIGIT_RUNS.findall(word)) + "*"
        near = f"SELECT term FROM vocab WHERE ws IN ({marks}) AND len BETWEEN ? AND ? AND term GLOB ? LIMIT ?"
        terms = read_column(conn, near, (*window, runs, _SCAN_TERMS_MAX + 1))
        return None if len(terms) > _SCAN_TERMS_MAX else terms
    *workspaces, low, high = window
    terms = []
    for length in range(low, high + 1):
        key = (*workspaces, length)
        of_length = lengths.get(key) if lengths is not None else None
        if of_length is None:
            sql = f"SELECT term FROM vocab WHERE ws IN ({marks}) AND len = ? LIMIT ?"
            of_length = read_column(conn, sql, (*workspaces, length, _SCAN_TERMS_MAX + 1))
            if lengths is not None and len(of_length) <= _SCAN_TERMS_MAX:
                lengths.put(key, of_length)
        terms.extend(of_length)
        if len(terms) > _SCAN_TERMS_MAX:
            return None
    return [
        term
        for term, _, _ in process.extract(word, terms, scorer=OSA.distance, score_cutoff=budget, limit=None)
    ]


def _trigram_probe(conn: sqlite3.Connection, word: str, budget: int, workspaces: Sequence[str]) -> list[str]:
    """Terms of a similar length sharing at least ``max(1, g - 4 * budget)`` of the word's ``g``
    distinct padded trigrams (an edit removes at most three of them, an adjacent swap four)."""
    padded = f" {word} "
    grams = list(dict.fromkeys(padded[i : i + 3] for i in range(len(padded) - 2)))
    need = max(1, len(grams) - 4 * budget)
    union = " UNION ALL ".join("SELECT rowid AS tid FROM vocab_tri WHERE vocab_tri MATCH ?" for _ in grams)
    marks = ",".join("?" * len(workspaces))
    sql = (
        f"SELECT v.term FROM (SELECT tid, count(*) AS shared FROM ({union}) GROUP BY tid "
        "HAVING count(*) >= ?) c JOIN vocab v ON v.tid = c.tid WHERE v.len BETWEEN ? AND ? "
        f"AND v.ws IN ({marks}) ORDER BY c.shared DESC LIMIT ?"
    )
    params: list[Any] = [phrase(g) for g in grams]
    params += [need, len(word) - budget, len(word) + budget, *workspaces, _TRIGRAM_PROBE_LIMIT]
    return [r[0] for r in conn.execute(sql, params)]
