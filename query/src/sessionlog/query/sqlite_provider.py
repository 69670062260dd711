"""The embedded :class:`SessionQuery` provider: scoped, typo- and accent-tolerant search over the
projection that ``sessionlog.indexer.sqlite_view`` keeps in one SQLite file.

Same contract as :class:`~sessionlog.query.opensearch_provider.OpenSearchProvider`: the same
validation (:func:`~sessionlog.query.plan.plan_request`), errors, ranking tiers
(:func:`~sessionlog.query.scoring.score_text`), excerpts, browse order, ``searched`` count and
signed cursors. Every statement carries the scope as a SQL condition.

How a search runs, index-backed throughout (no statement scans the events table):

1. **Typo candidates** per query word (3+ letters, no digits): vocabulary terms within the word's
   edit budget, found in the ``terms`` table by an index range on the word's first half (prefix) and
   one on its second half (suffix, on reversed terms) — every one-edit variant keeps one of the two —
   plus, for two-edit words, terms sharing enough padded trigrams with it (``terms_tri``: one
   ``MATCH`` per trigram, counted with ``GROUP BY … HAVING``); each is verified with a real
   edit distance (rapidfuzz OSA) and the closest :data:`MAX_EXPANSIONS` kept.
2. **Candidate entries** per word: the word as a whole folded word (``events_words``), any of its
   typo candidates (``events_words``, ``OR``), or the word as a substring (``events_tri``); all
   words must match (or, for the closest-matches fallback, one). The scope and kind filters are
   applied to these rows by primary key.
3. **Ranking**: SQL gives each candidate an upper bound of its score from which index matched (the
   tiers of :mod:`sessionlog.query.scoring`), then candidates are scored exactly with
   :func:`score_text` in bound order until no remaining bound can reach the page: the result is the
   exact top of the Python ranking without reading every candidate's text. Equal scores are ordered
   like OpenSearch's small BM25 term orders them (rarer words, more occurrences, closer spellings:
   FTS5 ``bm25`` of the word and typo arms), then by recency.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Unpack

import orjson
from rapidfuzz.distance import OSA

from sessionlog.query.builder import QueryPlan
from sessionlog.query.config import check_int, check_scope
from sessionlog.query.deadline import Deadline
from sessionlog.query.engine import Corpus, EngineHit, EnginePage, EngineQuery
from sessionlog.query.options import SQLiteProviderOptions
from sessionlog.query.provider import SearchProvider
from sessionlog.query.scope import Scope
from sessionlog.query.scoring import (
    PHRASE_EXACT,
    TIER_EXACT,
    TIER_FUZZY,
    TIER_SUBSTRING,
    score_text,
    typo_budget,
)
from sessionlog.query.sqlite_access import SQLiteFile, sqlite_file

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
#: Typo candidates kept per query word (OpenSearch's fuzzy query expands to 50 terms).
MAX_EXPANSIONS: Final = 64
#: Vocabulary terms a trigram probe may return before verification.
_TRIGRAM_PROBE_LIMIT: Final = 2000
_ARGS_WEIGHT: Final = 0.75
_TOP: Final = "\U0010ffff"
_EPSILON: Final = 1e-9


_EXACT, _TYPO, _SUBSTRING = 0, 1, 2
#: ``tier * _SCALE + tiebreak`` packs a hit's tier and its BM25 tiebreak into one sortable number.
_SCALE: Final = 1_000_000.0


class _Word:
    """One folded query word: which tiers it can reach beyond a whole-word match."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.budget = _fuzzy_budget(text)
        self.expansions: list[tuple[int, str]] = []
        # Until the typo candidates are known, a substring hit may also be a typo match.
        self.substring_tier = 0.0 if len(text) < 3 else (TIER_FUZZY if self.budget else TIER_SUBSTRING)

    def expand(self, conn: sqlite3.Connection, limit: int) -> None:
        self.expansions, complete = _expansions(conn, self.text, limit)
        if complete and self.substring_tier:
            # Every term within the budget is an expansion: a substring-only hit is only a substring.
            self.substring_tier = TIER_SUBSTRING

    def has(self, phase: int) -> bool:
        return bool(self.expansions) if phase == _TYPO else bool(self.substring_tier)

    def best_after(self, phase: int) -> float:
        """The best tier this word can reach through arms of later phases (0: none)."""
        later = []
        if phase < _TYPO and self.budget:
            later.append(TIER_FUZZY)
        if phase < _SUBSTRING and self.substring_tier:
            later.append(self.substring_tier)
        return max(later, default=0.0)


