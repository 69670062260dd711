"""``backscroll demo``: the whole path (append → index → search), with timings.

Runs on the embedded backend (one SQLite file, no servers) by default and on the real Kafka and
OpenSearch with ``stack=True``; both go through :class:`backscroll.backends.Backend`, so the demo body
is one code path.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.text import Text

from backscroll.backends import (
    Backend,
    EmbeddedBackend,
    KafkaOpenSearchBackend,
    default_sqlite_path,
    settings_from_env,
)
from backscroll.cli.workload import demo_records
from backscroll.query import Scope, SessionQueryRequest, render_result
from backscroll.textsafe import safe_text

__all__ = ["DEMO_SEARCHES", "demo_backend", "run_demo"]

#: (what it shows, scope workspace, query)
DEMO_SEARCHES = [
    ("one-edit typo", "ws-0", "revnue forcast"),
    ("accents stripped", "ws-1", "Sao Paulo"),
    ("accents added", "ws-0", "Zúrich ófice"),
    ("đ folded to d", "ws-1", "don hang"),
    ("identifier substring", "ws-2", "9931"),
    ("typo in a name", "ws-1", "Nguyen Huong aproved"),
]


def demo_backend(*, stack: bool, run: str, path: Path | None = None) -> tuple[Backend, str]:
    """A fresh, isolated backend for one demo run, and how to search it afterwards.

    Embedded: a new SQLite file (``demo.db`` next to the default database unless ``path``).
    Stack: a topic, index prefix and consumer group of the run's own on the configured servers."""
    if not stack:
        target = path or default_sqlite_path().with_name("demo.db")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        return EmbeddedBackend(target), f"BACKSCROLL_BACKEND=embedded BACKSCROLL_SQLITE_PATH={target}"
    from backscroll.indexer import IndexerSettings, OpenSearchSettings
    from backscroll.ingest import KafkaSettings

    kafka = KafkaSettings().model_copy(update={"topic": f"backscroll.demo.{run}"})
    opensearch = settings_from_env(OpenSearchSettings).model_copy(
        update={"index_prefix": f"backscroll-demo-{run}"}
    )
    indexer = settings_from_env(IndexerSettings).model_copy(update={"group_id": f"backscroll-demo-{run}"})
    backend = KafkaOpenSearchBackend(kafka, opensearch, indexer)
    return backend, (
        f"BACKSCROLL_BACKEND=kafka-opensearch BACKSCROLL_KAFKA_TOPIC={kafka.topic} "
        f"BACKSCROLL_OPENSEARCH_INDEX_PREFIX={opensearch.index_prefix}"
    )


def run_demo(
    console: Console, *, workspaces: int = 3, sessions: int = 9, stack: bool = False, path: Path | None = None
) -> None:
    run = uuid.uuid4().hex[:8]
    backend, env = demo_backend(stack=stack, run=run, path=path)
    console.print(Text.assemble(("backscroll demo", "bold"), f" — {safe_text(backend.describe())}"))
    total = time.monotonic()

    started = time.monotonic()
    records = list(demo_records(workspaces=workspaces, sessions=sessions))
    with backend.open_log() as log:
        handles = [log.append(r) for r in records]
        log.flush(timeout=60)
        for handle in handles:
            handle.result(timeout=30)
    console.print(
        f"appended {len(records)} records ({sessions} sessions, {workspaces} workspaces) "
        f"in {time.monotonic() - started:.2f}s"
    )

    started = time.monotonic()
    with backend.open_indexer() as indexer:
        stats = indexer.run(until_idle=True)
    console.print(
        f"indexed {stats.indexed} events (dead-lettered {stats.dead_lettered}) "
        f"in {time.monotonic() - started:.2f}s"
    )

    for label, workspace, query in DEMO_SEARCHES:
        with backend.open_provider(Scope.workspace(workspace)) as provider:
            t0 = time.monotonic()
            result = provider.search(SessionQueryRequest(query=query, limit=3, excerpt_bytes=160))
            took = (time.monotonic() - t0) * 1000
        console.rule(f"{label}: {query!r} in {workspace} — {took:.0f} ms")
        rendered = safe_text(render_result(result, query, scope_noun="workspace"), keep_newlines=True)
        console.print(rendered, highlight=False, markup=False)
    console.print(
        Text.assemble(
            "\n",
            ("done", "green"),
            f" in {time.monotonic() - total:.1f}s; try: ",
            f"{safe_text(env)} backscroll search 'revnue' --workspace ws-0",
        )
    )
