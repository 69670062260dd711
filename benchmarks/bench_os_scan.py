"""OpenSearch search of sessions: the plan by scope size against the index path, interleaved (on demand).

``python -m benchmarks.bench_os_scan --entries 272000 --index-prefix P [--keep]`` loads the
relevance benchmark's corpus into OpenSearch under prefix ``P`` (reused when ``--keep`` left it
there, dropped at the end otherwise), then runs the benchmark's session-scoped queries twice each,
back to back and alternating which goes first: once with the default plan (a session of at most
``SCAN_MAX_ROWS`` entries ranked by the provider) and once with ``scan_max_rows=0`` (always the
index), so both see the same machine load. Prints p50 / p95 / p99 / mean per plan and how many
pages differ between the plans (entries, order and scores; 0: the plans agree).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from backscroll.query.opensearch.scan import SCAN_MAX_ROWS
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.queries import QueryGenerator
from benchmarks.sys_backscroll import BackscrollSystem


def _pct(ordered: Sequence[float], p: float) -> float:
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--opensearch", default=os.environ.get("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:9200")
    )
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument("--queries", type=int, default=40, help="queries per variant (as the speed run)")
    parser.add_argument("--scan-max-rows", type=int, default=SCAN_MAX_ROWS)
    parser.add_argument("--keep", action="store_true", help="keep the indices (and reuse them next time)")
    args = parser.parse_args()
    corpus = Corpus(CorpusConfig(entries=args.entries, seed=args.seed))
    records = list(corpus.records())
    generated = QueryGenerator(records, seed=args.seed, max_df=3 * corpus.stats.passes).generate(args.queries)
    queries = [q.as_dict() for q in generated if q.as_dict()["scope_kind"] == "session"]
    system = BackscrollSystem(hosts=args.opensearch, index_prefix=args.index_prefix)
    reuse = system.view.client.indices.exists(index=system.view.events)
    if not reuse:
        started = time.perf_counter()
        system.load(records)
        print(f"loaded {args.entries} entries in {time.perf_counter() - started:.0f}s")
    sizes: dict[str, int] = {}
    for record in records:
        if record["kind"] == "event":
            sizes[record["session_id"]] = sizes.get(record["session_id"], 0) + 1
    plans = {"scan": args.scan_max_rows, "index": 0}
    took: dict[str, list[float]] = {name: [] for name in plans}
    differ: list[tuple[str, Any, Any]] = []
    providers: dict[tuple[str, int], OpenSearchProvider] = {}
    load = os.getloadavg()
    try:
        for n, query in enumerate(queries):
            sid = query["scope_id"]
            request = SessionQueryRequest(session_id=sid, query=query["text"], limit=10)
            pages: dict[str, list[tuple[str, float]]] = {}
            order = list(plans) if n % 2 == 0 else list(reversed(plans))
            for name in order:
                key = (sid, plans[name])
                provider = providers.get(key)
                if provider is None:
                    provider = providers[key] = OpenSearchProvider(
                        Scope.session(sid),
                        hosts=args.opensearch,
                        index_prefix=args.index_prefix,
                        request_timeout_s=60,
                        scan_max_rows=plans[name],
                    )
                started = time.perf_counter()
                result = provider.search(request)
                took[name].append((time.perf_counter() - started) * 1000)
                pages[name] = [(m.entry_id, m.score) for m in result.matches]
            if pages["scan"] != pages["index"]:
                differ.append((query["text"], pages["scan"], pages["index"]))
            if len(providers) > 512:
                for provider in providers.values():
                    provider.close()
                providers.clear()
    finally:
        for provider in providers.values():
            provider.close()
        if not args.keep:
            system.view.drop()
        system.close()
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at start, ", end="")
    print("{:.1f} / {:.1f} / {:.1f} at end".format(*os.getloadavg()))
    in_scope = sorted(sizes[q["scope_id"]] for q in queries)
    print(f"{len(queries)} session queries; session sizes p50 {_pct(in_scope, 0.5)}, max {in_scope[-1]}")
    for name, samples in took.items():
        ordered = sorted(samples)
        label = f"scan<={plans[name]}" if plans[name] else "index"
        print(
            f"{label:10} p50 {_pct(ordered, 0.5):6.1f}  p95 {_pct(ordered, 0.95):6.1f}  "
            f"p99 {_pct(ordered, 0.99):6.1f}  mean {statistics.mean(ordered):6.1f} ms"
        )
    print(f"pages that differ between the plans: {len(differ)}")
    for text, scanned, indexed in differ[:10]:
        print(f"  {text!r}\n    scan  {scanned}\n    index {indexed}")


if __name__ == "__main__":
    main()
