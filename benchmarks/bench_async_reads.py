"""Benchmark: asyncio reads on OpenSearch, native (``AsyncOpenSearchReader``, requests awaited on
``AsyncOpenSearch``) against the same reads on worker threads (``AsyncSessionReader`` over the
synchronous ``OpenSearchSessionReader``), many awaited at once, and the synchronous reader one at a time.

Writes the 10,000-event session of :mod:`bench_reads` into a fresh index prefix on the local
OpenSearch, then runs ``--concurrency`` ``aread_event`` (random seq, ±5) calls at a time for
``--reads`` reads per variant and reports reads per second, and the threads the process started.
Not collected by pytest.

    python -m benchmarks.bench_async_reads [--events 10000] [--reads 2000] [--concurrency 64]
        [--timeout 60]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from backscroll.indexer import OpenSearchSettings, OpenSearchView
from backscroll.query import OpenSearchSessionReader, Scope
from backscroll.query.opensearch.async_reader import AsyncOpenSearchReader
from backscroll.query.reads.async_reader import AsyncSessionReader
from benchmarks.bench_reads import build_session


async def run_reads(read: Callable[[int], Awaitable[Any]], seqs: list[int], concurrency: int) -> float:
    """Reads per second with ``concurrency`` reads in flight."""
    queue = list(seqs)

    async def worker() -> None:
        while queue:
            await read(queue.pop())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return len(seqs) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=60.0, help="request_timeout_s of every reader")
    args = parser.parse_args()

    prefix = f"bench-areads-{uuid.uuid4().hex[:8]}"
    settings = OpenSearchSettings().model_copy(update={"index_prefix": prefix})
    view = OpenSearchView(settings)
    session_id, workspace = "bench-long", "bench-ws"
    scope = Scope.workspace(workspace)
    rng = random.Random(3)
    seqs = [rng.randrange(args.events) for _ in range(args.reads)]
    try:
        view.ensure_schema()
        view.write_records(build_session(session_id, workspace, args.events))
        view.refresh()
        with OpenSearchSessionReader(scope, settings) as sync:
            sync.read_surface(session_id)  # warms the log cache every variant shares
            started = time.perf_counter()
            for seq in seqs[: args.reads // 4]:
                sync.read_event(session_id, seq, 5, 5)
            sync_rate = (args.reads // 4) / (time.perf_counter() - started)

        timeout = args.timeout

        async def variants() -> dict[str, tuple[float, int]]:
            out: dict[str, tuple[float, int]] = {}
            readers: dict[str, AsyncSessionReader] = {
                "native (AsyncOpenSearch)": AsyncOpenSearchReader(scope, settings, request_timeout_s=timeout),
                "worker threads": AsyncSessionReader(
                    OpenSearchSessionReader(scope, settings, request_timeout_s=timeout)
                ),
            }
            for name, areader in readers.items():
                async with areader:
                    await areader.aread_event(session_id, 0)
                    before = threading.active_count()
                    rate = await run_reads(
                        lambda seq, r=areader: r.aread_event(session_id, seq, 5, 5),  # type: ignore[misc]
                        seqs,
                        args.concurrency,
                    )
                    out[name] = (rate, threading.active_count() - before)
            return out

        results = asyncio.run(variants())
        print(f"{args.events}-event session, {args.reads} aread_event (±5) per variant, "
              f"{args.concurrency} in flight (prefix {prefix})")  # fmt: skip
        print(f"{'variant':32} {'reads/s':>10} {'threads started':>16}")
        print(f"{'sync OpenSearchSessionReader, one at a time':32} {sync_rate:10.0f} {'-':>16}")
        for name, (rate, threads) in results.items():
            print(f"{name:32} {rate:10.0f} {threads:16d}")
    finally:
        view.drop()


if __name__ == "__main__":
    main()