@dataclass(frozen=True, slots=True)
class _Candidate:
    rid: int
    seq: int
    session_id: str
    bound: float
    tiebreak: float


def _phrase(text: str) -> str:
    """An FTS5 string literal (a phrase of whatever tokens the table's tokenizer makes of it)."""
    return '"' + text.replace('"', '""') + '"'


def _fuzzy_budget(word: str) -> int:
    # The tiers of scoring.score_text: no typo tier for a word with digits.
    return 0 if any(ch.isdigit() for ch in word) else typo_budget(word)


def typo_candidates(conn: sqlite3.Connection, word: str, *, limit: int = MAX_EXPANSIONS) -> list[str]:
    """Vocabulary terms within ``word``'s typo budget (not the word itself), closest first.

    Index-backed: ``(len, term)`` and ``(len, rterm)`` ranges for the halves of the word, and the
    padded trigrams of the word in ``terms_tri`` for words with a two-edit budget."""
    return [term for _, term in _expansions(conn, word, limit)[0]]


def _expansions(conn: sqlite3.Connection, word: str, limit: int) -> tuple[list[tuple[int, str]], bool]:
    """``(edit distance, term)`` of :func:`typo_candidates`, and whether nothing was cut (neither
    the ``limit`` nor the trigram probe's cap was reached)."""
    budget = _fuzzy_budget(word)
    n = len(word)
    if budget == 0:
        return [], True
    found: set[str] = set()
    complete = True
    # Every one-edit variant keeps the first half or the second half (around the middle letter).
    half = n // 2
    prefix, suffix = word[:half], word[half + 1 :]
    for length in range(max(1, n - budget), n + budget + 1):
        if prefix:
            found.update(
                r[0]
                for r in conn.execute(
                    "SELECT term FROM terms WHERE len = ? AND term >= ? AND term < ?",
                    (length, prefix, prefix + _TOP),
                )
            )
        if suffix:
            rsuffix = suffix[::-1]
            found.update(
                r[0]
                for r in conn.execute(
                    "SELECT term FROM terms WHERE len = ? AND rterm >= ? AND rterm < ?",
                    (length, rsuffix, rsuffix + _TOP),
                )
            )
    if budget >= 2:
        probed = _trigram_probe(conn, word, budget)
        complete = len(probed) < _TRIGRAM_PROBE_LIMIT
        found.update(probed)
    scored = []
    for term in found:
        if term == word or abs(len(term) - n) > budget:
            continue
        distance = OSA.distance(word, term, score_cutoff=budget)
        if distance <= budget:
            scored.append((distance, term))
    scored.sort()
    return scored[:limit], complete and len(scored) <= limit


def _trigram_probe(conn: sqlite3.Connection, word: str, budget: int) -> list[str]:
    """Terms of a similar length sharing at least ``max(1, g - 4 * budget)`` of the word's ``g``
    distinct padded trigrams (an edit removes at most three of them, an adjacent swap four)."""
    padded = f" {word} "
    grams = list(dict.fromkeys(padded[i : i + 3] for i in range(len(padded) - 2)))
    need = max(1, len(grams) - 4 * budget)
    union = " UNION ALL ".join("SELECT rowid AS tid FROM terms_tri WHERE terms_tri MATCH ?" for _ in grams)
    sql = (
        f"SELECT t.term FROM (SELECT tid, count(*) AS shared FROM ({union}) GROUP BY tid "
        "HAVING count(*) >= ?) c JOIN terms t ON t.tid = c.tid WHERE t.len BETWEEN ? AND ? "
        "ORDER BY c.shared DESC LIMIT ?"
    )
    params: list[Any] = [_phrase(g) for g in grams]
    params += [need, len(word) - budget, len(word) + budget, _TRIGRAM_PROBE_LIMIT]
    return [r[0] for r in conn.execute(sql, params)]


