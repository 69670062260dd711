"""One embedded search change, on and off, query by query (on demand).

Takes a relevance result that keeps its query list (``benchmarks.run relevance``) and the
embedded file of the same corpus (``python -m benchmarks.relevance_misses --load N --sqlite
DIR``). Every query of the chosen scope kind runs four times in a row, alternating the change off
and on, with the engine's memo cleared before each run so every search is cold; the faster of each
pair counts. Prints p50 / p95 / p99 per way and the queries that moved most. Not collected by
pytest. The changes:

``parts``    an identifier's parts from the rarest part, narrowed to the other words' entries
             (``backscroll.query.sqlite.parts``), against the intersection of every part's
             lookups in SQL. The pages must be the same (the tool fails otherwise).
``crowded``  a second window of readings when one reading fills the first
             (``backscroll.query.typo_readings.crowded``), against none. Pages may differ: that is
             the point of the change; how often it fires is printed.
``inside``   the entries of a typo's readings inside longer words
             (``backscroll.query.typo_readings.inside_readings``), against none. Pages may differ; how
             often a search looks readings up is printed.
``narrow``   a workspace scope's hits narrowed to its entries once placing hits one by one would
             cost more than reading them (``SQLiteEngine._narrow_to_scope``), against never. The
             pages must be the same.

``--warm`` keeps what the engines remember between searches instead, as an application's providers
do: each way has its own provider per scope, each query runs once per way (the order alternating
from query to query), ``--passes`` times over the list.

    python -m benchmarks.bench_search_ab RESULT.json --sqlite DIR [--change parts|crowded|inside|narrow]
        [--scope workspace|session] [--warm [--passes N]]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from backscroll.query import Scope, SessionQueryRequest
from backscroll.query import typo_readings as readings
from backscroll.query.engine import EngineHit
from backscroll.query.plan import QueryPlan
from backscroll.query.sqlite import hits as sqlite_hits
from backscroll.query.sqlite import provider as sqlite_provider
from backscroll.query.sqlite.candidates import Arm
from backscroll.query.sqlite.provider import SQLiteProvider
from benchmarks.metrics import percentile


def _in_sql(
    conn: Any, arm: Arm, within: str = "", bounds: tuple[Any, ...] = (), only: set[int] | None = None
) -> Iterable[int]:
    """The intersection of every part's lookups in one statement (``only`` ignored)."""
    return [rid for (rid,) in conn.execute(f"SELECT rowid FROM ({arm.sql}){within}", (*arm.params, *bounds))]


class _Switch:
    """Puts one module attribute back and forth between the code's own and the "off" version."""

    def __init__(self, module: Any, name: str, off: Callable[..., Any]) -> None:
        self.module, self.name, self.off = module, name, off
        self.on: Callable[..., Any] = getattr(module, name)
        self.fired = 0

    def set(self, on: bool) -> None:
        setattr(self.module, self.name, self._counted if on else self.off)

    def _counted(self, *args: Any, **kwargs: Any) -> Any:
        found = self.on(*args, **kwargs)
        self.fired += bool(found) if self.name in ("crowded", "inside_readings") else 0
        return found

    def restore(self) -> None:
        setattr(self.module, self.name, self.on)


class _Threshold:
    """Puts a module constant back and forth between the code's own value and ``off``."""

    def __init__(self, module: Any, name: str, off: int) -> None:
        self.module, self.name, self.off = module, name, off
        self.on: int = getattr(module, name)
        self.fired = 0

    def set(self, on: bool) -> None:
        setattr(self.module, self.name, self.on if on else self.off)

    def restore(self) -> None:
        setattr(self.module, self.name, self.on)


def _no_crowd(plan: QueryPlan, window: Sequence[EngineHit]) -> frozenset[str]:
    return frozenset()


def _no_inside(plan: QueryPlan, pool: Sequence[EngineHit], known: Any) -> list[tuple[int, str]]:
    return []


