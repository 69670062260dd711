"""OpenSearch session-scoped search latency of checkouts, interleaved query by query (on demand).

Compares the code of two or more worktrees (each with its own ``.venv``, e.g. the branch and the
commit it started from) on the same index and the same machine load: one worker process per side
answers the relevance benchmark's session-scoped queries (as ``bench_os_scan`` generates them), and
this driver sends each query to every side in turn, rotating which goes first, so all see the same
load. ``--env NAME=VAR=VALUE`` sets an environment variable of one side. Prints p50 / p95 / p99 /
mean per side and how many searches' pages differ (entries, scores, excerpts, ``searched``; 0: the
sides agree)::

    python -m benchmarks.bench_os_scan --entries 272000 --index-prefix P --keep   # load once
    python -m benchmarks.bench_os_session --index-prefix P --repeat 3 \\
        --tree before=/path/to/base-worktree --tree after=.

``--worker`` is the side each worktree runs (reads ``session id\\tquery`` lines, writes the time and
the page as one JSON line per query).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["main"]


def _pct(ordered: Sequence[float], p: float) -> float:
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def _worker(hosts: str, prefix: str) -> None:
    from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest

    providers: dict[str, OpenSearchProvider] = {}
    for line in sys.stdin:
        sid, text = line.rstrip("\n").split("\t", 1)
        provider = providers.get(sid)
        if provider is None:
            provider = providers[sid] = OpenSearchProvider(
                Scope.session(sid), hosts=hosts, index_prefix=prefix, request_timeout_s=60
            )
        request = SessionQueryRequest(session_id=sid, query=text, limit=10)
        started = time.perf_counter()
        result = provider.search(request)
        ms = (time.perf_counter() - started) * 1000
        page = [(m.entry_id, m.score, m.excerpt) for m in result.matches]
        print(json.dumps({"ms": ms, "page": page, "searched": result.searched}), flush=True)
    for provider in providers.values():
        provider.close()


def _ask(proc: subprocess.Popen[str], sid: str, text: str) -> dict[str, Any]:
    stdin: IO[str] | None = proc.stdin
    stdout: IO[str] | None = proc.stdout
    assert stdin is not None and stdout is not None
    stdin.write(f"{sid}\t{text}\n")
    stdin.flush()
    answer: dict[str, Any] = json.loads(stdout.readline())
    return answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=40, help="per variant, as the speed run")
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument(
        "--opensearch", default=os.environ.get("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:9200")
    )
    parser.add_argument("--repeat", type=int, default=3, help="passes over the queries")
    parser.add_argument("--tree", action="append", default=[], help="NAME=WORKTREE (two or more)")
    parser.add_argument(
        "--env", action="append", default=[], help="NAME=VAR=VALUE: an environment variable of one side"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.opensearch, args.index_prefix)
        return
    from benchmarks.profile_os_session import session_queries

    trees = dict(item.split("=", 1) for item in args.tree)
    if len(trees) < 2:
        parser.error("give two or more --tree NAME=WORKTREE")
    env: dict[str, dict[str, str]] = {name: dict(os.environ) for name in trees}
    for item in args.env:
        name, var, value = item.split("=", 2)
        env[name][var] = value
    queries = session_queries(args.entries, args.seed, args.queries)
    procs: dict[str, subprocess.Popen[str]] = {}
    for name, tree in trees.items():
        root = Path(tree).resolve()
        # this file, run by the worktree's interpreter: the worker imports that worktree's backscroll
        command = [str(root / ".venv" / "bin" / "python"), str(Path(__file__).resolve())]
        command += ["--worker", "--opensearch", args.opensearch, "--index-prefix", args.index_prefix]
        procs[name] = subprocess.Popen(
            command, cwd=root, env=env[name], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
    took: dict[str, list[float]] = {name: [] for name in trees}
    differ = 0
    load = os.getloadavg()
    try:
        for n in range(args.repeat * len(queries)):
            sid, text = queries[n % len(queries)]
            shift = n % len(trees)  # each side goes first as often as the others
            order = [*list(trees)[shift:], *list(trees)[:shift]]
            pages = {}
            for name in order:
                answer = _ask(procs[name], sid, text)
                took[name].append(answer["ms"])
                pages[name] = (answer["page"], answer["searched"])
            first, *others = pages.values()
            if any(other != first for other in others):
                differ += 1
                if differ <= 3:
                    print(f"differs: {sid} {text!r}: {pages}", file=sys.stderr)
    finally:
        for proc in procs.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=60)
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at start, ", end="")
    print("{:.1f} / {:.1f} / {:.1f} at end".format(*os.getloadavg()))
    print(f"{len(queries)} session queries x {args.repeat}, interleaved")
    for name, samples in took.items():
        ordered = sorted(samples)
        print(
            f"{name:10} p50 {_pct(ordered, 0.5):6.2f}  p95 {_pct(ordered, 0.95):6.2f}  "
            f"p99 {_pct(ordered, 0.99):6.2f}  mean {statistics.mean(ordered):6.2f} ms"
        )
    print(f"searches whose page (entries, scores, excerpts, searched) differs: {differ}")


if __name__ == "__main__":
    main()
