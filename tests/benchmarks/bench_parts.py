"""The embedded identifier-parts lookup against the plain SQL intersection, query by query (on demand).

Takes a relevance result that keeps its query list (``tests.benchmarks.run relevance``) and the
embedded file of the same corpus (``python -m tests.benchmarks.relevance_misses --load N --sqlite
DIR``). Every query of the chosen scope kind runs four times in a row, alternating the two ways of
finding an identifier's parts (``sessionlog.query.sqlite_parts``, from the rarest part and narrowed
to the other words' entries, against the intersection of every part's lookups in SQL), with the
engine's memo cleared before each run so every search is cold; the faster of each pair counts.
Prints p50 / p95 / p99 per way and the queries that moved most, and fails if any page differs.
Not collected by pytest.

    python -m tests.benchmarks.bench_parts RESULT.json --sqlite DIR [--scope workspace|session]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests.benchmarks.metrics import percentile

from sessionlog.query import Scope, SessionQueryRequest, sqlite_hits
from sessionlog.query.candidates import Arm
from sessionlog.query.sqlite_provider import SQLiteProvider

_Lookup = Callable[..., Iterable[int]]


def _in_sql(
    conn: Any, arm: Arm, within: str = "", bounds: tuple[Any, ...] = (), only: set[int] | None = None
) -> Iterable[int]:
    """The intersection of every part's lookups in one statement (``only`` ignored)."""
    return [rid for (rid,) in conn.execute(f"SELECT rowid FROM ({arm.sql}){within}", (*arm.params, *bounds))]


def _timed(provider: SQLiteProvider, lookup: _Lookup, text: str) -> tuple[float, list[int]]:
    setattr(sqlite_hits, "parts_rowids", lookup)  # noqa: B010  # the name the engine calls
    provider.engine._memo.check(object())  # cold: nothing kept from an earlier search
    start = time.perf_counter()
    result = provider.search(SessionQueryRequest(query=text, limit=10))
    return (time.perf_counter() - start) * 1000, [m.seq for m in result.matches]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, help="a relevance result JSON with its query list")
    parser.add_argument("--sqlite", type=Path, required=True, help="directory of the embedded file")
    parser.add_argument("--scope", choices=("workspace", "session"), default="workspace")
    args = parser.parse_args()
    queries = [
        q for q in json.loads(args.result.read_text("utf-8"))["query_list"] if q["scope_kind"] == args.scope
    ]
    rarest: _Lookup = getattr(sqlite_hits, "parts_rowids")  # noqa: B009  # swapped below
    providers: dict[str, SQLiteProvider] = {}
    rows: list[tuple[float, float, str]] = []
    try:
        for query in queries:
            scope_id = query["scope_id"]
            if scope_id not in providers:
                scope = Scope.workspace(scope_id) if args.scope == "workspace" else Scope.session(scope_id)
                providers[scope_id] = SQLiteProvider(
                    scope, args.sqlite / "sessionlog.db", request_timeout_s=60.0
                )
            provider = providers[scope_id]
            runs = [_timed(provider, lookup, query["text"]) for lookup in (_in_sql, rarest, _in_sql, rarest)]
            if runs[0][1] != runs[1][1]:
                raise SystemExit(f"pages differ for {query['text']!r}: {runs[0][1]} vs {runs[1][1]}")
            rows.append((min(runs[0][0], runs[2][0]), min(runs[1][0], runs[3][0]), query["text"]))
    finally:
        setattr(sqlite_hits, "parts_rowids", rarest)  # noqa: B010
        for provider in providers.values():
            provider.close()
    moved = sorted(rows, key=lambda row: row[1] - row[0])
    for before, after, text in [*moved[:8], *moved[-5:]]:
        print(f"{after - before:+8.1f} ms  in SQL {before:7.1f}  rarest first {after:7.1f}  {text!r}")
    for name, ms in (("in SQL", [row[0] for row in rows]), ("rarest first", [row[1] for row in rows])):
        p50, p95, p99 = (percentile(ms, p) for p in (50, 95, 99))
        print(f"{name:13} n={len(ms)} p50 {p50:.1f} p95 {p95:.1f} p99 {p99:.1f} ms")


if __name__ == "__main__":
    main()
