"""Indexer throughput against the raw bulk ceiling (the ``throughput`` of ``bench_pipeline``).

The same corpus records (a) produced to a fresh topic and indexed end to end by the real worker
(Kafka → projection → routed bulk → commit), and (b) projected and sent straight to OpenSearch with
``opensearchpy.helpers.parallel_bulk`` (no Kafka, no fold state, no commits): the ceiling. Each
side writes into fresh indices with the same template, dropped as soon as that side is measured, so
the next side meets a server that merges nothing of the previous one. With ``rounds`` > 1 the sides
alternate (end to end first in even rounds, the raw bulk first in odd ones) and the ratio is that
of the mean rates (:mod:`benchmarks.rounds`).
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import orjson
from kafka import KafkaAdminClient, KafkaProducer
from opensearchpy import helpers
from rich.console import Console
from rich.progress import Progress

from backscroll.indexer import IndexerSettings, OpenSearchSettings, OpenSearchView, kafka_runner
from backscroll.indexer.document import event_document
from backscroll.ingest import KafkaSettings, ensure_topics, parse_record
from backscroll.ingest.wire import EventRecord
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.cpuacct import CpuWindow
from benchmarks.rounds import mean, orders, pool_cpu

__all__ = ["delete_topic", "produce", "records", "throughput"]

_END_TO_END, _RAW = "end to end", "raw bulk"


def records(events: int) -> list[dict[str, Any]]:
    """The benchmark's corpus records (seed 11)."""
    return list(Corpus(CorpusConfig(entries=events, seed=11)).records())


def produce(kafka: KafkaSettings, rows: list[dict[str, Any]]) -> None:
    """``rows`` to ``kafka.topic`` (created if missing), keyed by session, all acknowledged."""
    ensure_topics(kafka)
    producer = KafkaProducer(
        **kafka.client_config(), linger_ms=20, batch_size=512 * 1024, compression_type="zstd"
    )
    for record in rows:
        producer.send(kafka.topic, key=record["session_id"].encode(), value=orjson.dumps(record))
    producer.flush()
    producer.close()


def delete_topic(kafka: KafkaSettings) -> None:
    """Delete ``kafka.topic`` and its dead-letter topic, where they exist."""
    admin = KafkaAdminClient(**kafka.client_config())
    try:
        existing = set(admin.list_topics())
        admin.delete_topics([t for t in (kafka.topic, f"{kafka.topic}.dlq") if t in existing])
    finally:
        admin.close()


def _cpu_window() -> CpuWindow:
    """A CPU window over the local servers and this process."""
    window = CpuWindow.over_servers()
    window.watch("bench", os.getpid())
    return window


def _end_to_end(kafka: KafkaSettings, label: str, total: int, console: Console) -> dict[str, Any]:
    """The worker, in a group of its own, from the topic's start into fresh indices (then dropped)."""
    opensearch = OpenSearchSettings().model_copy(update={"index_prefix": f"bench-tp-{label}"})
    settings = IndexerSettings().model_copy(update={"group_id": f"bench-{label}", "batch_max": 2000})
    window = _cpu_window()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("indexer (Kafka → OpenSearch)", total=total)
        window.start()
        started, cpu_started = time.monotonic(), time.process_time()
        with kafka_runner(kafka, opensearch, settings) as worker:
            stats = worker.run(
                until_idle=True, on_batch=lambda s: progress.update(task, completed=s.consumed)
            )
        seconds = time.monotonic() - started
        cpu_s = time.process_time() - cpu_started  # the worker's threads (this process)
        window.stop()
    view = OpenSearchView(opensearch)
    try:
        view.drop()
    finally:
        view.close()
    return {
        "seconds": seconds,
        "cpu_s": cpu_s,
        "indexed": stats.indexed,
        "dead_lettered": stats.dead_lettered,
        "cpu": window.report(),
    }


def _raw_bulk(sources: list[tuple[str, str, dict[str, Any]]], label: str) -> dict[str, Any]:
    """``parallel_bulk`` of the projected documents into fresh indices (then dropped)."""
    view = OpenSearchView(OpenSearchSettings().model_copy(update={"index_prefix": f"bench-raw-{label}"}))
    try:
        view.ensure_schema()
        docs = (
            {"_index": view.events, "_id": doc_id, "_routing": routing, "_source": source}
            for doc_id, routing, source in sources
        )
        window = _cpu_window()
        window.start()
        started = time.monotonic()
        for ok, item in helpers.parallel_bulk(
            view.client, docs, thread_count=2, chunk_size=2000, raise_on_error=False, request_timeout=120
        ):
            if not ok:
                raise RuntimeError(f"raw bulk failed: {item}")
        view.refresh()
        seconds = time.monotonic() - started
        window.stop()
        view.drop()
    finally:
        view.close()
    return {"seconds": seconds, "cpu": window.report()}


def throughput(events: int, console: Console, rounds: int = 1) -> dict[str, Any]:
    """End to end against the raw bulk of the same documents, ``rounds`` times in alternating order;
    the rates and the ratio of the means, each round's own, and the CPU each party took (mean per
    round)."""
    rows = records(events)
    run = uuid.uuid4().hex[:8]
    kafka = KafkaSettings().model_copy(update={"topic": f"bench.pipeline.{run}"})
    produce(kafka, rows)
    parsed = [parse_record(r) for r in rows]
    sources = [
        (r.doc_id, r.session_id, event_document(r, surface_state="current"))
        for r in parsed
        if isinstance(r, EventRecord)
    ]
    n_events = len(sources)
    measured: list[dict[str, Any]] = []
    try:
        for i, order in enumerate(orders(rounds, _END_TO_END, _RAW)):
            sides: dict[str, dict[str, Any]] = {}
            for side in order:
                label = f"{run}-{i}"
                if side == _END_TO_END:
                    sides[side] = _end_to_end(kafka, label, len(rows), console)
                else:
                    sides[side] = _raw_bulk(sources, label)
            ours, raw = sides[_END_TO_END], sides[_RAW]
            measured.append(
                {
                    "order": " first, then ".join(order),
                    "indexer_events_per_s": n_events / ours["seconds"],
                    "raw_events_per_s": n_events / raw["seconds"],
                    "ratio": raw["seconds"] / ours["seconds"],
                    "indexer": ours,
                    "raw": raw,
                }
            )
    finally:
        delete_topic(kafka)
    indexer_s = mean([m["indexer"]["seconds"] for m in measured])
    raw_s = mean([m["raw"]["seconds"] for m in measured])
    return {
        "events": n_events,
        "records": len(rows),
        "rounds": measured,
        "indexer_seconds": indexer_s,
        "indexer_events_per_s": n_events / indexer_s,
        "raw_bulk_seconds": raw_s,
        "raw_events_per_s": n_events / raw_s,
        "ratio": raw_s / indexer_s,
        "indexed": min(m["indexer"]["indexed"] for m in measured),
        "dead_lettered": max(m["indexer"]["dead_lettered"] for m in measured),
        "indexer_cpu_seconds": mean([m["indexer"]["cpu_s"] for m in measured]),
        "load_average": os.getloadavg()[0],
        # CPU seconds by party, mean per round: "bench" is this process (the worker, then the bulk client)
        "cpu": {
            "indexer": pool_cpu([m["indexer"]["cpu"] for m in measured]),
            "raw": pool_cpu([m["raw"]["cpu"] for m in measured]),
        },
    }
