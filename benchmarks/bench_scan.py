"""Embedded search: the plan by scope size against the index path, interleaved (on demand).

``python -m benchmarks.bench_scan --entries 272000 --dir /tmp/scan272 [--scope session]``
builds the relevance benchmark's corpus into an embedded file kept in ``--dir`` (reused when it is
there), then runs the benchmark's queries of one scope kind twice each, back to back: once with the
default plan (small scopes scanned) and once with ``scan_max_rows=0`` (always the index), so both
see the same machine load. Prints p50 / p95 / p99 / mean per plan, how many pages differ (0: the
plans agree), the file size and its largest tables (``dbstat``).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.sqlite.provider import SQLiteProvider
from backscroll.query.sqlite.scan import SCAN_MAX_ROWS
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.queries import QueryGenerator
from benchmarks.sys_embedded import EmbeddedSystem


def build(directory: Path, entries: int, seed: int) -> list[dict[str, Any]]:
    queries_path = directory / "queries.json"
    if queries_path.exists() and (directory / "backscroll.db").exists():
        loaded: list[dict[str, Any]] = json.loads(queries_path.read_text())
        return loaded
    directory.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(CorpusConfig(entries=entries, seed=seed))
    records = list(corpus.records())
    queries = [
        q.as_dict() for q in QueryGenerator(records, seed=seed, max_df=3 * corpus.stats.passes).generate(40)
    ]
    system = EmbeddedSystem(directory)
    started = time.perf_counter()
    system.load(records)
    print(f"built {entries} entries in {time.perf_counter() - started:.0f}s")
    queries_path.write_text(json.dumps(queries))
    return queries


def sizes(path: Path) -> None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    finally:
        conn.close()
    print(f"file {path.stat().st_size / 2**20:.0f} MiB; largest: " + ", ".join(
        f"{name} {size / 2**20:.0f}" for name, size in rows[:8]
    ))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, required=True, help="where the corpus file is kept")
    parser.add_argument("--scope", choices=("session", "workspace"), default="session")
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    queries = [q for q in build(args.dir, args.entries, args.seed) if q["scope_kind"] == args.scope]
    path = args.dir / "backscroll.db"
    sizes(path)
    providers: dict[tuple[str, int], SQLiteProvider] = {}
    took: dict[int, list[float]] = {SCAN_MAX_ROWS: [], 0: []}
    differ = 0
    try:
        for query in queries[: args.queries]:
            pages = []
            for rows in took:
                key = (query["scope_id"], rows)
                provider = providers.get(key)
                if provider is None:
                    scope = Scope.session(key[0]) if args.scope == "session" else Scope.workspace(key[0])
                    provider = providers[key] = SQLiteProvider(
                        scope, path, request_timeout_s=60, scan_max_rows=rows
                    )
                request = SessionQueryRequest(
                    session_id=key[0] if args.scope == "session" else None, query=query["text"], limit=10
                )
                started = time.perf_counter()
                result = provider.search(request)
                took[rows].append((time.perf_counter() - started) * 1000)
                pages.append([m.entry_id for m in result.matches])
            differ += pages[0] != pages[1]
    finally:
        for provider in providers.values():
            provider.close()
    for rows, samples in took.items():
        ordered = sorted(samples)

        def pct(p: float, ordered: list[float] = ordered) -> float:
            return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

        label = f"scan<={rows}" if rows else "index"
        print(
            f"{args.scope:9} {label:10} n={len(ordered)} p50 {pct(0.5):6.1f}  p95 {pct(0.95):6.1f}  "
            f"p99 {pct(0.99):6.1f}  mean {statistics.mean(ordered):6.1f} ms"
        )
    print(f"pages that differ between the plans: {differ}")


if __name__ == "__main__":
    main()
