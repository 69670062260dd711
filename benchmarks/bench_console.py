"""Console page latency on a large embedded corpus (on demand; not part of the test run).

``python -m benchmarks.bench_console --entries 272000 [--db PATH] [--runs 200] [--stack]``
builds the benchmark corpus (:mod:`benchmarks.corpus`, needs ``pip install -e '.[bench]'``)
into an embedded SQLite file (kept with ``--db`` so a rerun skips the build) or, with ``--stack``,
into the running Kafka + OpenSearch under an isolated topic and index prefix (removed afterwards),
serves the console on a free loopback port and requests each page ``--runs`` times over HTTP, one
request at a time, printing p50 / p95 / p99 / max in milliseconds per page:

* ``provider 1 ws``: the same searches as ``search 1 ws`` straight through the provider, no HTTP
  (what the console adds is the difference);
* ``search 1 ws``: a typo'd two-word query in the largest workspace (first page);
* ``search all ws``: the same over every workspace (an ops scope);
* ``search page 2``: the second page of a one-workspace search (a signed cursor);
* ``session``: a session's first page of events with its lineage;
* ``session @hit``: an exact read with a window of 5 around a seq;
* ``health``: lag, watermark, dead letters and per-workspace counts.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from tests.console.conftest import embedded, live_console
from tests.console.http import call

from backscroll.backends import Backend, KafkaOpenSearchBackend
from backscroll.console.settings import Grants
from backscroll.indexer import IndexerSettings, OpenSearchSettings
from backscroll.indexer.sqlite.runner import embedded_runner
from backscroll.ingest import KafkaSettings
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.queries import edit_word

_WORD = re.compile(r"[A-Za-z]{6,}")


Samples = tuple[list[str], dict[str, list[tuple[str, int]]]]


def corpus(entries: int, seed: int, sink: Callable[[list[dict[str, Any]]], object]) -> Samples:
    """Feed the corpus to ``sink`` in batches; returns sample words and (session, last seq) per
    workspace."""
    rng = random.Random(seed)
    words: list[str] = []
    sessions: dict[str, dict[str, int]] = {}
    batch: list[dict[str, Any]] = []
    for record in Corpus(CorpusConfig(entries=entries, seed=seed)):
        batch.append(record)
        if record.get("kind") == "event":
            ws, sid, seq = str(record["workspace_id"]), str(record["session_id"]), int(str(record["seq"]))
            sessions.setdefault(ws, {})[sid] = seq
            if len(words) < 5000 and rng.random() < 0.02:
                words += _WORD.findall(str(record.get("text", "")))[:2]
        if len(batch) >= 2000:
            sink(batch)
            batch = []
    sink(batch)
    return words, {ws: list(by.items()) for ws, by in sessions.items()}


def _took(entries: int, timings: dict[str, float]) -> None:
    print(f"built {entries} entries: append {timings['append_s']:.0f}s, index {timings['index_s']:.0f}s")


def load_embedded(path: Path, batches: Iterable[list[dict[str, Any]]]) -> dict[str, float]:
    """Append ``batches`` to an empty embedded file and index until searchable; the seconds of each
    step (the load row of ``benchmarks.speed`` times exactly this)."""
    started = time.monotonic()
    with SQLiteEntryLog(path) as log:
        for batch in batches:
            log.append_many(batch)
    appended = time.monotonic()
    with embedded_runner(path, batch_max=2000) as indexer:
        indexer.run(until_idle=True)
    return {"append_s": appended - started, "index_s": time.monotonic() - appended}


def build_embedded(path: Path, entries: int, seed: int) -> Samples:
    batches: list[list[dict[str, Any]]] = []
    samples = corpus(entries, seed, batches.append)
    _took(entries, load_embedded(path, batches))
    return samples


@contextmanager
def isolated_stack(keep: bool = False) -> Iterator[tuple[KafkaSettings, OpenSearchSettings, IndexerSettings]]:
    """A fresh topic, index prefix and group on the running Kafka + OpenSearch, removed afterwards
    unless ``keep``."""
    from kafka import KafkaAdminClient

    from backscroll.indexer import OpenSearchView
    from backscroll.ingest import dlq_topic, ensure_topics

    name = f"console-bench-{uuid.uuid4().hex[:8]}"
    kafka = KafkaSettings().model_copy(update={"topic": f"backscroll.{name}"})
    opensearch = OpenSearchSettings().model_copy(update={"index_prefix": name})
    indexer = IndexerSettings().model_copy(update={"group_id": name})
    ensure_topics(kafka)
    try:
        yield kafka, opensearch, indexer
    finally:
        if keep:
            print(f"kept topic {kafka.topic}, index prefix {opensearch.index_prefix}")
        else:
            view = OpenSearchView(opensearch)
            try:
                view.drop()
            finally:
                view.close()
            admin = KafkaAdminClient(**kafka.client_config())
            try:
                admin.delete_topics([kafka.topic, dlq_topic(kafka.topic)])
            finally:
                admin.close()


def load_stack(
    kafka: KafkaSettings,
    opensearch: OpenSearchSettings,
    indexer: IndexerSettings,
    batches: Iterable[list[dict[str, Any]]],
) -> dict[str, float]:
    """Append ``batches`` through the durable ``Appender`` (``append_many``, the bulk path) and index
    them with the worker until idle (searchable); the seconds of each step."""
    from backscroll.indexer import kafka_runner
    from backscroll.ingest import Appender, AppenderSettings

    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="backscroll-bench-spool-") as spool,
        Appender(kafka, AppenderSettings(spool_dir=Path(spool))) as appender,
    ):
        for batch in batches:
            appender.append_many(batch)
        appender.flush(timeout=600)
    appended = time.monotonic()
    with kafka_runner(kafka, opensearch, indexer) as worker:
        worker.run(until_idle=True)
    return {"append_s": appended - started, "index_s": time.monotonic() - appended}


@contextmanager
def stack_backend(entries: int, seed: int, keep: bool) -> Iterator[tuple[Backend, Samples]]:
    """The corpus on the running Kafka + OpenSearch under an isolated topic, prefix and group."""
    with isolated_stack(keep) as (kafka, opensearch, indexer):
        batches: list[list[dict[str, Any]]] = []
        samples = corpus(entries, seed, batches.append)
        _took(entries, load_stack(kafka, opensearch, indexer, batches))
        backend = KafkaOpenSearchBackend(kafka, opensearch, indexer)
        yield replace(backend, cursor_key=b"console-bench-cursor-key-000000"), samples


def measure(name: str, runs: int, url_for: Callable[[int], str]) -> tuple[list[float], dict[int, int]]:
    """Latencies (ms) of ``runs`` requests, and how many answered each non-200 status."""
    samples = []
    failed: dict[int, int] = {}
    for i in range(runs):
        url = url_for(i)
        started = time.perf_counter()
        reply = call(url)
        samples.append((time.perf_counter() - started) * 1000)
        if reply.status != 200:
            failed[reply.status] = failed.get(reply.status, 0) + 1
    return samples, failed


def provider_only(backend: Backend, workspace: str, queries: list[str]) -> tuple[list[float], dict[int, int]]:
    """The same first-page searches straight through the provider (the console's floor)."""
    from backscroll.query import Scope, SessionQueryError, SessionQueryRequest

    samples = []
    failed: dict[int, int] = {}
    with backend.open_provider(Scope.workspace(workspace)) as provider:
        for query in queries:
            started = time.perf_counter()
            try:
                provider.search(SessionQueryRequest(query=query, limit=50))
            except SessionQueryError:  # counted like the pages' 503/504, not the end of the run
                failed[504] = failed.get(504, 0) + 1
            samples.append((time.perf_counter() - started) * 1000)
    return samples, failed


def report(name: str, measured: tuple[list[float], dict[int, int]]) -> None:
    samples, failed = measured
    if not samples:
        print(f"{name:16} n=   0")
        return
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    print(
        f"{name:16} n={len(samples):4}  p50 {statistics.median(ordered):7.1f}  p95 {pct(0.95):7.1f}  "
        f"p99 {pct(0.99):7.1f}  max {ordered[-1]:7.1f} ms" + (f"  (non-200: {failed})" if failed else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--db", type=Path, help="Embedded: keep the corpus here (reused when it exists).")
    parser.add_argument(
        "--stack", action="store_true", help="Kafka + OpenSearch (`backscroll up`) instead of embedded."
    )
    parser.add_argument("--keep", action="store_true", help="--stack: keep the topic and indices.")
    args = parser.parse_args()
    if args.stack:
        with stack_backend(args.entries, args.seed, args.keep) as (backend, samples):
            run_pages(backend, samples, args.runs, args.seed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "console-bench.db"
        sidecar = db.with_suffix(".samples.txt")
        if db.exists() and sidecar.exists():
            saved = orjson.loads(sidecar.read_bytes())
            samples = saved["words"], {ws: [tuple(s) for s in v] for ws, v in saved["sessions"].items()}
        else:
            samples = build_embedded(db, args.entries, args.seed)
            sidecar.write_bytes(orjson.dumps({"words": samples[0], "sessions": samples[1]}))
        print(f"corpus {db}")
        run_pages(embedded(db), samples, args.runs, args.seed)


def run_pages(backend: Backend, samples: Samples, runs: int, seed: int) -> None:
    """Request every page ``runs`` times through a console over ``backend``; print the latencies."""
    words, sessions = samples
    args = argparse.Namespace(runs=runs)
    rng = random.Random(seed)
    largest = max(sessions, key=lambda ws: len(sessions[ws]))
    queries = []
    for _ in range(args.runs):
        first, second = rng.sample(words, 2)
        queries.append(f"{edit_word(first.lower(), 'substitute', rng) or first} {second.lower()}")
    picks = [rng.choice(sessions[largest]) for _ in range(args.runs)]
    with live_console(backend, Grants({})) as base:
        call(base + "/health")  # warm the catalog and the connections
        page_two: list[str] = []
        for query in queries:
            body = call(f"{base}/search?ws={quote(largest)}&q={quote(query)}").body
            found = re.search(r'<a href="([^"]+)" id="next"', body)
            if found:
                page_two.append(base + found.group(1).replace("&amp;", "&"))
        results = {
            "provider 1 ws": provider_only(backend, largest, queries),
            "search 1 ws": measure(
                "search 1 ws", args.runs, lambda i: f"{base}/search?ws={quote(largest)}&q={quote(queries[i])}"
            ),
            "search all ws": measure(
                "search all ws", args.runs, lambda i: f"{base}/search?q={quote(queries[i])}"
            ),
            "search page 2": measure("search page 2", len(page_two), lambda i: page_two[i]),
            "session": measure("session", args.runs, lambda i: f"{base}/session/{quote(picks[i][0])}"),
            "session @hit": measure(
                "session @hit",
                args.runs,
                lambda i: f"{base}/session/{quote(picks[i][0])}?seq={picks[i][1] // 2}&before=5&after=5",
            ),
            "health": measure("health", max(20, args.runs // 10), lambda i: f"{base}/health"),
        }
    print(
        f"{backend.describe()} · largest workspace {largest} "
        f"({len(sessions[largest])} sessions of {sum(map(len, sessions.values()))})"
    )
    for name, measured in results.items():
        report(name, measured)


if __name__ == "__main__":
    main()
