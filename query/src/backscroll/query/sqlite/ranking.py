"""The SQL pieces of the embedded search and its exact top-k, for
:class:`~backscroll.query.sqlite.provider.SQLiteEngine`.

The scope and filter conditions every statement carries, the candidates that the index hits
(:class:`~backscroll.query.sqlite.hits.Hits`) make, each with an upper bound of its score, and
the exact top of the ranking scored from the candidates in bound order until no remaining bound
can reach the page.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from backscroll.indexer.sqlite.rows import time_us
from backscroll.query.plan import QueryPlan
from backscroll.query.scan import ARGS_WEIGHT
from backscroll.query.scope import Scope
from backscroll.query.scoring import score_text
from backscroll.query.sqlite.hits import Hits

__all__ = [
    "EPSILON",
    "Candidate",
    "Placed",
    "below",
    "candidates",
    "exact_top",
    "filter_where",
    "place",
    "scope_where",
]

#: Slack in score comparisons (floating-point sums of tiers).
EPSILON: Final = 1e-9
_CHUNK: Final = 500  # rids per ``IN`` list


#: An entry the index lookups found, as its sort key: (-bound, -seq, session id, rid). Sorted
#: natively: by score bound, then recency, then session.
Candidate = tuple[float, int, str, int]


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
        # The search tools' own calls and results are not history worth finding.
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


#: An entry's sort fields (seq, session id) and whether its text is tool arguments, or ``None``
#: when it is out of the scope or filters.
Placed = tuple[int, str, bool] | None


def place(
    conn: sqlite3.Connection,
    scope: Scope,
    plan: QueryPlan,
    session_id: str | None,
    rids: Iterable[int],
    known: dict[int, Placed],
) -> int:
    """Look up the entries of ``rids`` that ``known`` does not hold yet: their sort fields when
    they are in the scope and pass the filters, else ``None``. Returns how many were looked up."""
    unknown = [rid for rid in rids if rid not in known]
    if not unknown:
        return 0
    scope_sql, scope_params = scope_where(scope, session_id)
    filter_sql, filter_params = filter_where(plan)
    for start in range(0, len(unknown), _CHUNK):
        chunk = unknown[start : start + _CHUNK]
        known.update(dict.fromkeys(chunk))
        marks = ",".join("?" * len(chunk))
        known.update(
            (int(rid), (int(seq), str(sid), kind == "tool/call"))
            for rid, seq, sid, kind in conn.execute(
                # By rowid: the planner would rather scan the scope's whole workspace index.
                f"SELECT e.rid, e.seq, e.session_id, e.type FROM events e NOT INDEXED "
                f"WHERE e.rid IN ({marks}) AND {scope_sql} AND {filter_sql}",
                [*chunk, *scope_params, *filter_params],
            )
        )
    return len(unknown)


def candidates(hits: Hits, partial: bool, known: dict[int, Placed]) -> list[Candidate]:
    """Candidates of the hits so far (placed by :func:`place`), in (bound, seq descending,
    session) order: all words present (or, ``partial``, any), in the scope and filters."""
    key = (hits.state(), partial)
    built = hits.built.get(key)
    if built is not None and built[0] is known:
        return list(built[1])
    out = []
    bound = hits.bound
    for rid in hits.entries(partial):
        placed = known[rid]
        if placed is not None:
            seq, session_id, args = placed
            out.append((-bound(rid, args), -seq, session_id, rid))
    out.sort()
    hits.built[key] = (known, out)
    return list(out)


def exact_top(
    conn: sqlite3.Connection,
    candidates: Sequence[Candidate],
    plan: QueryPlan,
    partial: bool,
    need: int,
    check_deadline: Callable[[], None],
    memo: dict[int, float | None] | None = None,
) -> list[tuple[int, float]]:
    """Score candidates in (bound, seq) order until none left can enter the top ``need``.

    A candidate's key is (exact score, seq); its score is at most its bound, so once the next
    candidate's (bound, seq) is below the ``need``-th best key, no later one can enter. Only the
    texts of the candidates read before that point are scored. ``memo`` holds the scores
    (``None``: no match) of this query already computed on the same data (rid → score): later
    phases, and the next page, re-rank many of the same candidates."""
    memo = {} if memo is None else memo
    best: list[tuple[float, int]] = []  # min-heap of the top ``need`` keys so far
    scored: list[tuple[float, int, str, int]] = []
    i, chunk = 0, need + 16  # bounds are mostly exact: about a page of texts is enough
    while i < len(candidates):
        if len(best) >= need and below(candidates[i], best[0]):
            break
        check_deadline()
        batch = candidates[i : i + chunk]
        i += len(batch)
        chunk = min(chunk * 2, 2000)
        unknown = [rid for _, _, _, rid in batch if rid not in memo]
        if unknown:
            marks = ",".join("?" * len(unknown))
            for rid, kind, text in conn.execute(
                f"SELECT rid, type, text FROM events WHERE rid IN ({marks})", unknown
            ):
                weight = ARGS_WEIGHT if kind == "tool/call" else 1.0
                memo[int(rid)] = score_text(text, plan.raw_words, plan.words, weight=weight, partial=partial)
        for _, neg_seq, session_id, rid in batch:
            score = memo[rid]
            if score is None:
                continue
            scored.append((-score, neg_seq, session_id, rid))
            key = (score, -neg_seq)
            if len(best) < need:
                heapq.heappush(best, key)
            elif key > best[0]:
                heapq.heapreplace(best, key)
    scored.sort()
    return [(rid, -neg_score) for neg_score, _, _, rid in scored[:need]]


def below(cand: Candidate, kth: tuple[float, int]) -> bool:
    """Whether ``cand`` (and so every later candidate) cannot beat the ``kth`` best key."""
    bound = -cand[0]
    if bound < kth[0] - EPSILON:
        return True
    if bound > kth[0] + EPSILON:
        return False
    return -cand[1] < kth[1]
