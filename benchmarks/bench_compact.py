"""Search latency of an embedded file before and after ``SQLiteView.compact()`` (on demand).

Takes a file the product built (``backscroll append FILE`` then ``backscroll index --until-idle``,
without ``--compact``) from the relevance corpus of ``--entries`` and ``--seed``, copies it twice,
compacts one copy (timed) and runs the speed run's queries (both scope kinds) on each copy in
turn, ``--rounds`` times, alternating which goes first, each round with fresh providers (cold
memos, as the speed run). Prints p50 / p95 / p99 per copy and scope kind::

    python -m benchmarks.bench_compact FILE --entries 272000 [--rounds 2] [--workdir DIR]

Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from backscroll.indexer.sqlite.view import SQLiteView
from backscroll.query import Scope, SessionQueryRequest
from backscroll.query.sqlite.provider import SQLiteProvider
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.metrics import latency_summary
from benchmarks.queries import QueryGenerator

__all__ = ["main", "time_queries"]


def _queries(entries: int, seed: int, per_variant: int) -> list[dict[str, Any]]:
    corpus = Corpus(CorpusConfig(entries=entries, seed=seed))
    records = list(corpus.records())
    generated = QueryGenerator(records, seed=seed, max_df=3 * corpus.stats.passes).generate(per_variant)
    return [q.as_dict() for q in generated]


def time_queries(path: Path, queries: list[dict[str, Any]], warmup: int) -> dict[str, list[float]]:
    """Milliseconds per query by scope kind, one provider per scope (as the speed run)."""
    providers: dict[tuple[str, str], SQLiteProvider] = {}
    out: dict[str, list[float]] = defaultdict(list)
    try:
        for n, query in enumerate(queries):
            kind, scope_id = query["scope_kind"], query["scope_id"]
            provider = providers.get((kind, scope_id))
            if provider is None:
                scope = Scope.session(scope_id) if kind == "session" else Scope.workspace(scope_id)
                provider = providers[(kind, scope_id)] = SQLiteProvider(scope, path, request_timeout_s=30.0)
            request = SessionQueryRequest(
                session_id=scope_id if kind == "session" else None, query=query["text"], limit=10
            )
            started = time.perf_counter()
            provider.search(request)
            if n >= warmup:
                out[kind].append((time.perf_counter() - started) * 1000)
    finally:
        for provider in providers.values():
            provider.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="an embedded file indexed without --compact")
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=40, help="per variant and scope (as the speed run)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    queries = _queries(args.entries, args.seed, args.queries)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="backscroll-compact-"))
    copies = {"as indexed": work / "raw.db", "compacted": work / "compacted.db"}
    for copy in copies.values():
        shutil.copyfile(args.file, copy)
    started = time.monotonic()
    with SQLiteView(copies["compacted"]) as view:
        view.compact()
        view.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sizes = {name: os.path.getsize(path) / 2**20 for name, path in copies.items()}
    print(
        f"compact: {time.monotonic() - started:.1f} s; sizes MiB: "
        + ", ".join(f"{k} {v:.1f}" for k, v in sizes.items())
    )
    print("load average {:.1f} / {:.1f} / {:.1f} at start".format(*os.getloadavg()))
    for round_ in range(args.rounds):
        order = list(copies.items()) if round_ % 2 == 0 else list(reversed(copies.items()))
        for name, path in order:
            for kind, ms in sorted(time_queries(path, queries, args.warmup).items()):
                s = latency_summary(ms)
                print(
                    f"round {round_ + 1} {name:<10} {kind:<9} n {len(ms):4d}  p50 {s['p50']:6.1f}  "
                    f"p95 {s['p95']:6.1f}  p99 {s['p99']:6.1f} ms"
                )
    print("load average {:.1f} / {:.1f} / {:.1f} at end".format(*os.getloadavg()))
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
