"""The measurements behind ``python -m tests.benchmarks.speed``: one function per row of issue 15's
table, each returning a JSON-ready dict (numbers only; targets are judged by ``speed_report``).

Every row calls the benchmark that owns it, so a change to a benchmark shows up here unchanged:

* ``append``: ``bench_append.run_sessionlog`` (durable default) and ``bench_append.run_confluent``
  (confluent-kafka with the same validation) over the same records;
* ``indexer``: ``bench_pipeline.throughput`` (end to end vs raw ``parallel_bulk``), and 1 vs 2
  worker processes when that function takes a ``workers`` argument;
* ``cli``: ``bench_cli_append.measure`` (``sessionlog append FILE`` embedded and Kafka, and the
  ``append_many`` ceiling);
* ``load``: ``bench_console.load_embedded`` / ``load_stack`` (empty → searchable through the
  product path: the log, then the indexer) on the benchmark corpus;
* ``search`` (latency, plus pg_trgm's load time and size): ``bench_relevance.run_relevance`` with
  the two sessionlog systems and pg_trgm ``word_similarity`` 0.4.
"""

from __future__ import annotations

import inspect
import json
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

__all__ = ["append_row", "cli_row", "indexer_row", "load_row", "search_row"]

PG_SETTING = ("word", 0.4)
PG_LABEL = "pg_trgm word_similarity≥0.4"


def append_row(events: int) -> dict[str, Any]:
    """Durable appender (per process) vs confluent-kafka with the same validation, same records."""
    from tests.benchmarks.bench_append import records, run_confluent, run_sessionlog

    from sessionlog.ingest import KafkaSettings

    kafka = KafkaSettings()
    data = records(events + 1, 20, 200)
    ours = run_sessionlog(kafka, data, durable=True, fsync="interval")
    peer = run_confluent(kafka, data, validate=True, linger_ms=5)
    return {"events": events, "sessionlog": ours, "confluent_validated": peer}


def indexer_row(events: int, console: Console) -> dict[str, Any]:
    """End to end vs the raw bulk ceiling; worker scaling only when ``bench_pipeline`` offers it."""
    from tests.benchmarks import bench_pipeline

    params = inspect.signature(bench_pipeline.throughput).parameters
    if "workers" not in params:
        row = dict(bench_pipeline.throughput(events, console))
        row["scaling"] = {"measured": False, "reason": "bench_pipeline.throughput has no `workers` option"}
        return row
    extra: dict[str, Any] = {"partitions": 4} if "partitions" in params else {}
    one = dict(bench_pipeline.throughput(events, console, workers=1, **extra))  # type: ignore[call-arg]
    two = dict(bench_pipeline.throughput(events, console, workers=2, **extra))  # type: ignore[call-arg]
    one["scaling"] = {
        "measured": True,
        "partitions": extra.get("partitions"),
        "one_worker_events_per_s": one["indexer_events_per_s"],
        "two_workers_events_per_s": two["indexer_events_per_s"],
        "speedup": two["indexer_events_per_s"] / one["indexer_events_per_s"],
    }
    return one


def cli_row(events: int) -> dict[str, Any]:
    """``sessionlog append FILE`` embedded and Kafka vs ``SQLiteEntryLog.append_many``."""
    from tests.benchmarks.bench_cli_append import measure

    return {"events": events, "paths": {name: row for name, row in measure(events)}}


def _file_bytes(path: Path) -> int:
    return sum(
        Path(f"{path}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{path}{suffix}").exists()
    )


def _opensearch_bytes(opensearch: Any) -> int:
    from sessionlog.indexer import OpenSearchView

    view = OpenSearchView(opensearch)
    try:
        indices = f"{view.events},{view.sessions}"
        view.client.indices.flush(index=indices)
        stats = view.client.indices.stats(index=indices, metric="store")
        return int(stats["_all"]["primaries"]["store"]["size_in_bytes"])
    finally:
        view.close()


def load_row(entries: int, seed: int, *, stack: bool = True) -> dict[str, Any]:
    """The corpus from an empty system to searchable on both backends (product path), and what it
    occupies on disk afterwards. The corpus is generated before the clock starts."""
    from tests.benchmarks.bench_console import corpus, isolated_stack, load_embedded, load_stack

    batches: list[list[dict[str, Any]]] = []
    corpus(entries, seed, batches.append)
    records = sum(len(b) for b in batches)
    events = sum(1 for b in batches for r in b if r.get("kind") == "event")
    wire_bytes = sum(len(json.dumps(r, ensure_ascii=False).encode()) + 1 for b in batches for r in b)
    row: dict[str, Any] = {"entries": entries, "records": records, "events": events, "wire_bytes": wire_bytes}
    with tempfile.TemporaryDirectory(prefix="sessionlog-speed-") as tmp:
        path = Path(tmp) / "sessionlog.db"
        timings = load_embedded(path, batches)
        row["embedded"] = timings | {"seconds": sum(timings.values()), "bytes": _file_bytes(path)}
    if stack:
        with isolated_stack() as (kafka, opensearch, indexer):
            timings = load_stack(kafka, opensearch, indexer, batches)
            row["kafka_opensearch"] = timings | {
                "seconds": sum(timings.values()),
                "bytes": _opensearch_bytes(opensearch),
            }
    return row


def search_row(
    entries: int,
    seed: int,
    *,
    systems: tuple[str, ...],
    queries: int,
    warmup: int,
    opensearch: str,
    index_prefix: str,
    out: Path,
    command: str,
    console: Console,
) -> dict[str, Any]:
    """Search latency by scope for ``systems`` vs pg_trgm word_similarity 0.4, through the relevance
    benchmark (which also times pg_trgm's COPY + index build and measures its size)."""
    from tests.benchmarks.bench_relevance import RelevanceConfig, run_relevance

    cfg = RelevanceConfig(
        entries=entries,
        seed=seed,
        queries_per_variant=queries,
        systems=(*systems, "pg_trgm"),
        pg_settings=(PG_SETTING,),
        warmup=warmup,
        opensearch_hosts=opensearch,
        index_prefix=index_prefix,
        keep_per_query=False,
        command=command,
    )
    path = run_relevance(cfg, console=console, out=out)
    result = json.loads(path.read_text(encoding="utf-8"))
    row: dict[str, Any] = {"result_file": path.name, "queries": result.get("queries", {}).get("count")}
    for system in result["systems"]:
        keep = {
            k: system.get(k) for k in ("available", "skipped_reason", "error", "load_seconds", "index_bytes")
        }
        keep["latency_ms"] = system.get("latency_ms")
        keep["recall_at_10"] = (
            (system.get("relevance") or {}).get("all", {}).get("all", {}).get("recall_at_10")
        )
        row[system["name"]] = keep
    row["versions"] = result.get("versions", {})
    return row