def _timed(
    provider: SQLiteProvider, switch: _Switch | _Threshold, on: bool, text: str, cold: bool = True
) -> tuple[float, list[int]]:
    switch.set(on)
    if cold:  # nothing kept from an earlier search
        provider.engine._memo.check(object())
    start = time.perf_counter()
    result = provider.search(SessionQueryRequest(query=text, limit=10))
    return (time.perf_counter() - start) * 1000, [m.seq for m in result.matches]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, help="a relevance result JSON with its query list")
    parser.add_argument("--sqlite", type=Path, required=True, help="directory of the embedded file")
    parser.add_argument("--change", choices=("parts", "crowded", "inside", "narrow"), default="parts")
    parser.add_argument("--scope", choices=("workspace", "session"), default="workspace")
    parser.add_argument("--warm", action="store_true", help="keep each way's providers and memo")
    parser.add_argument("--passes", type=int, default=1, help="passes over the queries (--warm)")
    args = parser.parse_args()
    every = json.loads(args.result.read_text("utf-8"))["query_list"]
    queries = [q for q in every if q["scope_kind"] == args.scope]
    switch: _Switch | _Threshold
    if args.change == "parts":
        switch = _Switch(sqlite_hits, "parts_rowids", _in_sql)
    elif args.change == "narrow":
        switch = _Threshold(sqlite_provider, "_MEMBERS_MAX", 0)
    elif args.change == "crowded":
        switch = _Switch(readings, "crowded", _no_crowd)
    else:
        switch = _Switch(readings, "inside_readings", _no_inside)
    providers: dict[tuple[str, bool], SQLiteProvider] = {}

    def provider(scope_id: str, way: bool) -> SQLiteProvider:
        if (scope_id, way) not in providers:
            scope = Scope.workspace(scope_id) if args.scope == "workspace" else Scope.session(scope_id)
            path = args.sqlite / "backscroll.db"
            providers[scope_id, way] = SQLiteProvider(scope, path, request_timeout_s=60.0)
        return providers[scope_id, way]

    rows: list[tuple[float, float, str]] = []
    try:
        for number, query in enumerate(queries * (args.passes if args.warm else 1)):
            scope_id, text = query["scope_id"], query["text"]
            if args.warm:
                order = (False, True) if number % 2 else (True, False)
                timed = {on: _timed(provider(scope_id, on), switch, on, text, cold=False) for on in order}
                (off_ms, off_page), (on_ms, on_page) = timed[False], timed[True]
            else:
                runs = [_timed(provider(scope_id, False), switch, on, text) for on in (False, True) * 2]
                (off_ms, off_page), (on_ms, on_page) = runs[0], runs[1]
                off_ms, on_ms = min(off_ms, runs[2][0]), min(on_ms, runs[3][0])
            if args.change in ("parts", "narrow") and off_page != on_page:
                raise SystemExit(f"pages differ for {text!r}: {off_page} vs {on_page}")
            rows.append((off_ms, on_ms, text))
    finally:
        switch.restore()
        for opened in providers.values():
            opened.close()
    moved = sorted(rows, key=lambda row: row[1] - row[0])
    for before, after, text in [*moved[:8], *moved[-5:]]:
        print(f"{after - before:+8.1f} ms  off {before:7.1f}  on {after:7.1f}  {text!r}")
    for name, ms in (("off", [row[0] for row in rows]), ("on", [row[1] for row in rows])):
        p50, p95, p99 = (percentile(ms, p) for p in (50, 95, 99))
        print(f"{args.change} {name:4} n={len(ms)} p50 {p50:.1f} p95 {p95:.1f} p99 {p99:.1f} ms")
    if args.change == "crowded":
        print(f"a second window in {switch.fired // 2} of {len(rows)} queries")
    if args.change == "inside":
        print(f"readings looked up inside longer words in {switch.fired // 2} of {len(rows)} queries")


if __name__ == "__main__":
    main()
