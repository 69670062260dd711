"""Benchmark: what the readings window costs (every reading of an ambiguous typo first).

Takes the typo queries of a relevance result file (``benchmarks/results/relevance-*.json``,
which keeps its query list) and runs each twice against a corpus that run loaded, once with the
window and once without it, alternating which goes first, in one process. Prints client-side
latency percentiles per mode. Not collected by pytest.

    python -m benchmarks.bench_typo_readings RESULT.json --index-prefix rel14after   # OpenSearch
    python -m benchmarks.bench_typo_readings RESULT.json --sqlite DIR                 # embedded

The OpenSearch index must still hold the run's corpus (the relevance run leaves it in place); for
the embedded backend, ``DIR/backscroll.db`` must hold the same corpus (``EmbeddedSystem(DIR).load``
of the run's records, seed and size alike).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backscroll.query import Scope, SessionQueryRequest
from backscroll.query import typo_readings as readings
from backscroll.query.engine import EngineHit
from backscroll.query.plan import QueryPlan
from backscroll.query.sqlite.provider import SQLiteProvider
from benchmarks.sys_backscroll import BackscrollSystem


class _ExistingFile:
    """The embedded system over a file loaded earlier (``EmbeddedSystem`` starts from an empty one)."""

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise SystemExit(f"no embedded file at {path}")
        self.path = path
        self.providers: dict[tuple[str, str], SQLiteProvider] = {}

    def search(self, scope_kind: str, scope_id: str, query: str, limit: int) -> list[str]:
        provider = self.providers.get((scope_kind, scope_id))
        if provider is None:
            scope = Scope.session(scope_id) if scope_kind == "session" else Scope.workspace(scope_id)
            provider = self.providers[scope_kind, scope_id] = SQLiteProvider(
                scope, self.path, request_timeout_s=30.0
            )
        request = SessionQueryRequest(
            session_id=scope_id if scope_kind == "session" else None, query=query, limit=limit
        )
        return [f"{m.session_id}:{m.seq}" for m in provider.search(request).matches]

    def close(self) -> None:
        for provider in self.providers.values():
            provider.close()


def _never(plan: QueryPlan, hits: Sequence[EngineHit], size: int) -> bool:
    return False


def _summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    n = len(ordered)
    return (
        f"n={n} p50 {ordered[n // 2]:.1f} p90 {ordered[int(n * 0.9)]:.1f} "
        f"p99 {ordered[int(n * 0.99)]:.1f} mean {statistics.mean(ordered):.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, help="a relevance result JSON with its query list")
    parser.add_argument("--index-prefix", help="OpenSearch index prefix the run loaded")
    parser.add_argument("--opensearch", default="http://127.0.0.1:9200")
    parser.add_argument("--sqlite", type=Path, help="directory of the embedded file (backscroll.db)")
    args = parser.parse_args()
    queries = [
        q for q in json.loads(args.result.read_text("utf-8"))["query_list"] if q["variant"].startswith("typo")
    ]
    system: Any
    if args.sqlite is not None:
        system = _ExistingFile(args.sqlite / "backscroll.db")
    else:
        system = BackscrollSystem(hosts=args.opensearch, index_prefix=args.index_prefix or "bench")
    needed = readings.window_needed
    latencies: dict[str, list[float]] = {"window": [], "off": []}
    try:
        for i, query in enumerate(queries):
            for mode in ("window", "off") if i % 2 else ("off", "window"):
                readings.window_needed = needed if mode == "window" else _never
                t0 = time.perf_counter()
                system.search(query["scope_kind"], query["scope_id"], query["text"], 10)
                latencies[mode].append((time.perf_counter() - t0) * 1000)
    finally:
        readings.window_needed = needed
        system.close()
    for mode, values in latencies.items():
        print(f"{mode:7} {_summary(values)}")


if __name__ == "__main__":
    main()
