"""The measurements behind ``python -m benchmarks.speed``: one function per row of the speed
table, each returning a JSON-ready dict (numbers only; targets are judged by ``speed_report``).

Every row calls the benchmark that owns it, so a change to a benchmark shows up here unchanged:

* ``append``: ``bench_append.run_backscroll`` (durable default) and ``bench_append.run_confluent``
  (confluent-kafka with the same validation) over the same records;
* ``indexer``: ``pipeline_throughput.throughput`` (end to end vs raw ``parallel_bulk``, in rounds
  of alternating order), and 1 vs 2
  worker processes through ``bench_pipeline.scaling`` when this checkout has it;
* ``cli``: ``bench_cli_append.measure`` (``backscroll append FILE`` embedded and Kafka, and the
  ``append_many`` ceiling);
* ``load``: ``bench_load`` (the CLI's ``append FILE`` then ``index --until-idle`` on both
  backends, and PostgreSQL COPY + GIN) when this checkout has it, else ``bench_console``'s
  ``load_embedded`` / ``load_stack`` (in process: ``append_many``, then the indexer); with
  ``bench_load``, the embedded load and PostgreSQL's in rounds of alternating order;
* ``search`` (latency, plus pg_trgm's load time and size): ``bench_relevance.run_relevance`` with
  the two backscroll systems and pg_trgm ``word_similarity`` 0.4.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.rounds import mean, orders, pool_cpu

__all__ = ["append_row", "cli_row", "indexer_row", "load_row", "search_row", "warm_servers"]

PG_SETTING = ("word", 0.4)
PG_LABEL = "pg_trgm word_similarity≥0.4"


def append_row(events: int) -> dict[str, Any]:
    """Durable appender (per process) vs confluent-kafka with the same validation, same records;
    and kafka-python alone (pre-encoded, no validation): the most any appender built on it gets."""
    from backscroll.ingest import KafkaSettings
    from benchmarks.bench_append import records, run_backscroll, run_confluent, run_kafka_python

    kafka = KafkaSettings()
    data = records(events + 1, 20, 200)
    ours = run_backscroll(kafka, data, durable=True, fsync="interval")
    peer = run_confluent(kafka, data, validate=True, linger_ms=5)
    client = run_kafka_python(kafka, data)
    return {"events": events, "backscroll": ours, "confluent_validated": peer, "kafka_python": client}


def warm_servers(events: int, console: Console) -> dict[str, Any]:
    """Unmeasured: ``events`` through the appender and through the indexer end to end and the raw
    bulk, so that the measured rows do not meet servers whose JVMs have just started (the first row
    to meet them ran at about half the rate it reached later in the same run)."""
    from benchmarks.pipeline_throughput import throughput

    started = time.monotonic()
    append_row(events)
    throughput(events, console)
    return {"events": events, "seconds": time.monotonic() - started}


def indexer_row(events: int, console: Console, *, rounds: int = 1) -> dict[str, Any]:
    """End to end vs the raw bulk ceiling (``rounds`` times, alternating); 1 vs 2 worker processes
    on a 4-partition topic when ``bench_pipeline`` offers ``scaling`` (its ``--workers``), otherwise
    recorded as not measured."""
    from benchmarks import bench_pipeline
    from benchmarks.pipeline_throughput import throughput

    row: dict[str, Any] = dict(throughput(events, console, rounds))
    scaling = getattr(bench_pipeline, "scaling", None)
    if not callable(scaling):
        row["scaling"] = {
            "measured": False,
            "reason": "bench_pipeline offers no worker scaling in this checkout",
        }
        return row
    found = scaling(events, [1, 2], console)
    by_workers = {int(r["workers"]): r for r in found.get("runs", [])}
    one, two = by_workers.get(1), by_workers.get(2)
    if one is None or two is None:
        row["scaling"] = {
            "measured": False,
            "reason": "bench_pipeline.scaling returned no 1- and 2-worker runs",
        }
        return row
    row["scaling"] = {
        "measured": True,
        "partitions": found.get("partitions"),
        "runs": found.get("runs"),
        "one_worker_events_per_s": one["events_per_s"],
        "two_workers_events_per_s": two["events_per_s"],
        "speedup": two["events_per_s"] / one["events_per_s"],
    }
    return row


def cli_row(events: int) -> dict[str, Any]:
    """``backscroll append FILE`` embedded and Kafka vs ``SQLiteEntryLog.append_many``."""
    from benchmarks.bench_cli_append import measure

    return {"events": events, "paths": {name: row for name, row in measure(events)}}


def _file_bytes(path: Path) -> int:
    return sum(
        Path(f"{path}{suffix}").stat().st_size for suffix in ("", "-wal") if Path(f"{path}{suffix}").exists()
    )


def _opensearch_bytes(opensearch: Any) -> int:
    from backscroll.indexer import OpenSearchView

    view = OpenSearchView(opensearch)
    try:
        indices = f"{view.events},{view.sessions}"
        view.client.indices.flush(index=indices)
        stats = view.client.indices.stats(index=indices, metric="store")
        return int(stats["_all"]["primaries"]["store"]["size_in_bytes"])
    finally:
        view.close()


def load_row(entries: int, seed: int, *, stack: bool = True, rounds: int = 1) -> dict[str, Any]:
    """The corpus from an empty system to searchable on both backends, what it occupies on disk,
    and (with ``bench_load``) PostgreSQL's COPY + GIN build of the same corpus. Uses
    ``bench_load`` (the product's CLI, ``append FILE`` then ``index --until-idle``) when this
    checkout has it, else ``bench_console``'s in-process load (``append_many`` then the indexer).
    With ``bench_load``, the embedded load and PostgreSQL's run ``rounds`` times in alternating order
    (their mean times and each round's ratio); the Kafka + OpenSearch load once, after the first
    embedded one."""
    if importlib.util.find_spec("benchmarks.bench_load") is not None:
        return _load_via_cli(entries, seed, stack=stack, rounds=rounds)
    from benchmarks.bench_console import corpus, isolated_stack, load_embedded, load_stack

    batches: list[list[dict[str, Any]]] = []
    corpus(entries, seed, batches.append)
    row: dict[str, Any] = {
        "via": "bench_console (in process: append_many, then the indexer until idle)",
        "entries": entries,
        "records": sum(len(b) for b in batches),
        "events": sum(1 for b in batches for r in b if r.get("kind") == "event"),
    }
    with tempfile.TemporaryDirectory(prefix="backscroll-speed-") as tmp:
        path = Path(tmp) / "backscroll.db"
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


def _load_via_cli(entries: int, seed: int, *, stack: bool, rounds: int) -> dict[str, Any]:
    bench_load: Any = importlib.import_module("benchmarks.bench_load")
    row: dict[str, Any] = {
        "via": "bench_load (the CLI: `backscroll append FILE`, then `backscroll index --until-idle`)",
        "entries": entries,
        "events": entries,
    }
    embedded: list[dict[str, Any]] = []
    pg: list[dict[str, Any]] = []
    measured: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="backscroll-speed-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        row["records"], row["wire_bytes"], probe = bench_load._write_corpus(entries, seed, corpus)
        for i, order in enumerate(orders(rounds, "embedded", "pg")):
            for side in order:
                if side == "pg":
                    pg.append(bench_load.load_pg(corpus))
                    continue
                workdir = Path(tmp) / f"round-{i}"
                workdir.mkdir()
                embedded.append(bench_load.load_embedded(corpus, probe, workdir))
                shutil.rmtree(workdir)
                if stack and i == 0:
                    found = bench_load.load_kafka_opensearch(corpus, probe, 4, False)
                    row["kafka_opensearch"] = found | {"seconds": found["total_s"]}
            measured.append(
                {
                    "order": " first, then ".join(order),
                    "embedded_s": embedded[-1]["total_s"],
                    "pg_s": pg[-1]["total_s"],
                    "ratio": embedded[-1]["total_s"] / pg[-1]["total_s"],
                }
            )
    row["embedded"] = _pooled_load(embedded)
    row["pg"] = _pooled_load(pg)
    row["rounds"] = measured
    return row


def _pooled_load(found: list[dict[str, Any]]) -> dict[str, Any]:
    """One load side measured once per round: its times as the mean per round, its probe found in
    every round, the rest (size, parts, versions) from the last round."""
    out = dict(found[-1])
    for key in ("append_s", "index_s", "total_s"):
        if all(key in f for f in found):
            out[key] = mean([float(f[key]) for f in found])
    out["seconds"] = out["total_s"]
    if any("found" in f for f in found):
        out["found"] = all(f.get("found") is not False for f in found)
    if any("index_cpu" in f for f in found):
        out["index_cpu"] = pool_cpu([f.get("index_cpu") or {} for f in found])
    out["rounds"] = len(found)
    return out


def _drop_prefix(hosts: str, index_prefix: str) -> None:
    from backscroll.indexer import OpenSearchView

    view = OpenSearchView(hosts=hosts, index_prefix=index_prefix)
    try:
        view.drop()
    finally:
        view.close()


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
    from benchmarks.bench_relevance import RelevanceConfig, run_relevance

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
    try:
        path = run_relevance(cfg, console=console, out=out)
    finally:
        if "backscroll" in systems:
            _drop_prefix(opensearch, index_prefix)  # hundreds of MB at 272k on a shared server
    result = json.loads(path.read_text(encoding="utf-8"))
    row: dict[str, Any] = {"result_file": path.name, "queries": result.get("queries", {}).get("count")}
    row["interleaved"] = result.get("latency_order") == "interleaved"
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
