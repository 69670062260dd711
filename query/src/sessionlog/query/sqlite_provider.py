"""The embedded :class:`SessionQuery` provider: scoped, typo- and accent-tolerant search over the
projection that ``sessionlog.indexer.sqlite_view`` keeps in one SQLite file.

Same contract as :class:`~sessionlog.query.opensearch_provider.OpenSearchProvider`: the same
validation (:func:`~sessionlog.query.plan.plan_request`), errors, ranking tiers
(:func:`~sessionlog.query.scoring.score_text`), excerpts, browse order, ``searched`` count and
signed cursors. Every statement carries the scope as a SQL condition.

How a search runs, index-backed throughout (no statement scans the events table), phase by phase
from the best tier down (:mod:`sessionlog.query.candidates` builds each query word's lookups):

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
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import orjson

from sessionlog.ingest.errors import IngestError
from sessionlog.ingest.sqlite_log import connect, rollback
from sessionlog.query import candidates as arms_of
from sessionlog.query.builder import QueryPlan
from sessionlog.query.candidates import MAX_EXPANSIONS, WordArms, typo_candidates
from sessionlog.query.contract import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    SessionMatch,
    SessionQueryRequest,
    SessionQueryResult,
)
from sessionlog.query.cursor import MAX_PAGED, encode_cursor, open_cursor, request_fingerprint
from sessionlog.query.errors import SessionQueryError
from sessionlog.query.excerpt import excerpt
from sessionlog.query.plan import excerpt_budget, plan_request
from sessionlog.query.scope import Scope
from sessionlog.query.scoring import PHRASE_EXACT, TIER_EXACT, max_bonus, phrase_words, score_text

__all__ = ["MAX_EXPANSIONS", "SQLiteProvider", "typo_candidates"]

_ARGS_WEIGHT: Final = 0.75
_EPSILON: Final = 1e-9


@dataclass(frozen=True, slots=True)
class _Candidate:
    rid: int
    seq: int
    session_id: str
    bound: float
    tiebreak: float


class SQLiteProvider:
    """Scoped search over an embedded (SQLite) projection.

    Cheap to construct (the file is opened on the first search), thread-safe (one connection
    behind a lock), ``close()`` idempotent. ``catch_up`` is called before every search, e.g. an
    embedded indexer's ``run_until_idle`` so that a search sees everything appended before it; if
    it has a ``close`` method the provider closes it too.
    """

    def __init__(
        self,
        scope: Scope,
        path: str | os.PathLike[str],
        *,
        default_limit: int = DEFAULT_LIMIT,
        max_limit: int = MAX_LIMIT,
        request_timeout_s: float = 5.0,
        cursor_key: bytes | None = None,
        catch_up: Callable[[], object] | None = None,
        max_expansions: int = MAX_EXPANSIONS,
    ) -> None:
        if not isinstance(scope, Scope):
            raise SessionQueryError("SESSION_QUERY_INVALID_SCOPE", "a provider needs a Scope")
        if not (1 <= default_limit <= max_limit) or max_limit > 10_000:
            raise SessionQueryError(
                "SESSION_QUERY_INVALID_CONFIG", "need 1 <= default_limit <= max_limit <= 10000"
            )
        if request_timeout_s <= 0:
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "request_timeout_s must be positive")
        if not isinstance(path, str | os.PathLike) or not str(path):
            raise SessionQueryError("SESSION_QUERY_INVALID_CONFIG", "path must name the SQLite file")
        self.scope = scope
        self.path = Path(path).expanduser()
        self.default_limit = default_limit
        self.max_limit = max_limit
        self.request_timeout_s = request_timeout_s
        self.max_expansions = max_expansions
        self._key = cursor_key or secrets.token_bytes(32)
        self._catch_up = catch_up
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._closed = False
        self._deadline = 0.0

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop accepting requests and close the connection (and an owned catch-up). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            conn.close()
        closer = getattr(self._catch_up, "close", None)
        if callable(closer):
            closer()

    def __enter__(self) -> SQLiteProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid != os.getpid():
            self._conn = None  # never use (nor close) a connection inherited through fork
        if self._conn is None:
            if not self.path.exists():
                raise SessionQueryError(
                    "SESSION_QUERY_INDEX_FAILED",
                    f"no embedded database at {self.path}; has anything been appended?",
                )
            try:
                conn = connect(self.path, create=False, busy_timeout_s=self.request_timeout_s)
            except IngestError as err:
                raise SessionQueryError(
                    "SESSION_QUERY_INDEX_FAILED", f"cannot open {self.path}: {err}"
                ) from None
            conn.set_progress_handler(self._progress, 2000)
            conn.execute("PRAGMA temp_store = MEMORY")
            # The index hits of one search, phase by phase (private to this connection).
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS sl_hits "
                "(rid INTEGER NOT NULL, w INTEGER NOT NULL, v REAL NOT NULL)"
            )
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction (a consistent snapshot) under the lock, with the request deadline."""
        with self._lock:
            if self._closed:
                raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
            conn = self._connection()
            self._deadline = time.monotonic() + self.request_timeout_s
            try:
                conn.execute("BEGIN")
                yield conn
            except sqlite3.OperationalError as err:
                raise SessionQueryError("SESSION_QUERY_INDEX_FAILED", self._describe(err)) from None
            except sqlite3.Error as err:
                raise SessionQueryError(
                    "SESSION_QUERY_INDEX_FAILED", f"embedded index failed: {err}"
                ) from None
            finally:
                rollback(conn)

    def _describe(self, err: sqlite3.OperationalError) -> str:
        text = str(err)
        if "no such table" in text:
            return f"index missing in {self.path} ({text}); has the indexer run?"
        if "interrupted" in text:
            return f"search took longer than {self.request_timeout_s}s"
        return f"embedded index failed: {text}"

    def _check_deadline(self) -> None:
        if time.monotonic() > self._deadline:
            raise SessionQueryError(
                "SESSION_QUERY_INDEX_FAILED", f"search took longer than {self.request_timeout_s}s"
            )

    # -- validation -----------------------------------------------------------------------------
    def _plan(self, request: SessionQueryRequest) -> tuple[QueryPlan, str | None]:
        if self._closed:
            raise SessionQueryError("SESSION_QUERY_PROVIDER_CLOSED", "the provider was closed")
        return plan_request(request, self.scope, self.max_limit, self.default_limit)

    # -- search ---------------------------------------------------------------------------------
    def search(self, request: SessionQueryRequest) -> SessionQueryResult:
        """Run one search; raises :class:`SessionQueryError` and nothing else."""
        plan, session_id = self._plan(request)
        budget = excerpt_budget(request)
        fingerprint = request_fingerprint(
            self.scope.fingerprint(),
            session_id,
            plan.words,
            plan.kinds,
            plan.limit,
            budget,
            plan.exclude_tools,
        )
        offset, partial, issued = 0, False, None
        if request.cursor is not None:
            after, partial, issued = open_cursor(self._key, request.cursor, fingerprint)
            if len(after) != 1 or type(after[0]) is not int or after[0] < 0:
                raise SessionQueryError(
                    "SESSION_QUERY_INVALID_CURSOR", "cursor is not valid for this request"
                )
            offset = after[0]
        single = session_id is not None or (self.scope.kind == "sessions" and len(self.scope.ids) == 1)
        self._run_catch_up()
        size = plan.limit + 1
        with self._snapshot() as conn:
            searched, generation, exists = self._count(conn, plan, session_id)
            if session_id is not None and not exists and self.scope.kind == "workspaces":
                raise SessionQueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
            if issued is not None and issued != generation:
                raise SessionQueryError(
                    "SESSION_QUERY_STALE_CURSOR", "the searched corpus changed; search again"
                )
            hints: list[str] = []
            if plan.browse:
                page = [(rid, 0.0) for rid in self._browse(conn, plan, session_id, single, offset, size)]
            else:
                page, hints = self._rank(conn, plan, session_id, partial, offset, size)
                if not page and issued is None and len(plan.words) > 1:
                    partial = True
                    page, hints = self._rank(conn, plan, session_id, True, 0, size)
            more = len(page) > plan.limit
            page = page[: plan.limit]
            matches = self._matches(conn, page, plan, budget, hints)
        next_cursor = None
        # Like the OpenSearch provider: a chain of pages returns at most MAX_PAGED entries.
        if more and matches and offset + len(matches) <= MAX_PAGED:
            next_cursor = encode_cursor(self._key, fingerprint, generation, [offset + len(matches)], partial)
        return SessionQueryResult(
            matches=tuple(matches), searched=searched, next_cursor=next_cursor,
            partial=partial and bool(matches), source="persisted",
        )  # fmt: skip

    def _run_catch_up(self) -> None:
        if self._catch_up is None:
            return
        try:
            self._catch_up()
        except SessionQueryError:
            raise
        except Exception as err:
            raise SessionQueryError(
                "SESSION_QUERY_INDEX_FAILED", f"catching up the embedded index failed: {err}"
            ) from None

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
        return sql, params

    def _count(
        self, conn: sqlite3.Connection, plan: QueryPlan, session_id: str | None
    ) -> tuple[int, int, bool]:
        """``searched`` (in-scope entries of the requested kinds with text), the generation of the
        scope's corpus (entry count and highest log offset), and whether the session exists."""
        scope_sql, scope_params = self._scope_sql(session_id)
        filter_sql, filter_params = self._filter_sql(plan)
        row = conn.execute(
            f"SELECT count(*), coalesce(max(e.log_offset), 0), coalesce(sum({filter_sql}), 0) "
            f"FROM events e WHERE {scope_sql}",
            [*filter_params, *scope_params],
        ).fetchone()
        total, max_offset, searched = int(row[0]), int(row[1]), int(row[2])
        generation = total * 1_000_003 + max_offset
        exists = total > 0
        if session_id is not None and not exists and self.scope.kind == "workspaces":
            marks = ",".join("?" * len(self.scope.ids))
            found = conn.execute(
                f"SELECT 1 FROM sessions WHERE session_id = ? AND workspace_id IN ({marks})",
                [session_id, *self.scope.ids],
            ).fetchone()
            exists = found is not None
        return searched, generation, exists

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
                weight = _ARGS_WEIGHT if kind == "tool/call" else 1.0
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

    def _matches(
        self,
        conn: sqlite3.Connection,
        page: list[tuple[int, float]],
        plan: QueryPlan,
        budget: int,
        hints: list[str],
    ) -> list[SessionMatch]:
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
                SessionMatch(
                    session_id=session_id,
                    entry_id=doc_id,
                    seq=int(seq),
                    kind=kind,
                    turn=doc.get("turn"),
                    role=doc.get("role"),
                    excerpt=excerpt(text, plan.words, budget, hints),
                    created_at=datetime.fromisoformat(doc["time"]) if doc.get("time") else None,
                    score=round(score, 4),
                )
            )
        return out
