"""The embedded :class:`SessionQuery` provider: scoped, typo- and accent-tolerant search over the
projection that ``sessionlog.indexer.sqlite_view`` keeps in one SQLite file.

Same contract as :class:`~sessionlog.query.opensearch_provider.OpenSearchProvider`: the same
validation (:func:`~sessionlog.query.plan.plan_request`), errors, ranking tiers
(:func:`~sessionlog.query.scoring.score_text`), excerpts, browse order, ``searched`` count and
signed cursors. Every statement carries the scope as a SQL condition.

How a search runs depends on the scope's size. A scope of at most
:data:`~sessionlog.query.sqlite_scan.SCAN_MAX_ROWS` entries (a session, a small workspace) is read
by its index and every entry scored (:mod:`sessionlog.query.sqlite_scan`): its cost is the scope's,
not the file's. A larger one is searched index-backed (no statement scans the events table), phase
by phase from the best tier down (:mod:`sessionlog.query.candidates` builds each query word's lookups):

1. **Exact**: the word as a folded word (``events_words``), an identifier whole or as its parts in a
   row (``events_ident``, ``events_tri``), a CJK word as its bigrams (``events_cjk``), and the phrase.
2. **Prefix**: the last word as the start of a word (FTS5 prefix query), an identifier fragment as
   the start of an identifier (``" get_t"`` in ``events_ident``).
3. **Typo**: the word's typo candidates — terms of the scope's own workspaces' vocabulary
   (``vocab``) within its edit budget, every one of them (digits exact in words with digits).
4. **Substring**: the word inside longer tokens (``events_tri``); an identifier's parts anywhere.

Each phase adds its hits; SQL gives each candidate an upper bound of its score from the tiers of the
lookups that found it, then candidates are scored exactly with :func:`score_text` in bound order
until no remaining bound can reach the page: the result is the exact top of the Python ranking
without reading every candidate's text, and later phases run only when the page still needs them.
Ties are broken like on OpenSearch: occurrences and text-over-arguments are in the score, then
recency (seq descending), then session id.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Unpack

import orjson

from sessionlog.query import candidates as arms_of
from sessionlog.query.builder import QueryPlan
from sessionlog.query.candidates import MAX_EXPANSIONS, WordArms, typo_candidates
from sessionlog.query.config import check_int, check_scope
from sessionlog.query.deadline import Deadline
from sessionlog.query.engine import Corpus, EngineHit, EnginePage, EngineQuery
from sessionlog.query.options import SQLiteProviderOptions
from sessionlog.query.provider import SearchProvider
from sessionlog.query.scope import Scope
from sessionlog.query.scoring import PHRASE_EXACT, TIER_EXACT, max_bonus, phrase_words, score_text
from sessionlog.query.sqlite_access import SQLiteFile, sqlite_file
from sessionlog.query.sqlite_scan import ARGS_WEIGHT, SCAN_MAX_ROWS, page_hints, scan_rank

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
_CHUNK: Final = 500  # rids per ``IN`` list
_EPSILON: Final = 1e-9


def _micros(moment: datetime) -> int:
    """The ``events.time_us`` value of an aware time: microseconds since the Unix epoch."""
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class _Candidate:
    rid: int
    seq: int
    session_id: str
    bound: float
    tiebreak: float


class SQLiteEngine:
    """The embedded :class:`~sessionlog.query.engine.SearchEngine`: every statement carries the
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

    @property
    def path(self) -> os.PathLike[str]:
        return self.file.path

    def close(self) -> None:
        self.file.close()

    def search(self, query: EngineQuery, deadline: Deadline) -> EnginePage:
        self.file.catch_up(deadline)
        with self.file.snapshot(deadline) as conn:
            self._deadline = deadline
            corpus = self._count(conn, query.plan, query.session_id, query.live_topic)
            return EnginePage(corpus, self._page(conn, query))

    def rank(self, query: EngineQuery, deadline: Deadline) -> list[EngineHit]:
        with self.file.snapshot(deadline) as conn:
            self._deadline = deadline
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
        elif (scanned := self._scan(conn, plan, query.session_id, query.partial, need)) is not None:
            page, hints = scanned
        else:
            page, hints = self._rank(conn, plan, query.session_id, query.partial, 0, need)
        if query.exclude:
            seen = set(query.exclude)
            ids = self._doc_ids(conn, [rid for rid, _ in page])
            page = [(rid, score) for rid, score in page if ids.get(rid) not in seen]
        return self._hits(conn, page[: query.size], tuple(hints))

    # -- SQL pieces -----------------------------------------------------------------------------
    def _scope_sql(self, session_id: str | None) -> tuple[str, list[Any]]:
        column = "session_id" if self.scope.kind == "sessions" else "workspace_id"
        marks = ",".join("?" * len(self.scope.ids))
        sql = f"e.{column} IN ({marks})"
        params: list[Any] = list(self.scope.ids)
        if session_id is not None:
            sql += " AND e.session_id = ?"
            params.append(session_id)
        return sql, params

    @staticmethod
    def _filter_sql(plan: QueryPlan) -> tuple[str, list[Any]]:
        marks = ",".join("?" * len(plan.kinds))
        sql = f"e.type IN ({marks}) AND e.has_text = 1"
        params: list[Any] = list(plan.kinds)
        if plan.default_kinds and plan.exclude_tools:
            # The search tools' own calls and results are not history worth finding (D8).
            names = ",".join("?" * len(plan.exclude_tools))
            sql += f" AND (e.tool_name IS NULL OR e.tool_name NOT IN ({names}))"
            params.extend(plan.exclude_tools)
        if plan.since is not None:
            sql += " AND e.time_us >= ?"
            params.append(_micros(plan.since))
        if plan.until is not None:
            sql += " AND e.time_us <= ?"
            params.append(_micros(plan.until))
        return sql, params

    def _count(
        self, conn: sqlite3.Connection, plan: QueryPlan, session_id: str | None, live_topic: str | None
    ) -> Corpus:
        """``searched`` (in-scope entries of the requested kinds with text), the scope's size and
        highest log offset (the generation), whether the session exists, and the indexer's
        position in the log (the watermark of the live merge)."""
        scope_sql, scope_params = self._scope_sql(session_id)
        filter_sql, filter_params = self._filter_sql(plan)
        row = conn.execute(
            f"SELECT count(*), coalesce(max(e.log_offset), 0), coalesce(sum({filter_sql}), 0) "
            f"FROM events e WHERE {scope_sql}",
            [*filter_params, *scope_params],
        ).fetchone()
        total, max_offset, searched = int(row[0]), int(row[1]), int(row[2])
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
        scope_sql, scope_params = self._scope_sql(session_id)
        filter_sql, filter_params = self._filter_sql(plan)
        order = "e.seq DESC, e.session_id ASC" if single else "e.time_us DESC, e.seq DESC, e.session_id ASC"
        rows = conn.execute(
            f"SELECT e.rid FROM events e WHERE {scope_sql} AND {filter_sql} "
            f"ORDER BY {order} LIMIT ? OFFSET ?",
            [*scope_params, *filter_params, size, offset],
        ).fetchall()
        return [int(r[0]) for r in rows]

    def _scan(
        self, conn: sqlite3.Connection, plan: QueryPlan, session_id: str | None, partial: bool, need: int
    ) -> tuple[list[tuple[int, float]], list[str]] | None:
        """The page of a scope small enough to scan (:mod:`sessionlog.query.sqlite_scan`), else ``None``."""
        if not self.scan_max_rows:
            return None
        scope_sql, scope_params = self._scope_sql(session_id)
        filter_sql, filter_params = self._filter_sql(plan)
        where = (f"{scope_sql} AND {filter_sql}", [*scope_params, *filter_params])
        found = scan_rank(conn, where, plan, partial, need, self._check_deadline, self.scan_max_rows)
        if found is None:
            return None
        page, texts = found
        return page, page_hints(plan.words, [texts[rid] for rid, _ in page])

    def _rank(
        self,
        conn: sqlite3.Connection,
        plan: QueryPlan,
        session_id: str | None,
        partial: bool,
        offset: int,
        size: int,
    ) -> tuple[list[tuple[int, float]], list[str]]:
        """``(rid, score)`` of the page ``offset .. offset + size`` of the ranking, and the typo
        candidates (excerpt hints).

        Tier by tier: whole words first; typo and substring hits are looked up only when the page
        could still hold an entry that needs them (its best possible score would reach the page's
        last one). Hits accumulate in ``temp.sl_hits`` (rolled back with the read transaction), and
        the keys do not depend on the phase, so cursor pages stay consistent."""
        need = offset + size
        last = len(plan.words) - 1
        words = [WordArms(word, last=i == last) for i, word in enumerate(plan.words)]
        ceiling = (PHRASE_EXACT if len(words) > 1 else 0.0) + max_bonus(plan.words)
        workspaces = arms_of.scope_workspaces(conn, self.scope.kind, self.scope.ids)
        conn.execute("DELETE FROM temp.sl_hits")
        top: list[tuple[int, float]] = []
        for phase in arms_of.PHASES:
            if phase == arms_of.TYPO:
                for word in words:
                    word.expand(conn, workspaces, self.max_expansions)
            if phase != arms_of.EXACT and not any(w.has(phase) for w in words):
                continue
            self._insert_hits(conn, words, phase)
            candidates = self._candidates(conn, plan, len(words), session_id, partial)
            top = self._exact_top(conn, candidates, plan, partial, need)
            # Best score of an entry outside this phase's candidates: one word at a later tier.
            outside = max((w.best_after(phase) + (len(words) - 1) * TIER_EXACT for w in words), default=0.0)
            final = not any(w.best_after(phase) for w in words)
            if final or (len(top) >= need and top[need - 1][1] > outside + ceiling + _EPSILON):
                break
        hints = [term for w in words for _, term in w.expansions]
        return top[offset:], hints

    @staticmethod
    def _insert_hits(conn: sqlite3.Connection, words: Sequence[WordArms], phase: int) -> None:
        """Add the index hits of ``phase``'s arms: ``(rid, word number, tier bound)``. The phrase
        arm (word number -1) comes with the first phase."""
        arms: list[str] = []
        params: list[Any] = []
        for i, word in enumerate(words):
            for arm in word.arms(phase):
                arms.append(f"SELECT rowid, {i}, {arm.tier} FROM ({arm.sql})")
                params.extend(arm.params)
        if phase == arms_of.EXACT and len(words) > 1:
            arms.append(f"SELECT rowid, -1, {PHRASE_EXACT} FROM events_tri WHERE events_tri MATCH ?")
            params.append(arms_of.phrase(" ".join(phrase_words([w.text for w in words]))))
        if arms:
            conn.execute(f"INSERT INTO temp.sl_hits (rid, w, v) {' UNION ALL '.join(arms)}", params)

    def _candidates(
        self, conn: sqlite3.Connection, plan: QueryPlan, n: int, session_id: str | None, partial: bool
    ) -> list[_Candidate]:
        """Candidates of the hits so far, in (bound, tiebreak, seq, session) order: the best hit per
        word and entry, all ``n`` words present (or, ``partial``, any), then the scope and kind
        filters by primary key."""
        best = ", ".join(f"max(CASE WHEN w = {i} THEN v END) AS m{i}" for i in range(n))
        present = " + ".join(f"max(w = {i})" for i in range(n))
        tiers = " + ".join(f"coalesce(m{i}, 0)" for i in range(n))
        scope_sql, scope_params = self._scope_sql(session_id)
        filter_sql, filter_params = self._filter_sql(plan)
        bonus = max_bonus(plan.words)
        sql = (
            f"WITH cand AS (SELECT rid, {best}, max(CASE WHEN w < 0 THEN v ELSE 0 END) AS ph "
            f"FROM temp.sl_hits GROUP BY rid HAVING {present} {'>= 1' if partial else f'= {n}'}) "
            f"SELECT e.rid, e.seq, e.session_id, ({tiers}) + c.ph + {bonus} AS bound, 0.0 AS tb "
            "FROM cand c CROSS JOIN events e ON e.rid = c.rid "
            f"WHERE {scope_sql} AND {filter_sql} "
            "ORDER BY bound DESC, e.seq DESC, e.session_id ASC"
        )
        return [
            _Candidate(int(r[0]), int(r[1]), str(r[2]), float(r[3]), float(r[4]))
            for r in conn.execute(sql, [*scope_params, *filter_params])
        ]

    def _exact_top(
        self,
        conn: sqlite3.Connection,
        candidates: Sequence[_Candidate],
        plan: QueryPlan,
        partial: bool,
        need: int,
    ) -> list[tuple[int, float]]:
        """Score candidates in (bound, tiebreak, seq) order until none left can enter the top ``need``.

        A candidate's key is (exact score, tiebreak, seq); its score is at most its bound, so once the
        next candidate's (bound, tiebreak, seq) is below the ``need``-th best key, no later one can
        enter. Only the texts of the candidates read before that point are scored."""
        best: list[tuple[float, float, int]] = []  # min-heap of the top ``need`` keys so far
        scored: list[tuple[float, float, int, str, int]] = []
        i, chunk = 0, max(16, 2 * need)
        while i < len(candidates):
            if len(best) >= need and self._below(candidates[i], best[0]):
                break
            self._check_deadline()
            batch = candidates[i : i + chunk]
            i += len(batch)
            chunk = min(chunk * 2, 2000)
            marks = ",".join("?" * len(batch))
            texts = {
                int(rid): (kind, text)
                for rid, kind, text in conn.execute(
                    f"SELECT rid, type, text FROM events WHERE rid IN ({marks})", [c.rid for c in batch]
                )
            }
            for cand in batch:
                kind, text = texts[cand.rid]
                weight = ARGS_WEIGHT if kind == "tool/call" else 1.0
                score = score_text(text, plan.raw_words, plan.words, weight=weight, partial=partial)
                if score is None:
                    continue
                scored.append((score, cand.tiebreak, cand.seq, cand.session_id, cand.rid))
                key = (score, cand.tiebreak, cand.seq)
                if len(best) < need:
                    heapq.heappush(best, key)
                elif key > best[0]:
                    heapq.heapreplace(best, key)
        scored.sort(key=lambda t: (-t[0], -t[1], -t[2], t[3]))
        return [(rid, score) for score, _, _, _, rid in scored[:need]]

    @staticmethod
    def _below(cand: _Candidate, kth: tuple[float, float, int]) -> bool:
        """Whether ``cand`` (and so every later candidate) cannot beat the ``kth`` best key."""
        if cand.bound < kth[0] - _EPSILON:
            return True
        if cand.bound > kth[0] + _EPSILON:
            return False
        return (cand.tiebreak, cand.seq) < (kth[1], kth[2])

    @staticmethod
    def _doc_ids(conn: sqlite3.Connection, rids: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for start in range(0, len(rids), _CHUNK):
            chunk = rids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            out.update(
                (int(rid), str(doc_id))
                for rid, doc_id in conn.execute(
                    f"SELECT rid, doc_id FROM events WHERE rid IN ({marks})", chunk
                )
            )
        return out

    @staticmethod
    def _hits(
        conn: sqlite3.Connection, page: list[tuple[int, float]], hints: tuple[str, ...]
    ) -> list[EngineHit]:
        if not page:
            return []
        marks = ",".join("?" * len(page))
        rows = {
            int(r[0]): r
            for r in conn.execute(
                f"SELECT rid, doc_id, session_id, seq, type, text, doc FROM events WHERE rid IN ({marks})",
                [rid for rid, _ in page],
            )
        }
        out = []
        for rid, score in page:
            _, doc_id, session_id, seq, kind, text, doc_blob = rows[rid]
            doc = orjson.loads(doc_blob)
            out.append(
                EngineHit(
                    session_id=session_id,
                    entry_id=doc_id,
                    seq=int(seq),
                    kind=kind,
                    text=text,
                    turn=doc.get("turn"),
                    role=doc.get("role"),
                    created_at=datetime.fromisoformat(doc["time"]) if doc.get("time") else None,
                    score=score,
                    hints=hints,
                )
            )
        return out


def prepare_connection(conn: sqlite3.Connection) -> None:
    """The embedded engine's per-connection state (a temporary table of index hits)."""
    conn.execute("PRAGMA temp_store = MEMORY")
    # The index hits of one search, phase by phase (private to this connection).
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS sl_hits (rid INTEGER NOT NULL, w INTEGER NOT NULL, v REAL NOT NULL)"
    )


def sqlite_engine(
    scope: Scope, path: object, options: Mapping[str, Any]
) -> tuple[SQLiteEngine, dict[str, Any]]:
    """The engine over the file at ``path`` (its :class:`~sessionlog.query.options.SQLiteTarget`
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
    :class:`~sessionlog.query.options.SQLiteTarget` options. ``live`` is this
    process's SQLite entry log (or its live view, or a bare live log), whose entries the projection
    does not show yet are merged (read-your-writes). The other options are
    :class:`~sessionlog.query.provider.SearchProvider`'s.
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
