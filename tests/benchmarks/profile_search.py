"""Where an OpenSearch search's time goes: requests per search, server ``took`` vs client time.

Runs the queries of an earlier ``relevance`` result (its ``query_list``) against the OpenSearch
index that run loaded (the benchmark leaves ``<prefix>-*`` in place), through
``OpenSearchProvider``, and prints per scope kind: the client time of ``provider.search``, the
time spent inside the HTTP transport (request + response, JSON included), the server's ``took``,
and the number of HTTP requests per search::

    python -m tests.benchmarks.profile_search RESULT.json --index-prefix os15before [--cprofile]

On demand only (not part of any test run).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.benchmarks.metrics import latency_summary

from sessionlog.query import OpenSearchProvider, Scope, SessionQueryRequest

__all__ = ["main"]


class _Probe:
    """Wraps a client's ``transport.perform_request``: counts requests, their time and ``took``."""

    def __init__(self, client: Any) -> None:
        self.transport = client.transport
        self.inner = self.transport.perform_request
        self.transport.perform_request = self._perform
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.http_ms = 0.0
        self.took_ms = 0.0

    def _perform(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        response = self.inner(*args, **kwargs)
        self.http_ms += (time.perf_counter() - t0) * 1000
        self.requests += 1
        if isinstance(response, dict):
            self.took_ms += float(response.get("took", 0))
        return response


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", type=Path, help="a relevance result JSON with its query_list")
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument("--opensearch", default="http://127.0.0.1:9200")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the queries")
    parser.add_argument("--cprofile", action="store_true", help="print the top Python functions")
    args = parser.parse_args(argv)
    queries = json.loads(args.result.read_text(encoding="utf-8"))["query_list"]
    providers: dict[tuple[str, str], OpenSearchProvider] = {}
    probe: _Probe | None = None
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    profile = cProfile.Profile() if args.cprofile else None
    for _ in range(args.repeat):
        for q in queries:
            kind, sid = q["scope_kind"], q["scope_id"]
            provider = providers.get((kind, sid))
            if provider is None:
                scope = Scope.session(sid) if kind == "session" else Scope.workspace(sid)
                provider = OpenSearchProvider(
                    scope=scope, hosts=args.opensearch, index_prefix=args.index_prefix
                )
                providers[(kind, sid)] = provider
            if probe is None:
                probe = _Probe(provider.client)
            request = SessionQueryRequest(
                session_id=sid if kind == "session" else None, query=q["text"], limit=10
            )
            probe.reset()
            t0 = time.perf_counter()
            if profile is not None:
                profile.enable()
            provider.search(request)
            if profile is not None:
                profile.disable()
            total = (time.perf_counter() - t0) * 1000
            row = rows[kind]
            row["client"].append(total)
            row["http"].append(probe.http_ms)
            row["took"].append(probe.took_ms)
            row["python"].append(total - probe.http_ms)
            row["requests"].append(float(probe.requests))
    for kind, row in sorted(rows.items()):
        print(f"== {kind} ({len(row['client'])} searches)")
        for name in ("client", "http", "took", "python"):
            s = latency_summary(row[name])
            cells = "  ".join(f"{k} {s[k]:7.2f}" for k in ("p50", "p95", "p99", "mean"))
            print(f"  {name:8s} {cells} ms")
        reqs = row["requests"]
        print(f"  requests/search mean {sum(reqs) / len(reqs):.3f} max {max(reqs):.0f}")
    if profile is not None:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(35)
    for provider in providers.values():
        provider.close()


if __name__ == "__main__":
    main()
