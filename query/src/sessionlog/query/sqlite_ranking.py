"""The SQL pieces of the embedded search and its exact top-k, for
:class:`~sessionlog.query.sqlite_provider.SQLiteEngine`.

The scope and filter conditions every statement carries, the index hits of a phase into
``temp.sl_hits``, the candidates those hits make (each with an upper bound of its score), and the
exact top of the ranking scored from the candidates in bound order until no remaining bound can
reach the page.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sessionlog.indexer.sqlite_rows import time_us
from sessionlog.query import candidates as arms_of
from sessionlog.query.builder import QueryPlan
from sessionlog.query.candidates import WordArms
from sessionlog.query.scope import Scope
from sessionlog.query.scoring import PHRASE_EXACT, max_bonus, phrase_words, score_text
from sessionlog.query.sqlite_scan import ARGS_WEIGHT

__all__ = [
    "EPSILON",
    "Candidate",
    "below",
    "candidates",
    "exact_top",
    "filter_where",
    "insert_hits",
    "scope_where",
]

#: Slack in score comparisons (floating-point sums of tiers).
EPSILON: Final = 1e-9


@dataclass(frozen=True, slots=True)
class Candidate:
    """An entry the index lookups found: its score bound and its place among equal bounds."""

    rid: int
    seq: int
    session_id: str
    bound: float
    tiebreak: float


def scope_where(scope: Scope, session_id: str | None) -> tuple[str, list[Any]]:
    """The scope (and the session, if one) as a condition on ``events e``."""
    column = "session_id" if scope.kind == "sessions" else "workspace_id"
    marks = ",".join("?" * len(scope.ids))
    sql = f"e.{column} IN ({marks})"
    params: list[Any] = list(scope.ids)
    if session_id is not None:
        sql += " AND e.session_id = ?"
        params.append(session_id)
    return sql, params


def filter_where(plan: QueryPlan) -> tuple[str, list[Any]]:
    """The kinds, tool and time filters of ``plan`` as a condition on ``events e``."""
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
        params.append(time_us(plan.since.isoformat()))
    if plan.until is not None:
        sql += " AND e.time_us <= ?"
        params.append(time_us(plan.until.isoformat()))
    return sql, params


def insert_hits(conn: sqlite3.Connection, words: Sequence[WordArms], phase: int) -> None:
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


def candidates(
    conn: sqlite3.Connection, scope: Scope, plan: QueryPlan, n: int, session_id: str | None, partial: bool
) -> list[Candidate]:
    """Candidates of the hits so far, in (bound, tiebreak, seq, session) order: the best hit per
    word and entry, all ``n`` words present (or, ``partial``, any), then the scope and kind
    filters by primary key."""
    best = ", ".join(f"max(CASE WHEN w = {i} THEN v END) AS m{i}" for i in range(n))
    present = " + ".join(f"max(w = {i})" for i in range(n))
    tiers = " + ".join(f"coalesce(m{i}, 0)" for i in range(n))
    scope_sql, scope_params = scope_where(scope, session_id)
    filter_sql, filter_params = filter_where(plan)
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
        Candidate(int(r[0]), int(r[1]), str(r[2]), float(r[3]), float(r[4]))
        for r in conn.execute(sql, [*scope_params, *filter_params])
    ]


def exact_top(
    conn: sqlite3.Connection,
    candidates: Sequence[Candidate],
    plan: QueryPlan,
    partial: bool,
    need: int,
    check_deadline: Callable[[], None],
) -> list[tuple[int, float]]:
    """Score candidates in (bound, tiebreak, seq) order until none left can enter the top ``need``.

    A candidate's key is (exact score, tiebreak, seq); its score is at most its bound, so once the
    next candidate's (bound, tiebreak, seq) is below the ``need``-th best key, no later one can
    enter. Only the texts of the candidates read before that point are scored."""
    best: list[tuple[float, float, int]] = []  # min-heap of the top ``need`` keys so far
    scored: list[tuple[float, float, int, str, int]] = []
    i, chunk = 0, max(16, 2 * need)
    while i < len(candidates):
        if len(best) >= need and below(candidates[i], best[0]):
            break
        check_deadline()
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


def below(cand: Candidate, kth: tuple[float, float, int]) -> bool:
    """Whether ``cand`` (and so every later candidate) cannot beat the ``kth`` best key."""
    if cand.bound < kth[0] - EPSILON:
        return True
    if cand.bound > kth[0] + EPSILON:
        return False
    return (cand.tiebreak, cand.seq) < (kth[1], kth[2])
