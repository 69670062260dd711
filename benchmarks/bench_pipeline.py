"""Indexer throughput against the raw bulk ceiling, and append → searchable freshness.

    python -m benchmarks.bench_pipeline --events 50000 [--report]

* throughput (:mod:`benchmarks.pipeline_throughput`): the same corpus records (a) indexed end
  to end by the real worker and (b) sent straight to OpenSearch with ``parallel_bulk`` (the
  ceiling); the ratio is (a)/(b), over ``--rounds`` rounds in alternating order.
* freshness: a steady stream of appends (``--rate`` per second) through the ``Appender`` while a
  worker runs; for a sample of entries we poll the provider until each is searchable and record
  append → searchable.

Results go to benchmarks/results/pipeline-*.json; ``--report`` rewrites the pipeline section
of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from backscroll.indexer import IndexerSettings, OpenSearchSettings, OpenSearchView, kafka_runner
from backscroll.ingest import Appender, KafkaSettings, ensure_topics
from backscroll.query import OpenSearchProvider, Scope, SessionQueryRequest
from benchmarks.cpuacct import CpuWindow, server_pids
from benchmarks.machine import machine_info
from benchmarks.pipeline_throughput import delete_topic, produce, throughput
from benchmarks.pipeline_throughput import records as corpus_records

RESULTS = Path(__file__).resolve().parent / "results"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- BEGIN pipeline -->", "<!-- END pipeline -->"


def _cleanup(view: OpenSearchView, kafka: KafkaSettings) -> None:
    view.drop()
    delete_topic(kafka)


def _worker(
    kafka: KafkaSettings,
    opensearch: OpenSearchSettings,
    settings: IndexerSettings,
    out: Any,
    watermark_interval_s: float = 1.0,
) -> None:
    """One indexer process of the scaling run: index until the group is caught up, then report
    its counters and its own CPU time."""
    with kafka_runner(kafka, opensearch, settings, watermark_interval_s=watermark_interval_s) as worker:
        stats = worker.run(until_idle=True)
    times = os.times()
    out.put({"indexed": stats.indexed, "consumed": stats.consumed, "cpu_s": times.user + times.system})


def scaling(
    events: int, workers: list[int], console: Console, watermark_interval_s: float = 1.0
) -> dict[str, Any]:
    """The same topic (``--partitions``) indexed by 1, 2, ... worker processes of one group each
    (a count may repeat: each run has a group and a prefix of its own), into a fresh prefix each
    time, with the CPU each party used (workers, OpenSearch, Kafka, rest)."""
    records = corpus_records(events)
    run = uuid.uuid4().hex[:8]
    kafka = KafkaSettings().model_copy(update={"topic": f"bench.scale.{run}"})
    produce(kafka, records)
    n_events = sum(1 for r in records if r["kind"] == "event")
    ctx = multiprocessing.get_context("spawn")
    rows: list[dict[str, Any]] = []
    servers = server_pids()
    try:
        for i, n in enumerate(workers):
            prefix = f"bench-scale-{run}-{n}" + (f"-{i}" if workers.count(n) > 1 else "")
            opensearch = OpenSearchSettings().model_copy(update={"index_prefix": prefix})
            schema = OpenSearchView(opensearch)
            schema.ensure_schema()  # not timed, and no race between the workers creating it
            settings = IndexerSettings().model_copy(update={"group_id": prefix})
            window = CpuWindow()
            for name, pid in servers.items():
                window.watch(name, pid)
            queue = ctx.Queue()
            args = (kafka, opensearch, settings, queue, watermark_interval_s)
            procs = [ctx.Process(target=_worker, args=args) for _ in range(n)]
            console.print(f"{n} worker process(es) on {kafka.partitions} partitions ...")
            window.start()
            started = time.monotonic()
            for proc in procs:
                proc.start()
            reports = [queue.get(timeout=1800) for _ in procs]
            seconds = time.monotonic() - started
            window.stop()
            for proc in procs:
                proc.join(timeout=60)
            split = window.report()
            split["workers_cpu_s"] = sum(r["cpu_s"] for r in reports)
            split["others_cpu_s"] = max(0.0, split["others_cpu_s"] - split["workers_cpu_s"])
            row = {
                "workers": n,
                "watermark_interval_s": watermark_interval_s,
                "seconds": seconds,
                "events_per_s": n_events / seconds,
                "indexed": sum(r["indexed"] for r in reports),
                "cpu": split,
            }
            schema.refresh()
            row["documents"] = int(schema.client.count(index=schema.events)["count"])  # exactly n_events
            rows.append(row)
            console.print(row)
            schema.drop()
            schema.close()
    finally:
        delete_topic(kafka)
    base = rows[0]["events_per_s"] if rows else 0.0
    for row in rows:
        row["speedup"] = row["events_per_s"] / base if base else None
    return {"events": n_events, "partitions": kafka.partitions, "runs": rows}


def freshness(rate: float, seconds: float, console: Console) -> dict[str, Any]:
    run = uuid.uuid4().hex[:8]
    kafka = KafkaSettings().model_copy(update={"topic": f"bench.fresh.{run}"})
    ensure_topics(kafka)
    opensearch = OpenSearchSettings().model_copy(update={"index_prefix": f"bench-fresh-{run}"})
    settings = IndexerSettings().model_copy(update={"group_id": f"bench-fresh-{run}", "poll_timeout_ms": 100})
    schema = OpenSearchView(opensearch)
    schema.ensure_schema()
    schema.close()
    stop = threading.Event()
    worker = kafka_runner(kafka, opensearch, settings, watermark_interval_s=0.25)
    thread = threading.Thread(target=lambda: worker.run(stop=stop))
    thread.start()
    provider = OpenSearchProvider(Scope.workspace("fresh"), opensearch)
    samples: list[float] = []
    total = int(rate * seconds)
    interval = 1.0 / rate
    try:
        with Appender(kafka) as appender, Progress(console=console, transient=True) as progress:
            task = progress.add_task(f"freshness at {rate:.0f}/s", total=total)
            next_at = time.monotonic()
            pending: list[tuple[str, int, float]] = []
            for seq in range(total):
                word = f"needle{run}x{seq}"
                appender.append(
                    {
                        "v": 1,
                        "kind": "event",
                        "workspace_id": "fresh",
                        "session_id": f"f-{seq % 20}",
                        "seq": seq // 20,
                        "type": "user/message",
                        "role": "user",
                        "surface": {"op": "append"},
                        "time": datetime.now(UTC).isoformat(),
                        "text": f"steady load entry {word}",
                    }
                )
                if seq % 25 == 0:
                    pending.append((word, seq, time.monotonic()))
                progress.advance(task)
                still = []
                for word_, seq_, t0 in pending:
                    hits = provider.search(SessionQueryRequest(query=word_, limit=1)).matches
                    if hits:
                        samples.append(time.monotonic() - t0)
                    else:
                        still.append((word_, seq_, t0))
                pending = still
                next_at += interval
                time.sleep(max(0.0, next_at - time.monotonic()))
            deadline = time.monotonic() + 30
            while pending and time.monotonic() < deadline:
                still = []
                for word_, seq_, t0 in pending:
                    if provider.search(SessionQueryRequest(query=word_, limit=1)).matches:
                        samples.append(time.monotonic() - t0)
                    else:
                        still.append((word_, seq_, t0))
                pending = still
                time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=60)
        view = worker.view
        worker.close()
        cleanup_view = OpenSearchView(opensearch)
        _cleanup(cleanup_view, kafka)
        cleanup_view.close()
        del view
    samples.sort()
    q = statistics.quantiles(samples, n=100) if len(samples) >= 2 else [float("nan")] * 99
    return {
        "rate_per_s": rate,
        "seconds": seconds,
        "samples": len(samples),
        "p50_s": statistics.median(samples) if samples else None,
        "p99_s": q[98],
        "max_s": max(samples or [0]),
    }


def render(result: dict[str, Any]) -> str:
    tp, fr, m = result["throughput"], result["freshness"], result["machine"]
    lines = [
        BEGIN,
        "## Pipeline: indexer throughput and freshness",
        "",
        f"Run {result['finished_at']} on {m.get('nproc')} cores ({m.get('cpu_model')}), "
        f"load average at start {'/'.join(f'{x:.1f}' for x in m.get('loadavg_at_start') or [])}. "
        f"Command: `{result['command']}`.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| events | {tp['events']:,} |",
        "| indexer end to end (Kafka → worker → OpenSearch, commits) | "
        f"{tp['indexer_events_per_s']:,.0f} events/s |",
        "| raw ceiling (same documents, `parallel_bulk`, no Kafka) | "
        f"{tp['raw_events_per_s']:,.0f} events/s |",
        f"| **ratio** (target ≥ 0.7) | **{tp['ratio']:.2f}** |",
        f"| freshness at {fr['rate_per_s']:.0f} appends/s, {fr['samples']} samples: p50 / p99 / max "
        f"(target p50 ≤ 1.5 s) | {fr['p50_s']:.2f} s / {fr['p99_s']:.2f} s / {fr['max_s']:.2f} s |",
        "",
        *_scaling_lines(result.get("scaling")),
        "Freshness is append (caller's thread) → the entry is returned by a provider search; it includes the "
        "producer's linger, the worker's poll, the bulk write and the refresh the worker triggers before it "
        "publishes the watermark (every 0.25 s here).",
        END,
        "",
    ]
    return "\n".join(lines)


def _scaling_lines(scaling: dict[str, Any] | None) -> list[str]:
    if not scaling:
        return []
    lines = [
        f"Worker processes of one group on a {scaling['partitions']}-partition topic "
        f"({scaling['events']:,} events; CPU seconds during the run):",
        "",
        "| workers | events/s | speedup | workers CPU | OpenSearch CPU | Kafka CPU | rest | machine busy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in scaling["runs"]:
        cpu = row["cpu"]
        lines.append(
            f"| {row['workers']} | {row['events_per_s']:,.0f} | {row['speedup']:.2f}× | "
            f"{cpu['workers_cpu_s']:.1f} s | {cpu.get('opensearch_cpu_s', 0):.1f} s | "
            f"{cpu.get('kafka_cpu_s', 0):.1f} s | {cpu['others_cpu_s']:.1f} s | "
            f"{100 * (cpu['machine_busy_fraction'] or 0):.0f}% of {cpu['cpus']} cores |"
        )
    lines.append("")
    return lines


def write_report(result: dict[str, Any]) -> None:
    section = render(result)
    text = DOCS.read_text(encoding="utf-8") if DOCS.exists() else "# Benchmarks\n\n"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END) + "\n?", lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOCS.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rate", type=float, default=200.0, help="appends per second for freshness")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--report", action="store_true")
    parser.add_argument(
        "--skip-freshness", action="store_true", help="throughput only (profiling, quick comparisons)"
    )
    parser.add_argument(
        "--workers",
        default="",
        help="also index the events with N worker processes of one group, e.g. 1,2 (the scaling run)",
    )
    parser.add_argument("--skip-throughput", action="store_true", help="skip the indexer/raw comparison")
    parser.add_argument(
        "--rounds", type=int, default=1, help="throughput: both sides this many times, in alternating order"
    )
    parser.add_argument(
        "--watermark-interval",
        type=float,
        default=1.0,
        help="the scaling run's workers refresh and publish their watermarks at most this often (s)",
    )
    args = parser.parse_args()
    console = Console()
    result: dict[str, Any] = {
        "kind": "pipeline",
        "started_at": datetime.now(UTC).isoformat(),
        "command": f"python -m benchmarks.bench_pipeline --events {args.events} "
        f"--rate {args.rate:g} --seconds {args.seconds:g}",
        "machine": machine_info(),
    }
    if args.workers:
        result["command"] += f" --workers {args.workers}"
        if args.watermark_interval != 1.0:
            result["command"] += f" --watermark-interval {args.watermark_interval:g}"
    if args.skip_freshness:
        result["command"] += " --skip-freshness"
    if args.rounds != 1:
        result["command"] += f" --rounds {args.rounds}"
    if args.skip_throughput:
        result["command"] += " --skip-throughput"
    else:
        console.rule("throughput")
        result["throughput"] = throughput(args.events, console, args.rounds)
        console.print(result["throughput"])
    if args.workers:
        console.rule("scaling")
        counts = [int(n) for n in args.workers.split(",") if n.strip()]
        result["scaling"] = scaling(args.events, counts, console, args.watermark_interval)
    if not args.skip_freshness:
        console.rule("freshness")
        result["freshness"] = freshness(args.rate, args.seconds, console)
        console.print(result["freshness"])
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"pipeline-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=2), encoding="utf-8")
    console.print(f"result: {path}")
    if args.report and "throughput" in result and "freshness" in result:
        write_report(result)
        console.print(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
