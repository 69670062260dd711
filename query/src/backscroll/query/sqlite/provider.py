"""The embedded :class:`SessionQuery` provider: scoped, typo- and accent-tolerant search over the
projection that ``backscroll.indexer.sqlite.view`` keeps in one SQLite file.

Same contract as :class:`~backscroll.query.opensearch.provider.OpenSearchProvider`: the same
validation (:func:`~backscroll.query.plan.plan_request`), errors, ranking tiers
(:func:`~backscroll.query.scoring.score_text`), excerpts, browse order, ``searched`` count and
signed cursors. Every statement carries the scope as a SQL condition.

How a search runs depends on the scope's size. A scope of at most
:data:`~backscroll.query.sqlite.scan.SCAN_MAX_ROWS` entries (a session, a small workspace) is read
by its index and every entry scored (:mod:`backscroll.query.sqlite.scan`): its cost is the scope's,
not the file's. A larger one is searched index-backed (no statement scans the events table), phase
by phase from the best tier down (:mod:`backscroll.query.sqlite.candidates` builds each query word's lookups):

1. **Exact**: the word as a folded word (``events_words``), an identifier whole or as its parts in a
   row (``events_ident``, ``events_tri``), a CJK word as its bigrams (``events_cjk``), and the phrase.
2. **Prefix**: the last word as the start of a word (FTS5 prefix query), an identifier fragment as
   the start of an identifier (``" get_t"`` in ``events_ident``).
3. **Typo and substring** (one tier): the word's typo candidates — terms of the scope's own
   workspaces' vocabulary (``vocab``) within its edit budget, every one of them (digits exact in
   words with digits) — and the word inside longer tokens (``events_tri``).
4. **Parts**: an identifier's parts anywhere.

Each phase adds its hits; SQL gives each candidate an upper bound of its score from the tiers of the
lookups that found it, then candidates are scored exactly with :func:`score_text` in bound order
until no remaining bound can reach the page (:mod:`backscroll.query.sqlite.ranking`): the result
is the exact top of the Python ranking without reading every candidate's text, and later phases run
only when the page still needs them.
Ties are broken like on OpenSearch: occurrences and text-over-arguments are in the score, then
recency (seq descending), then session id.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from typing import Any, Final, Unpack

import backscroll.query.sqlite.candidates as arms_of
import backscroll.query.sqlite.ranking as ranking
from backscroll.query.config import check_int, check_scope
from backscroll.query.deadline import Deadline
from backscroll.query.engine import Corpus, EngineHit, EnginePage, EngineQuery
from backscroll.query.options import SQLiteProviderOptions
from backscroll.query.plan import QueryPlan
from backscroll.query.provider import SearchProvider
from backscroll.query.scope import Scope
from backscroll.query.scoring import PHRASE_EXACT, TIER_EXACT, max_bonus
from backscroll.query.sqlite.access import SQLiteFile, sqlite_file
from backscroll.query.sqlite.candidates import MAX_EXPANSIONS, WordArms, typo_candidates
from backscroll.query.sqlite.column import read_column
from backscroll.query.sqlite.hits import Hits, create_instances
from backscroll.query.sqlite.memo import HITS_KEPT_MAX, SnapshotMemo
from backscroll.query.sqlite.rows import doc_ids, holding, page_hits
from backscroll.query.sqlite.scan import SCAN_MAX_ROWS, page_hints, scan_rank, scope_rows

__all__ = [
    "LOG_TOPIC",
    "MAX_EXPANSIONS",
    "SQLiteEngine",
    "SQLiteProvider",
    "prepare_connection",
    "typo_candidates",
]

#: The name of the embedded log in live views and watermarks (one partition, 0).
LOG_TOPIC: Final = "log"
#: Candidates per entry of the page past which the words' occurrences are read from the index.
_COUNT_PAST: Final = 4
#: Placing a hit by rowid costs about ten times what reading one entry of the workspace's index
#: does (at 1M entries: 4.7–5.0 µs a lookup of 20,000 hits spread over the file, against
#: 0.35–0.44 µs an entry of a workspace's 61,000 or 203,000), before its share of every later phase.
_LOOKUP_COST: Final = 10
#: Workspace scopes past this many entries are never narrowed: their entries would be kept in
#: memory (about 60 bytes each) for as long as the data stays the same.
_MEMBERS_MAX: Final = 500_000

_PROJECTED: Final = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"


class SQLiteEngine:
    """The embedded :class:`~backscroll.query.engine.SearchEngine`: every statement carries the
    scope as a SQL condition; one read transaction per call (a consistent snapshot), bounded by
    the call's deadline. Thread-safe (one connection behind a lock)."""

    log_topic: str | None = LOG_TOPIC

    def __init__(
        self,
        scope: Scope,
        file: SQLiteFile,
        *,
        max_expansions: int = MAX_EXPANSIONS,
        scan_max_rows: int = SCAN_MAX_ROWS,
    ) -> None:
        self.scope = check_scope(scope, "provider")
        self.max_expansions = check_int(max_expansions, "max_expansions", 1, 10_000)
        self.scan_max_rows = check_int(scan_max_rows, "scan_max_rows", 0, 100_000)
        self.file = file
        self._deadline: Deadline | None = None
        self._memo = SnapshotMemo()

    @property
    def path(self) -> os.PathLike[str]:
        return self.file.path

    def close(self) -> None:
        self.file.close()

    def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        self.file.catch_up(deadline)
        if not self.file.path.exists():  # nothing appended yet: an empty history, not an outage
            return EnginePage(Corpus(searched=0, total=0, max_offset=0, exists=False), [])
        with self.file.snapshot(deadline) as conn:
            if conn.execute(_PROJECTED).fetchone() is None:  # the indexer has not run yet
                return EnginePage(Corpus(searched=0, total=0, max_offset=0, exists=False), [])
            self._deadline = deadline
            self._memo.check((id(conn), conn.execute("PRAGMA data_version").fetchone()[0]))
            corpus = self._count(conn, query.plan, query.session_id, query.live_topic)
            return EnginePage(corpus, self._page(conn, query))

    def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        with self.file.snapshot(deadline) as conn:
            self._deadline = deadline
            self._memo.check((id(conn), conn.execute("PRAGMA data_version").fetchone()[0]))
            return self._page(conn, query)

    def _check_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.check()

    def _page(self, conn: sqlite3.Connection, query: EngineQuery) -> list[EngineHit]:
        """The best ``query.size`` entries that earlier pages did not return."""
        plan = query.plan
        need = len(query.exclude) + query.size
        hints: list[str] = []
        if plan.browse:
            page = [(rid, 0.0) for rid in self._browse(conn, plan, query.session_id, query.single, 0, need)]
        elif scanned := self._scan(conn, plan, query.session_id, query.partial, need, query.skip):
            page, hints = scanned
        else:
            page, hints = self._rank(
                conn, plan, query.session_id, query.partial, 0, need, query.skip, query.inside
            )
        if query.exclude:
            seen = set(query.exclude)
            ids = doc_ids(conn, [rid for rid, _ in page])
            page = [(rid, score) for rid, score in page if ids.get(rid) not in seen]
        return page_hits(conn, page[: query.size], tuple(hints))

    def _count(
        self, conn: sqlite3.Connection, plan: QueryPlan, session_id: str | None, live_topic: str | None
    ) -> Corpus:
        """``searched`` (in-scope entries of the requested kinds with text), the scope's size and
        highest log offset (the generation), whether the session exists, and the indexer's
        position in the log (the watermark of the live merge)."""
        scope_sql, scope_params = ranking.scope_where(self.scope, session_id)
        filter_sql, filter_params = ranking.filter_where(plan)
        key = (filter_sql, *filter_params, session_id, live_topic)
        known = self._memo.counts.get(key)
        if known is not None:
            return known
        where = (scope_sql, scope_params), (filter_sql, filter_params)
        corpus = self._count_now(conn, session_id, live_topic, *where)
        self._memo.sizes.put(("scope", session_id), corpus.total)
        return self._memo.counts.put(key, corpus)

    def _count_now(
        self,
        conn: sqlite3.Connection,
        session_id: str | None,
        live_topic: str | None,
        scope: tuple[str, list[Any]],
        filters: tuple[str, list[Any]],
    ) -> Corpus:
        (scope_sql, scope_params), (filter_sql, filter_params) = scope, filters
        # One pass over the scope's index, the filter as an aggregate's FILTER clause: summing the
        # condition as an expression took 124 ms for 203,000 entries, two statements 96, this 71.
        row = conn.execute(
            f"SELECT count(*) FILTER (WHERE {filter_sql}), count(*), coalesce(max(e.log_offset), 0) "
            f"FROM events e WHERE {scope_sql}",
            [*filter_params, *scope_params],
        ).fetchone()
        searched, total, max_offset = int(row[0]), int(row[1]), int(row[2])
        exists = total > 0
        if session_id is not None and not exists and self.scope.kind == "workspaces":
            marks = ",".join("?" * len(self.scope.ids))
            found = conn.execute(
                f"SELECT 1 FROM sessions WHERE session_id = ? AND workspace_id IN ({marks})",
                [session_id, *self.scope.ids],
            ).fetchone()
            exists = found is not None
        watermarks: dict[int, int] = {}
        if (
            live_topic == LOG_TOPIC
            and conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'indexer_positions'"
            ).fetchone()
        ):
            position = conn.execute("SELECT max(offset) FROM indexer_positions").fetchone()[0]
            if position is not None:
                watermarks[0] = int(position)
        return Corpus(searched, total, max_offset, exists, watermarks)

    def _browse(
        self,
        conn: sqlite3.Connection,
        plan: QueryPlan,
        session_id: str | None,
        single: bool,
        offset: int,
        size: int,
    ) -> list[int]:
        """The most recent entries (seq descending in a session; time, then seq, across sessions)."""
        scope_sql, scope_params = ranking.scope_where(self.scope, session_id)
        filter_sql, filter_params = ranking.filter_where(plan)
        order = "e.seq DESC, e.session_id ASC" if single else "e.time_us DESC, e.seq DESC, e.session_id ASC"
        rows = conn.execute(
            f"SELECT e.rid FROM events e WHERE {scope_sql} AND {filter_sql} "
            f"ORDER BY {order} LIMIT ? OFFSET ?",
            [*scope_params, *filter_params, size, offset],
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _scan(
        self,
        conn: sqlite3.Connection,
        plan: QueryPlan,
        session_id: str | None,
        partial: bool,
        need: int,
        skip: frozenset[str],
    ) -> tuple[list[tuple[int, float]], list[str]] | None:
        """The page of a scope small enough to scan (:mod:`backscroll.query.sqlite.scan`), else ``None``."""
        if not self.scan_max_rows:
            return None
        scope_sql, scope_params = ranking.scope_where(self.scope, session_id)
        filter_sql, filter_params = ranking.filter_where(plan)
        where = (f"{scope_sql} AND {filter_sql}", [*scope_params, *filter_params])
        key = (where[0], *where[1])
        if key in self._memo.scans:  # the provider asks again on the same data (a wider window, readings)
            rows = self._memo.scans.get(key)
        else:
            read = scope_rows(conn, where, self._check_deadline, self.scan_max_rows)
            rows = self._memo.scans.put(key, read)
        if rows is None:
            return None
        scores = self._memo.scores((plan.raw_words, plan.words, partial))
        page, texts = scan_rank(rows, plan, partial, need, self._check_deadline, skip, scores)
        return page, page_hints(plan.words, [texts[rid] for rid, _ in page])

    def _rank(
        self,
        conn: sqlite3.Connection,
        plan: QueryPlan,
        session_id: str | None,
        partial: bool,
        offset: int,
        size: int,
        skip: frozenset[str] = frozenset(),
        inside: frozenset[str] = frozenset(),
    ) -> tuple[list[tuple[int, float]], list[str]]:
        """``(rid, score)`` of the page ``offset .. offset + size`` of the ranking, and the typo
        candidates (excerpt hints). The words of ``inside`` are looked up without their typos.

        Tier by tier: whole words first; typo and substring hits are looked up only when the page
        could still hold an entry that needs them (its best possible score would reach the page's
        last one). Hits accumulate phase by phase (:class:`~backscroll.query.sqlite.ranking.Hits`),
        and the keys do not depend on the phase, so cursor pages stay consistent."""
        need = offset + size
        ceiling = (PHRASE_EXACT if len(plan.words) > 1 else 0.0) + max_bonus(plan.words)
        workspaces = arms_of.scope_workspaces(conn, self.scope.kind, self.scope.ids)
        memo = self._memo.scores((plan.raw_words, plan.words, partial))
        filter_sql, filter_params = ranking.filter_where(plan)
        placed = self._memo.placed((filter_sql, *filter_params, session_id, skip))
        rids = self._rid_range(conn, session_id)
        if skip and not placed:  # entries holding a skipped word are out, like entries out of scope
            placed.update(dict.fromkeys(holding(conn, skip, rids)))
        key = (plan.words, rids, inside)
        hits = self._memo.hits.get(key)
        if hits is None:  # a query's hits do not depend on partial, the page or the filters
            last = len(plan.words) - 1
            arms = [WordArms(w, last=i == last, typos=w not in inside) for i, w in enumerate(plan.words)]
            hits = self._memo.hits.put(key, Hits(arms, rids))
        words = hits.words
        typo_phase = False
        top: list[tuple[int, float]] = []
        for phase in arms_of.PHASES:
            if phase == arms_of.TYPO:
                typo_phase = True
                kept = self._memo
                for word in words:
                    word.expand(
                        conn, workspaces, self.max_expansions, kept.expansions, kept.sizes, kept.lengths
                    )
            if phase != arms_of.EXACT and not any(w.has(phase) for w in words):
                continue
            hits.add(conn, phase, partial)
            self._narrow_to_scope(conn, hits, session_id)
            self._check_deadline()
            entries = hits.entries(partial)
            self._memo.lookups += ranking.place(conn, self.scope, plan, session_id, entries, placed)
            candidates = ranking.candidates(hits, partial, placed)
            if len(candidates) > _COUNT_PAST * need and hits.count(conn):
                candidates = ranking.candidates(hits, partial, placed)  # tighter bounds: stop sooner
            top = ranking.exact_top(conn, candidates, plan, partial, need, self._check_deadline, memo)
            # Best score of an entry outside this phase's candidates: one word at a later tier.
            outside = max((w.best_after(phase) + (len(words) - 1) * TIER_EXACT for w in words), default=0.0)
            final = not any(w.best_after(phase) for w in words)
            if final or (len(top) >= need and top[need - 1][1] > outside + ceiling + ranking.EPSILON):
                break
        if sum(len(best) for best in hits.best) > HITS_KEPT_MAX:
            self._memo.hits.discard(key)
        hints = [term for w in words for _, term in w.expansions] if typo_phase else []
        return top[offset:], hints

    def _narrow_to_scope(self, conn: sqlite3.Connection, hits: Hits, session_id: str | None) -> None:
        """Narrow the hits of a workspace scope to its entries, read once from its index and kept
        while the data stays the same: a common word's hits span the whole file, and every hit
        outside the scope would otherwise be placed by a lookup of its own and carried through
        each phase (``buz`` at 1M entries: 78,000 hits, of which 4,900 in a workspace of 61,000
        entries).

        The entries are read once the lookups they save pay for reading them: this search's hits
        plus the lookups the engine's earlier searches already paid on the same data, against the
        scope's size (a rent-or-buy choice, never more than about twice the better of the two).
        A word with 15,000 hits in a workspace of 200,000 entries places them one by one; the
        provider's next such search reads the entries, and from then on only the scope's hits
        are placed."""
        if hits.members is not None or session_id is not None or self.scope.kind != "workspaces":
            return
        key = tuple(self.scope.ids)
        members = self._memo.members.get(key)
        if members is None:
            size = self._memo.sizes.get(("scope", None))
            paid = hits.held() + self._memo.lookups
            if size is None or size > _MEMBERS_MAX or paid * _LOOKUP_COST < size:
                return
            marks = ",".join("?" * len(key))
            sql = f"SELECT e.rid FROM events e WHERE e.workspace_id IN ({marks})"
            members = self._memo.members.put(key, frozenset(read_column(conn, sql, key)))
        hits.keep_only(members)

    def _rid_range(self, conn: sqlite3.Connection, session_id: str | None) -> tuple[int, int] | None:
        """The lowest and highest rowid of a session scope (or a session-narrowed search): a
        session's entries are written together, so its range is narrow even in a big file. Not
        for workspace scopes, whose entries span the file."""
        if self.scope.kind != "sessions" and session_id is None:
            return None
        key = ("rids", session_id)
        known = self._memo.ranges.get(key)
        if known is None:
            scope_sql, scope_params = ranking.scope_where(self.scope, session_id)
            row = conn.execute(f"SELECT min(e.rid), max(e.rid) FROM events e WHERE {scope_sql}", scope_params)
            lo, hi = row.fetchone()
            known = self._memo.ranges.put(key, (int(lo or 0), int(hi or -1)))
        return known


def prepare_connection(conn: sqlite3.Connection) -> None:
    """The embedded engine's per-connection state (the index's token instances)."""
    conn.execute("PRAGMA temp_store = MEMORY")
    create_instances(conn)


def sqlite_engine(
    scope: Scope, path: object, options: Mapping[str, Any]
) -> tuple[SQLiteEngine, dict[str, Any]]:
    """The engine over the file at ``path`` (its :class:`~backscroll.query.options.SQLiteTarget`
    options, ``max_expansions`` and ``scan_max_rows`` taken from ``options``), and the provider
    options left."""
    file, rest = sqlite_file(path, "SESSION_QUERY_INDEX_FAILED", options, setup=prepare_connection)
    expansions = rest.pop("max_expansions", MAX_EXPANSIONS)
    scan_max_rows = rest.pop("scan_max_rows", SCAN_MAX_ROWS)
    return SQLiteEngine(scope, file, max_expansions=expansions, scan_max_rows=scan_max_rows), rest


class SQLiteProvider(SearchProvider):
    """Scoped search over an embedded (SQLite) projection: the provider core over a
    :class:`SQLiteEngine`.

    Cheap to construct (the file is opened on the first search), thread-safe, ``close()``
    idempotent. ``catch_up`` (e.g. an embedded indexer's run until idle, so that a search sees
    everything appended before it) and ``connector`` are the
    :class:`~backscroll.query.options.SQLiteTarget` options. ``live`` is this
    process's SQLite entry log (or its live view, or a bare live log), whose entries the projection
    does not show yet are merged (read-your-writes). The other options are
    :class:`~backscroll.query.provider.SearchProvider`'s.
    """

    engine: SQLiteEngine

    def __init__(
        self, scope: Scope, path: str | os.PathLike[str], **options: Unpack[SQLiteProviderOptions]
    ) -> None:
        engine, rest = sqlite_engine(scope, path, options)
        super().__init__(scope, engine, **rest)

    @property
    def path(self) -> os.PathLike[str]:
        return self.engine.path

    @property
    def _conn(self) -> sqlite3.Connection | None:
        return self.engine.file.conn
