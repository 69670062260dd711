"""The embedded search rows under what surrounds each search (on demand): back to back, after the
CPU sleeps, after the caches are swept, with the other core busy.

Runs the queries of a relevance result (``python -m benchmarks.run relevance`` keeps its
query list) in their order against the embedded file of the same corpus (``python -m
benchmarks.relevance_misses --load N --sqlite DIR``) through the relevance harness's own
``EmbeddedSearches`` (a provider per scope, the 256 most recently used kept), so the searches pay
what the speed rows' searches pay, except for what each condition puts before them:

``none``        nothing: back to back
``sleep:MS``    the process sleeps MS milliseconds before each search (as while a peer answers)
``sweep:MIB``   MIB mebibytes are written through the CPU caches before each search
``busy``        another process spins on a core for the whole condition

Prints p50 / p95 / p99 per scope kind and condition, and the slowest workspace searches. Not
collected by pytest.

    python -m benchmarks.bench_idle RESULT.json --sqlite DIR [--conditions none,sleep:250,...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.metrics import percentile
from benchmarks.sys_embedded import EmbeddedSearches

_WARMUP = 20


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
    searches = EmbeddedSearches(path)
    try:
        for query in queries[:_WARMUP]:
            searches.search(query["scope_kind"], query["scope_id"], query["text"])
        times = []
        for query in queries:
            before()
            start = time.perf_counter()
            searches.search(query["scope_kind"], query["scope_id"], query["text"])
            times.append(((time.perf_counter() - start) * 1000, query))
        return times
    finally:
        searches.close()
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
        times = run(queries, args.sqlite / "backscroll.db", condition)
        for kind in ("session", "workspace"):
            print(_line(f"{condition} · {kind}", [ms for ms, q in times if q["scope_kind"] == kind]))
        slow = sorted((t for t in times if t[1]["scope_kind"] == "workspace"), key=lambda t: -t[0])
        for ms, query in slow[: args.slowest]:
            print(f"    {ms:7.1f} ms  {query['scope_id']}  {query['variant']:<16} {query['text'][:50]!r}")


if __name__ == "__main__":
    main()
