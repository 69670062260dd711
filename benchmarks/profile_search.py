"""Where an OpenSearch search's time goes: requests per search, server ``took`` vs client time.

Runs the queries of an earlier ``relevance`` result (its ``query_list``) against the OpenSearch
index that run loaded (the benchmark leaves ``<prefix>-*`` in place), through
``OpenSearchProvider``, and prints per scope kind: the client time of ``provider.search``, the
time spent inside the HTTP transport (request + response, JSON included), the server's ``took``,
and the number of HTTP requests per search::

    python -m benchmarks.profile_search RESULT.json --index-prefix os15before [--cprofile]
    python -m benchmarks.profile_search RESULT.json --index-prefix os15before --tiers

``--tiers`` instead sends each query's count and page bodies straight to ``_msearch`` and prints
the server's ``took`` of the page with one family of tiers left out (fuzzy, two-edit fuzzy,
prefix, trigram substring), to show which part of the query the time goes to.

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

from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from backscroll.query.opensearch.body import count_body, search_body
from backscroll.query.plan import plan_request
from benchmarks.metrics import latency_summary

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


def _without(body: dict[str, Any], marker: str) -> dict[str, Any]:
    """``body`` with every tier whose JSON holds ``marker`` left out of each word's ``dis_max``."""
    out: dict[str, Any] = json.loads(json.dumps(body))
    for clause in out["query"]["bool"]["must"]:
        tiers = [t for t in clause["dis_max"]["queries"] if marker not in json.dumps(t)]
        clause["dis_max"]["queries"] = tiers or [{"match_none": {}}]
    return out


#: name → the bodies sent: "count", "page", or the page without the tiers holding a marker.
_TIER_VARIANTS: dict[str, tuple[str, ...]] = {
    "count+page": ("count", "page"),
    "count": ("count",),
    "page": ("page",),
    "page without fuzzy": ('"fuzziness"',),
    "page without 2-edit fuzzy": ('"fuzziness": 2',),
    "page without prefix": ('"prefix"',),
    "page without trigrams": (".tri",),
}


def _tiers(queries: list[dict[str, Any]], hosts: str, prefix: str) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[hosts], timeout=30)
    took: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q in queries:
        kind, sid = q["scope_kind"], q["scope_id"]
        scope = Scope.session(sid) if kind == "session" else Scope.workspace(sid)
        request = SessionQueryRequest(session_id=sid if kind == "session" else None, query=q["text"])
        plan = plan_request(request, scope, 100, 10)[0]
        if plan.browse:
            continue
        header: dict[str, Any] = {"index": f"{prefix}-events"}
        if kind == "session":
            header["routing"] = sid
        count, page = count_body(plan), search_body(plan, size=11)
        for name, parts in _TIER_VARIANTS.items():
            named = {"count": count, "page": page}
            bodies = [named[p] if p in named else _without(page, p) for p in parts]
            lines = [part for body in bodies for part in (header, body)]
            took[kind][name].append(float(client.msearch(body=lines)["took"]))
    for kind, rows in sorted(took.items()):
        print(f"== {kind}: server took (ms)")
        for name, values in rows.items():
            s = latency_summary(values)
            print(f"  {name:26s} p50 {s['p50']:6.1f}  p95 {s['p95']:6.1f}  mean {s['mean']:6.1f}")
    client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", type=Path, help="a relevance result JSON with its query_list")
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument("--opensearch", default="http://127.0.0.1:9200")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the queries")
    parser.add_argument("--cprofile", action="store_true", help="print the top Python functions")
    parser.add_argument("--tiers", action="store_true", help="server took per family of tiers")
    args = parser.parse_args(argv)
    queries = json.loads(args.result.read_text(encoding="utf-8"))["query_list"]
    if args.tiers:
        _tiers(queries, args.opensearch, args.index_prefix)
        return
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
