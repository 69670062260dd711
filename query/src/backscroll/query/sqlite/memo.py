"""What the embedded engine may reuse between calls while the file's data stays the same. Pure
(the caller reads ``PRAGMA data_version``).

A search pays for the scope's count, each query word's typo candidates and each candidate's exact
score; the provider core then often asks the same engine again on the same data: the closest
matches after a search without full matches, the window of readings, the next page. SQLite's
``data_version`` of a connection changes when another connection commits, and the engine's
connection only reads, so everything kept here is dropped at the first write and never reused
after one.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Final

from backscroll.query.bounded import Bounded
from backscroll.query.engine import Corpus

if TYPE_CHECKING:  # types only: this module stays free of the SQLite driver
    from backscroll.query.sqlite.hits import Hits
    from backscroll.query.sqlite.scan import ScopeRow

__all__ = ["HITS_KEPT_MAX", "LENGTHS_KEPT", "SnapshotMemo"]


#: Queries whose scores are kept (a search asks for full matches, then closest ones).
SCORED_QUERIES: Final = 4
#: Scores kept per query (a few MB at most).
SCORES_MAX: Final = 200_000
#: Entries placed (in or out of the scope) kept per filter set.
PLACED_MAX: Final = 200_000
#: Term lengths whose vocabulary is kept: a two-edit word reads five (a few MB at most).
LENGTHS_KEPT: Final = 12
#: Index hits (entries per word, summed) past which a query's hits are not kept: a few common
#: words of a large file would otherwise hold hundreds of MB.
HITS_KEPT_MAX: Final = 200_000


class SnapshotMemo:
    """Counts, typo candidates, rowid ranges, index hits, a workspace scope's entries, a scanned
    scope's entries, placed entries and scores computed on one version of the data."""

    def __init__(self) -> None:
        self._data: Hashable = None
        self.counts: Bounded[Corpus] = Bounded(64)
        self.expansions: Bounded[tuple[list[tuple[int, str]], bool]] = Bounded(256)
        self.ranges: Bounded[tuple[int, int]] = Bounded(64)
        self.sizes: Bounded[int] = Bounded(256)
        #: The vocabulary's terms of one length in the scope's workspaces (typo candidates of
        #: two-edit words): about 10,000 a length in a workspace of 200,000 entries.
        self.lengths: Bounded[list[str]] = Bounded(LENGTHS_KEPT)
        self.hits: Bounded[Hits] = Bounded(SCORED_QUERIES)
        self.members: Bounded[frozenset[int]] = Bounded(2)
        #: A scanned scope's entries, text folded (``None``: too large to scan), for the last scope
        #: and filter scanned: the provider core's calls for one search share them. One, not more:
        #: a scope of 2 M characters keeps about 4 MB (its text and the folded copy).
        self.scans: Bounded[tuple[ScopeRow, ...] | None] = Bounded(1)
        #: Entries placed one by one (by rowid) so far on this data.
        self.lookups = 0
        self._scores: Bounded[dict[int, float | None]] = Bounded(SCORED_QUERIES)
        self._placed: Bounded[dict[int, tuple[int, str, bool] | None]] = Bounded(SCORED_QUERIES)

    def check(self, data: Hashable) -> None:
        """Drop everything when ``data`` (the connection and its ``data_version``) changed."""
        if data != self._data:
            self._data = data
            self.counts.clear()
            self.expansions.clear()
            self.ranges.clear()
            self.sizes.clear()
            self.lengths.clear()
            self.hits.clear()
            self.members.clear()
            self.scans.clear()
            self.lookups = 0
            self._scores.clear()
            self._placed.clear()

    def scores(self, query: Hashable) -> dict[int, float | None]:
        """The scores of ``query`` computed so far (rid → score, ``None``: no match)."""
        memo = self._scores.get(query)
        if memo is None or len(memo) > SCORES_MAX:
            memo = {}
        return self._scores.put(query, memo)

    def placed(self, filters: Hashable) -> dict[int, tuple[int, str, bool] | None]:
        """Entries looked up under ``filters`` so far (rid → (seq, session id, whether the text is
        tool arguments), ``None``: out of the scope or filters)."""
        memo = self._placed.get(filters)
        if memo is None or len(memo) > PLACED_MAX:
            memo = {}
        return self._placed.put(filters, memo)
