"""Where a session-scoped OpenSearch search's time goes, span by span (on demand).

Runs the relevance benchmark's session-scoped queries (as ``bench_os_scan`` generates them) against
an index ``bench_os_scan --keep`` left under ``--index-prefix``, through ``OpenSearchProvider``, and
prints per search: the whole ``provider.search``; the transport (``Transport.perform_request``:
serializing the body, the HTTP round trip, decoding the answer); inside it the connection (the HTTP
round trip through urllib3) and the JSON decode; the server's ``took``; and what is left, the
provider's own Python (plan, scoring, readings, excerpts, result models, cursor)::

    python -m benchmarks.bench_os_scan --entries 272000 --index-prefix P --keep
    python -m benchmarks.profile_os_session --entries 272000 --index-prefix P --repeat 20
    python -m benchmarks.profile_os_session --entries 272000 --index-prefix P --cprofile
    python -m benchmarks.profile_os_session --entries 272000 --index-prefix P --busy-between 7

``--busy-between MS`` does that much other work between two searches (Python touching a 32 MiB
buffer), as the speed run does when it asks the other systems in turn: the search then starts with
cold caches. The first pass is also split by the number of requests a search made: one (a scan, or
the index of a scope already known to be large), two (a scan that found the scope too large, then
the index), or more (the same, then a second window of readings).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import defaultdict
from typing import Any

from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.metrics import latency_summary
from benchmarks.queries import QueryGenerator

__all__ = ["main", "session_queries"]


def session_queries(entries: int, seed: int, per_variant: int) -> list[tuple[str, str]]:
    """(session id, text) of the relevance benchmark's session-scoped queries."""
    corpus = Corpus(CorpusConfig(entries=entries, seed=seed))
    records = list(corpus.records())
    generated = QueryGenerator(records, seed=seed, max_df=3 * corpus.stats.passes).generate(per_variant)
    found = [q.as_dict() for q in generated]
    return [(q["scope_id"], q["text"]) for q in found if q["scope_kind"] == "session"]


class _Spans:
    """Wraps the client's transport, its connections and its deserializer with perf_counter spans."""

    def __init__(self, client: Any) -> None:
        self.ms: dict[str, float] = defaultdict(float)
        transport = client.transport
        self._wrap(transport, "perform_request", "transport")
        for connection in transport.connection_pool.connections:
            self._wrap(connection, "perform_request", "connection")
        self._wrap(transport.deserializer, "loads", "decode")
        self._wrap(transport.serializer, "dumps", "encode")

    def _wrap(self, owner: Any, name: str, span: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            out = inner(*args, **kwargs)
            self.ms[span] += (time.perf_counter() - t0) * 1000
            if span == "transport" and isinstance(out, dict):
                self.ms["took"] += float(out.get("took", 0))
                self.ms["requests"] += 1
            return out

        setattr(owner, name, timed)


_BUSY_BYTES = 32 * 2**20


def _busy(ms: float, buffer: bytearray) -> None:
    """Work for ``ms`` milliseconds (none when it is 0), in rounds of 256 writes, one per 4 KiB page
    of ``buffer`` in turn."""
    if ms <= 0:
        return
    end = time.perf_counter() + ms / 1000
    i = 0
    while True:
        for _ in range(256):
            buffer[i] = 1
            i = (i + 4096) % len(buffer)
        if time.perf_counter() >= end:
            return


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=40, help="per variant, as the speed run")
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument(
        "--opensearch", default=os.environ.get("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:9200")
    )
    parser.add_argument("--repeat", type=int, default=10, help="passes over the queries")
    parser.add_argument("--cprofile", action="store_true", help="print the top Python functions")
    parser.add_argument("--busy-between", type=float, default=0.0, help="ms of other work between searches")
    args = parser.parse_args(argv)
    buffer = bytearray(_BUSY_BYTES if args.busy_between > 0 else 1)
    first_pass: dict[int, list[float]] = defaultdict(list)
    queries = session_queries(args.entries, args.seed, args.queries)
    providers: dict[str, OpenSearchProvider] = {}
    spans: _Spans | None = None
    rows: dict[str, list[float]] = defaultdict(list)
    profile = cProfile.Profile() if args.cprofile else None
    load = os.getloadavg()
    for pass_ in range(args.repeat):
        for sid, text in queries:
            provider = providers.get(sid)
            if provider is None:
                provider = providers[sid] = OpenSearchProvider(
                    Scope.session(sid), hosts=args.opensearch, index_prefix=args.index_prefix
                )
            if spans is None:
                spans = _Spans(provider.client)
            request = SessionQueryRequest(session_id=sid, query=text, limit=10)
            if args.busy_between > 0:
                _busy(args.busy_between, buffer)
            spans.ms.clear()
            t0 = time.perf_counter()
            if profile is not None:
                profile.enable()
            provider.search(request)
            if profile is not None:
                profile.disable()
            total = (time.perf_counter() - t0) * 1000
            ms = spans.ms
            rows["search"].append(total)
            rows["transport"].append(ms["transport"])
            rows["connection"].append(ms["connection"])
            rows["took"].append(ms["took"])
            rows["http-took"].append(ms["connection"] - ms["took"])
            rows["decode"].append(ms["decode"])
            rows["encode"].append(ms["encode"])
            rows["provider"].append(total - ms["transport"])
            rows["requests"].append(ms["requests"])
            if pass_ == 0:
                first_pass[int(ms["requests"])].append(total)
    print(f"{len(rows['search'])} searches ({len(queries)} queries x {args.repeat}); load average", end="")
    print(" {:.1f} / {:.1f} / {:.1f} at start, ".format(*load), end="")
    print("{:.1f} / {:.1f} / {:.1f} at end".format(*os.getloadavg()))
    for name, values in rows.items():
        s = latency_summary(values)
        cells = "  ".join(f"{k} {s[k]:7.2f}" for k in ("p50", "p95", "p99", "mean"))
        print(f"  {name:10s} {cells}")
    print("first pass, by requests per search:")
    for requests, values in sorted(first_pass.items()):
        s = latency_summary(values)
        print(f"  {requests} request(s): {len(values)} searches, p50 {s['p50']:.2f} p95 {s['p95']:.2f} ms")
    if profile is not None:
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(45)
    for provider in providers.values():
        provider.close()


if __name__ == "__main__":
    main()
