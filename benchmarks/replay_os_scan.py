"""A session search's ``_msearch`` on the wire, item by item (on demand).

Records the ``_msearch`` bodies that ``OpenSearchProvider`` sends for the relevance benchmark's
session-scoped queries (as ``profile_os_session`` runs them), then sends them again with the plain
client, whole and item by item: the count item, the scan item, the scan without ``_source``. Prints
the server's ``took`` and the client's wall time (p50 / p95) of each, and the size of a scan's
answer, so that the server's share of a search is measured apart from the provider's Python::

    python -m benchmarks.bench_os_scan --entries 272000 --index-prefix P --keep
    python -m benchmarks.replay_os_scan --entries 272000 --index-prefix P --queries 150
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
from opensearchpy import OpenSearch

from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from benchmarks.profile_os_session import session_queries

__all__ = ["main"]

Lines = list[dict[str, Any]]


def record(hosts: str, prefix: str, queries: list[tuple[str, str]]) -> list[Lines]:
    """The ``_msearch`` lines of each query's first request, as the provider sends them."""
    recorded: list[Lines] = []
    for sid, text in queries:
        provider = OpenSearchProvider(Scope.session(sid), hosts=hosts, index_prefix=prefix)
        client: Any = provider.client
        inner = client.msearch

        def keep(*args: Any, _inner: Any = inner, **kwargs: Any) -> Any:
            recorded.append(list(kwargs.get("body") or args[0]))
            return _inner(*args, **kwargs)

        client.msearch = keep
        try:
            provider.search(SessionQueryRequest(session_id=sid, query=text, limit=10))
        finally:
            client.msearch = inner
            provider.close()
    return recorded


def replay(client: OpenSearch, bodies: list[Lines], pick: Callable[[Lines], Lines], repeat: int) -> str:
    took: list[float] = []
    wall: list[float] = []
    for _ in range(repeat):
        for body in bodies:
            t0 = time.perf_counter()
            answer = client.msearch(body=pick(body))
            wall.append((time.perf_counter() - t0) * 1000)
            took.append(float(answer["took"]))
            errors = [r["error"] for r in answer["responses"] if "error" in r]
            if errors:
                raise SystemExit(f"the server refused an item: {errors[0]}")
    wall.sort()
    p95 = wall[min(len(wall) - 1, int(0.95 * len(wall)))]
    median_took, median_wall = statistics.median(took), statistics.median(wall)
    return f"took p50 {median_took:4.1f} ms   wall p50 {median_wall:5.2f} p95 {p95:5.2f} ms"


def _without_source(body: Lines) -> Lines:
    return [body[2], dict(body[3], _source=False)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=150, help="session queries to record")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument(
        "--opensearch", default=os.environ.get("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:9200")
    )
    args = parser.parse_args(argv)
    queries = session_queries(args.entries, args.seed, 40)[: args.queries]
    bodies = record(args.opensearch, args.index_prefix, queries)
    scans = [b for b in bodies if len(b) >= 4 and "sort" in b[3]]
    print(f"{len(bodies)} searches recorded, {len(scans)} of them scans; load average", os.getloadavg())
    client = OpenSearch(args.opensearch)
    try:
        sizes = [len(orjson.dumps(client.msearch(body=b[2:4]))) for b in scans]
        print(f"a scan's answer: p50 {statistics.median(sizes) / 1024:.0f} KiB")
        sides: dict[str, Callable[[Lines], Lines]] = {
            "whole": lambda b: b,
            "count": lambda b: b[:2],
            "scan": lambda b: b[2:4],
            "scan, no _source": _without_source,
        }
        for name, pick in sides.items():
            print(f"  {name:17s} {replay(client, scans, pick, args.repeat)}")
    finally:
        client.close()


if __name__ == "__main__":
    main()
