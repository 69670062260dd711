"""Every query of one scope kind, each the first search of a fresh embedded provider (on demand).

For comparing two checkouts of the engine, whose code cannot be switched inside one process: run
this once per checkout in turn (a worktree's sources first on ``PYTHONPATH``), a few times each,
then ``--compare`` prints each run's p50 / p95 / p99 and, per checkout, those of each query's
fastest run (what is left of the machine's noise). The file is opened by a search for a word that
matches nothing, and the engine's memo is then cleared, so the timed search pays what a
provider's first search does on a file already open: the scope's count, its scan or lookups, the
provider core's later calls (the window of readings). Not collected by pytest.

    python -m benchmarks.bench_cold_search RESULT.json --sqlite DIR --scope session --out B-1.json
    python -m benchmarks.bench_cold_search --compare A-1.json A-2.json B-1.json B-2.json

``RESULT.json`` is a relevance result that keeps its query list (``python -m benchmarks.run
relevance``, as ``bench_search_ab`` takes); ``DIR`` holds the embedded file of the same corpus.
The label of a run is its file name up to the last ``-``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.sqlite.provider import SQLiteProvider
from benchmarks.metrics import percentile


def _times(result: Path, path: Path, scope_kind: str) -> list[float]:
    every = json.loads(result.read_text("utf-8"))["query_list"]
    times = []
    for query in (q for q in every if q["scope_kind"] == scope_kind):
        scope_id = query["scope_id"]
        scope = Scope.session(scope_id) if scope_kind == "session" else Scope.workspace(scope_id)
        with SQLiteProvider(scope, path, request_timeout_s=60.0) as provider:
            provider.search(SessionQueryRequest(query="zzqqxx", limit=10))
            provider.engine._memo.check(object())  # nothing kept from that search
            session = scope_id if scope_kind == "session" else None
            start = time.perf_counter()
            provider.search(SessionQueryRequest(query=query["text"], limit=10, session_id=session))
            times.append((time.perf_counter() - start) * 1000)
    return times


def _line(label: str, ms: list[float]) -> str:
    p50, p95, p99 = (percentile(ms, p) for p in (50, 95, 99))
    return f"{label}: n={len(ms)} mean {sum(ms) / len(ms):.2f} p50 {p50:.1f} p95 {p95:.1f} p99 {p99:.1f} ms"


def _compare(files: list[Path]) -> None:
    runs: dict[str, list[list[float]]] = defaultdict(list)
    for file in files:
        ms: list[float] = json.loads(file.read_text("utf-8"))
        label = file.stem.rsplit("-", 1)[0]
        runs[label].append(ms)
        print(_line(f"{label} ({file.name})", ms))
    for label, each in runs.items():
        fastest = [min(times) for times in zip(*each, strict=True)]
        print(_line(f"{label}, each query's fastest of {len(each)}", fastest))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, nargs="?", help="a relevance result JSON with its query list")
    parser.add_argument("--sqlite", type=Path, help="directory of the embedded file (backscroll.db)")
    parser.add_argument("--scope", choices=("workspace", "session"), default="session")
    parser.add_argument("--out", type=Path, help="where this run's times go (JSON list, ms)")
    parser.add_argument("--compare", type=Path, nargs="+", help="runs to compare instead")
    args = parser.parse_args()
    if args.compare:
        _compare(args.compare)
        return
    if args.result is None or args.sqlite is None or args.out is None:
        parser.error("RESULT, --sqlite and --out are needed to run (or --compare FILES)")
    times = _times(args.result, args.sqlite / "backscroll.db", args.scope)
    args.out.write_text(json.dumps(times), "utf-8")
    print(_line(args.out.stem, times))


if __name__ == "__main__":
    main()