class SQLiteEngine:
    """The embedded :class:`~sessionlog.query.engine.SearchEngine`: every statement carries the
    scope as a SQL condition; one read transaction per call (a consistent snapshot), bounded by
    the call's deadline. Thread-safe (one connection behind a lock)."""

    log_topic: str | None = LOG_TOPIC

    def __init__(self, scope: Scope, file: SQLiteFile, *, max_expansions: int = MAX_EXPANSIONS) -> None:
        self.scope = check_scope(scope, "provider")
        self.max_expansions = check_int(max_expansions, "max_expansions", 1, 10_000)
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
        words = [_Word(word) for word in plan.words]
        ceiling = PHRASE_EXACT if len(words) > 1 else 0.0
        conn.execute("DELETE FROM temp.sl_hits")
        for phase in (_EXACT, _TYPO, _SUBSTRING):
            if phase == _TYPO:
                for word in words:
                    word.expand(conn, self.max_expansions)
            if phase != _EXACT and not any(w.has(phase) for w in words):
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
    def _insert_hits(conn: sqlite3.Connection, words: Sequence[_Word], phase: int) -> None:
        """Add the index hits of ``phase``'s arms: ``(rid, word number, tier * 1e6 + tiebreak)``.

        The tiebreak is BM25 from ``events_words`` (rarer words, more occurrences, shorter entries),
        halved for one-edit and quartered for two-edit spellings: OpenSearch's small BM25 term,
        never crossing a tier. The phrase arm (word number -1) comes with the first phase."""
        arms: list[str] = []
        params: list[Any] = []
        for i, word in enumerate(words):
            if phase == _EXACT:
                arms.append(
                    f"SELECT rowid, {i}, {TIER_EXACT * _SCALE} - bm25(events_words) "
                    "FROM events_words WHERE events_words MATCH ?"
                )
                params.append(_phrase(word.text))
            elif phase == _TYPO:
                for distance, factor in ((1, 0.5), (2, 0.25)):
                    terms = [term for d, term in word.expansions if d == distance]
                    if terms:
                        arms.append(
                            f"SELECT rowid, {i}, {TIER_FUZZY * _SCALE} - {factor} * bm25(events_words) "
                            "FROM events_words WHERE events_words MATCH ?"
                        )
                        params.append(" OR ".join(_phrase(t) for t in terms))
            elif word.substring_tier:
                arms.append(
                    f"SELECT rowid, {i}, {word.substring_tier * _SCALE} "
                    "FROM events_tri WHERE events_tri MATCH ?"
                )
                params.append(_phrase(word.text))
        if phase == _EXACT and len(words) > 1:
            arms.append(f"SELECT rowid, -1, {PHRASE_EXACT * _SCALE} FROM events_tri WHERE events_tri MATCH ?")
            params.append(_phrase(" ".join(w.text for w in words)))
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
        tiers = " + ".join(f"coalesce(CAST(m{i} / {_SCALE} AS INTEGER), 0)" for i in range(n))
        breaks = " + ".join(
            f"coalesce(m{i} - CAST(m{i} / {_SCALE} AS INTEGER) * {_SCALE}, 0)" for i in range(n)
        )
        weight = f"(CASE WHEN e.type = 'tool/call' THEN {_ARGS_WEIGHT} ELSE 1.0 END)"
        scope_sql, scope_params = self._scope_sql(session_id)
        filter_sql, filter_params = self._filter_sql(plan)
        sql = (
            f"WITH cand AS (SELECT rid, {best}, max(CASE WHEN w < 0 THEN v ELSE 0 END) / {_SCALE} AS ph "
            f"FROM temp.sl_hits GROUP BY rid HAVING {present} {'>= 1' if partial else f'= {n}'}) "
            f"SELECT e.rid, e.seq, e.session_id, ({tiers}) * {weight} + c.ph AS bound, "
            f"({breaks}) * {weight} AS tb "
            "FROM cand c CROSS JOIN events e ON e.rid = c.rid "
            f"WHERE {scope_sql} AND {filter_sql} "
            "ORDER BY bound DESC, tb DESC, e.seq DESC, e.session_id ASC"
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
    options and ``max_expansions`` taken from ``options``), and the provider options left."""
    file, rest = sqlite_file(path, "SESSION_QUERY_INDEX_FAILED", options, setup=prepare_connection)
    expansions = rest.pop("max_expansions", MAX_EXPANSIONS)
    return SQLiteEngine(scope, file, max_expansions=expansions), rest


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
