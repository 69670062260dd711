"""The embedded search rows under what surrounds each search (on demand): back to back, after the
CPU sleeps, after the caches are swept, with the other core busy.

Runs the queries of a relevance result (``python -m tests.benchmarks.run relevance`` keeps its
query list) in their order against the embedded file of the same corpus (``python -m
tests.benchmarks.relevance_misses --load N --sqlite DIR``), each scope's provider kept in a
least-recently-used set of 256 as the relevance harness's embedded system does, so the searches
pay what the speed rows' searches pay, except for what each condition puts before them:

``none``        nothing: back to back
``sleep:MS``    the process sleeps MS milliseconds before each search (as while a peer answers)
``sweep:MIB``   MIB mebibytes are written through the CPU caches before each search
``busy``        another process spins on a core for the whole condition

Prints p50 / p95 / p99 per scope kind and condition, and the slowest workspace searches. Not
collected by pytest.

    python -m tests.benchmarks.bench_idle RESULT.json --sqlite DIR [--conditions none,sleep:250,...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.benchmarks.metrics import percentile

from sessionlog.query import Scope, SessionQueryRequest
from sessionlog.query.sqlite_provider import SQLiteProvider

_PROVIDERS = 256  # as tests.benchmarks.sys_embedded keeps
_WARMUP = 20


class _Providers:
    """One provider per scope, the least recently used closed past :data:`_PROVIDERS`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.kept: OrderedDict[tuple[str, str], SQLiteProvider] = OrderedDict()

    def search(self, query: dict[str, Any]) -> None:
        kind, scope_id = query["scope_kind"], query["scope_id"]
        provider = self.kept.get((kind, scope_id))
        if provider is None:
            scope = Scope.session(scope_id) if kind == "session" else Scope.workspace(scope_id)
            provider = self.kept[(kind, scope_id)] = SQLiteProvider(scope, self.path, request_timeout_s=60.0)
            if len(self.kept) > _PROVIDERS:
                self.kept.popitem(last=False)[1].close()
        else:
            self.kept.move_to_end((kind, scope_id))
        session_id = scope_id if kind == "session" else None
        provider.search(SessionQueryRequest(query=query["text"], limit=10, session_id=session_id))

    def close(self) -> None:
        for provider in self.kept.values():
            provider.close()
        self.kept.clear()


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _before(condition: str) -> Callable[[], None]:
    """What runs before each timed search under ``condition``."""
    name, _, value = condition.partition(":")
    if name == "sleep":
        seconds = float(value) / 1000
        return lambda: time.sleep(seconds)
    if name == "sweep":
        buffer = bytearray(int(value) << 20)

        def sweep() -> None:
            buffer[::64] = bytes(len(buffer[::64]))  # one write per cache line

        return sweep
    if name in ("none", "busy"):
        return lambda: None
    raise SystemExit(f"unknown condition {condition!r}")


def run(queries: list[dict[str, Any]], path: Path, condition: str) -> list[tuple[float, dict[str, Any]]]:
    """Every query once under ``condition``: (ms, query) in order."""
    before = _before(condition)
    spinner = None
    if condition == "busy":
        spinner = multiprocessing.Process(target=_spin, args=(3600.0,), daemon=True)
        spinner.start()
    providers = _Providers(path)
    try:
        for query in queries[:_WARMUP]:
            providers.search(query)
        times = []
        for query in queries:
            before()
            start = time.perf_counter()
            providers.search(query)
            times.append(((time.perf_counter() - start) * 1000, query))
        return times
    finally:
        providers.close()
        if spinner is not None:
            spinner.terminate()
            spinner.join()


def _line(label: str, ms: list[float]) -> str:
    cells = " / ".join(f"{percentile(ms, p):.1f}" for p in (50, 95, 99))
    return f"{label:<34} n={len(ms):<5} p50 / p95 / p99 {cells} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, help="a relevance result JSON with its query list")
    parser.add_argument("--sqlite", type=Path, required=True, help="directory of the embedded file")
    parser.add_argument("--conditions", default="none,sleep:250,sweep:64,busy")
    parser.add_argument("--slowest", type=int, default=10, help="workspace searches listed per condition")
    args = parser.parse_args()
    queries = json.loads(args.result.read_text("utf-8"))["query_list"]
    for condition in args.conditions.split(","):
        times = run(queries, args.sqlite / "sessionlog.db", condition)
        for kind in ("session", "workspace"):
            print(_line(f"{condition} · {kind}", [ms for ms, q in times if q["scope_kind"] == kind]))
        slow = sorted((t for t in times if t[1]["scope_kind"] == "workspace"), key=lambda t: -t[0])
        for ms, query in slow[: args.slowest]:
            print(f"    {ms:7.1f} ms  {query['scope_id']}  {query['variant']:<16} {query['text'][:50]!r}")


if __name__ == "__main__":
    main()
