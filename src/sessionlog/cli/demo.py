"""``sessionlog demo``: the whole path on the real servers, with timings."""

from __future__ import annotations

import time
import uuid

from rich.console import Console

from sessionlog.cli.workload import demo_records
from sessionlog.indexer import IndexerSettings, IndexerWorker
from sessionlog.ingest import Appender, KafkaSettings, ensure_topics
from sessionlog.query import OpenSearchProvider, Scope, SessionQueryRequest, render_result

__all__ = ["DEMO_SEARCHES", "run_demo"]

#: (what it shows, scope workspace, query)
DEMO_SEARCHES = [
    ("one-edit typo", "ws-0", "revnue forcast"),
    ("accents stripped", "ws-1", "Sao Paulo"),
    ("accents added", "ws-0", "Zúrich ófice"),
    ("đ folded to d", "ws-1", "don hang"),
    ("identifier substring", "ws-2", "9931"),
    ("typo in a name", "ws-1", "Nguyen Huong aproved"),
]


def run_demo(console: Console, *, workspaces: int = 3, sessions: int = 9) -> None:
    run = uuid.uuid4().hex[:8]
    kafka = KafkaSettings().model_copy(update={"topic": f"sessionlog.demo.{run}"})
    prefix = f"sessionlog-demo-{run}"
    console.print(f"[bold]sessionlog demo[/bold] — topic {kafka.topic}, index prefix {prefix}")

    started = time.monotonic()
    ensure_topics(kafka)
    records = list(demo_records(workspaces=workspaces, sessions=sessions))
    with Appender(kafka) as appender:
        handles = [appender.append(r) for r in records]
        appender.flush(timeout=60)
        for handle in handles:
            handle.result(timeout=30)
    append_s = time.monotonic() - started
    console.print(f"appended {len(records)} records ({sessions} sessions, {workspaces} workspaces) "
                  f"in {append_s:.2f}s")

    started = time.monotonic()
    from sessionlog.indexer import OpenSearchSettings

    opensearch = OpenSearchSettings().model_copy(update={"index_prefix": prefix})
    settings = IndexerSettings().model_copy(update={"group_id": f"sessionlog-demo-{run}"})
    with IndexerWorker(kafka, opensearch, settings) as worker:
        stats = worker.run(until_idle=True)
    console.print(f"indexed {stats.indexed} events (dead-lettered {stats.dead_lettered}) "
                  f"in {time.monotonic() - started:.2f}s")

    for label, workspace, query in DEMO_SEARCHES:
        provider = OpenSearchProvider(Scope.workspace(workspace), opensearch)
        t0 = time.monotonic()
        result = provider.search(SessionQueryRequest(query=query, limit=3, excerpt_bytes=160))
        took = (time.monotonic() - t0) * 1000
        console.rule(f"{label}: {query!r} in {workspace} — {took:.0f} ms")
        console.print(render_result(result, query), highlight=False, markup=False)
    console.print(f"\n[green]done[/green]; try: sessionlog search 'revnue' --workspace ws-0 "
                  f"(with SESSIONLOG_OPENSEARCH_INDEX_PREFIX={prefix})")
