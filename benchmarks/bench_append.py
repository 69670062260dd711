"""Append benchmark: caller-thread latency and sustained throughput of one process,
backscroll's Appender vs confluent-kafka (librdkafka) producing the same records.

Run on demand against the local broker (never collected by pytest)::

    python -m benchmarks.bench_append                 # defaults: 50,000 events, ~300 B each
    python -m benchmarks.bench_append --events 20000 --tune   # also sweep linger/batch
    python -m benchmarks.bench_append --events 40000 --quick --memory --spool-write
        # the durable default with the spool mapped and written by write(2), and memory mode

For each configuration: p50/p99/p99.9/max of ``append()`` on the caller's thread (validation,
encoding, spool write and hand-off included), and events/s from the first append until every
record is acknowledged (``flush``). Every system is timed with the harness's own objects (the
generated records, ~3 tracked objects each) frozen out of the garbage collector's reach
(:func:`frozen_input`): otherwise each full collection walks them, and the system that allocates
more pays for the harness's memory. The confluent-kafka peer sends the byte-identical records with
acks=all, idempotence and the same compression; it is measured twice: raw ``produce`` of
pre-encoded bytes, and with the same pydantic validation + encoding on the caller's thread.
Results go to benchmarks/results/append-<time>.json and a Markdown table to stdout.
"""

from __future__ import annotations

import argparse
import errno
import gc
import json
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient

from backscroll.ingest import Appender, AppenderSettings, KafkaSettings, ensure_topics
from backscroll.ingest.kafka.producer import compression
from backscroll.ingest.kafka.topics import dlq_topic
from backscroll.ingest.wire import encode_key, encode_record, parse_record

RESULTS = Path(__file__).parent / "results"
_WORDS = [
    "deploy",
    "rollout",
    "latency",
    "budget",
    "forecast",
    "ledger",
    "invoice",
    "cluster",
    "metrics",
    "schema",
    "migration",
]


def records(n: int, sessions: int, text_bytes: int) -> list[dict[str, Any]]:
    base = datetime(2026, 11, 30, tzinfo=UTC)
    out = []
    for i in range(n):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < text_bytes:
            words.append(_WORDS[(i * 7 + len(words) * 3) % len(_WORDS)])
        role = "user" if i % 2 == 0 else "assistant"
        out.append(
            {
                "v": 1,
                "kind": "event",
                "workspace_id": "ws-bench",
                "session_id": f"bench-{i % sessions}",
                "seq": i // sessions,
                "type": f"{role}/message",
                "role": role,
                "surface": {"op": "append"},
                "time": (base + timedelta(milliseconds=i)).isoformat(),
                "text": " ".join(words),
            }
        )
    return out


def percentiles(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0

    return {
        "p50_us": at(0.50),
        "p95_us": at(0.95),
        "p99_us": at(0.99),
        "p999_us": at(0.999),
        "max_us": ordered[-1] / 1000.0,
        "mean_us": statistics.fmean(ordered) / 1000.0,
    }


@contextmanager
def topic(kafka: KafkaSettings) -> Iterator[KafkaSettings]:
    settings = kafka.model_copy(update={"topic": f"backscroll.bench.{uuid.uuid4().hex[:8]}", "partitions": 4})
    ensure_topics(settings)
    try:
        yield settings
    finally:
        admin = KafkaAdminClient(**settings.client_config())
        try:
            admin.delete_topics([settings.topic, dlq_topic(settings.topic)])
        finally:
            admin.close()


@contextmanager
def spool_io(mode: str) -> Iterator[None]:
    """``write``: the spool appends with ``write(2)`` (its fallback where a filesystem cannot
    preallocate, and how every segment was written before it was memory-mapped)."""
    if mode != "write":
        yield
        return
    from backscroll.ingest.kafka.spool import (
        mapped as spool_map,  # here: the script also measures trees without it
    )

    def unsupported(fd: int, capacity: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "benchmark: the spool writes with write(2)")

    real = spool_map._preallocate
    spool_map._preallocate = unsupported
    try:
        yield
    finally:
        spool_map._preallocate = real


@contextmanager
def frozen_input() -> Iterator[None]:
    """Everything allocated so far (the input records, their encodings) is left out of the
    garbage collector's collections while the block runs (``gc.freeze``)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_backscroll(
    kafka: KafkaSettings, data: list[dict[str, Any]], *, batch: int = 0, io: str = "mapped", **options: Any
) -> dict[str, Any]:
    """``batch`` > 0: ``append_many`` of that many records per call (latency is per call);
    ``io``: how the spool writes its segments (``mapped``, the default, or ``write``)."""
    with topic(kafka) as settings, tempfile.TemporaryDirectory() as spool, spool_io(io):
        opts = AppenderSettings(spool_dir=Path(spool), **options)
        with Appender(settings, opts) as appender:
            appender.append(data[0])  # connect outside the measurement
            appender.flush(60)
            lat: list[int] = []
            clock = time.perf_counter_ns
            rest = data[1:]
            with frozen_input():
                cpu = time.process_time()
                started = clock()
                if batch:
                    for i in range(0, len(rest), batch):
                        t0 = clock()
                        appender.append_many(rest[i : i + batch])
                        lat.append(clock() - t0)
                else:
                    for record in rest:
                        t0 = clock()
                        appender.append(record)
                        lat.append(clock() - t0)
                appended = clock()
                appender.flush(300)
                done = clock()
                cpu = time.process_time() - cpu
            stats = appender.stats()
    n = len(data) - 1
    return {
        "system": "backscroll" if not batch else "backscroll append_many",
        "options": {
            **options,
            **({"batch": batch} if batch else {}),
            **({"io": io} if io != "mapped" else {}),
        },
        "events": n,
        **percentiles(lat),
        "append_eps": n / ((appended - started) / 1e9),
        "sustained_eps": n / ((done - started) / 1e9),
        "cpu_us_per_event": cpu * 1e6 / n,
        "spooled": stats.spooled,
    }


def run_kafka_python(kafka: KafkaSettings, data: list[dict[str, Any]]) -> dict[str, Any]:
    """kafka-python alone with the appender's producer settings, pre-encoded records, one
    callback per record: the ceiling of the design's client on this machine."""
    from kafka import KafkaProducer

    from backscroll.ingest.kafka.producer import producer_config

    with topic(kafka) as settings:
        producer = KafkaProducer(**producer_config(settings, AppenderSettings(spool=False, durable=False)))
        try:
            encoded = [(encode_key(r), encode_record(r)) for r in (parse_record(d) for d in data)]
            acked = [0]

            def on_ack(_: Any) -> None:
                acked[0] += 1

            producer.send(settings.topic, key=encoded[0][0], value=encoded[0][1]).get(60)
            lat: list[int] = []
            clock = time.perf_counter_ns
            with frozen_input():
                cpu = time.process_time()
                started = clock()
                for key, value in encoded[1:]:
                    t0 = clock()
                    producer.send(settings.topic, key=key, value=value).add_callback(on_ack)
                    lat.append(clock() - t0)
                appended = clock()
                producer.flush(300)
                done = clock()
                cpu = time.process_time() - cpu
        finally:
            producer.close(10)
    n = len(data) - 1
    assert acked[0] == n, (acked[0], n)
    return {
        "system": "kafka-python alone (pre-encoded)",
        "options": {"linger_ms": 5},
        "events": n,
        **percentiles(lat),
        "append_eps": n / ((appended - started) / 1e9),
        "sustained_eps": n / ((done - started) / 1e9),
        "cpu_us_per_event": cpu * 1e6 / n,
    }


def run_confluent(
    kafka: KafkaSettings, data: list[dict[str, Any]], *, validate: bool, linger_ms: int
) -> dict[str, Any]:
    from confluent_kafka import Producer

    with topic(kafka) as settings:
        producer = Producer(
            {
                "bootstrap.servers": settings.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "compression.type": compression(),
                "linger.ms": linger_ms,
                "queue.buffering.max.messages": 1_000_000,
                "message.max.bytes": 4 * 1024 * 1024,
            }
        )
        errors: list[str] = []

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        encoded = [(encode_key(r), encode_record(r)) for r in (parse_record(d) for d in data)]
        producer.produce(settings.topic, key=encoded[0][0], value=encoded[0][1], on_delivery=report)
        producer.flush(60)
        lat: list[int] = []
        clock = time.perf_counter_ns
        topic_name = settings.topic
        prepare: Callable[[int], tuple[bytes, bytes]]
        if validate:

            def prepare(i: int) -> tuple[bytes, bytes]:
                record = parse_record(data[i])
                return encode_key(record), encode_record(record)
        else:

            def prepare(i: int) -> tuple[bytes, bytes]:
                return encoded[i]

        with frozen_input():
            cpu = time.process_time()
            started = clock()
            for i in range(1, len(data)):
                t0 = clock()
                key, value = prepare(i)
                producer.produce(topic_name, key=key, value=value, on_delivery=report)
                producer.poll(0)
                lat.append(clock() - t0)
            appended = clock()
            producer.flush(300)
            done = clock()
            cpu = time.process_time() - cpu
        assert not errors, errors[:5]
    n = len(data) - 1
    name = "confluent-kafka + validation" if validate else "confluent-kafka (pre-encoded)"
    return {
        "system": name,
        "options": {"linger_ms": linger_ms},
        "events": n,
        **percentiles(lat),
        "append_eps": n / ((appended - started) / 1e9),
        "sustained_eps": n / ((done - started) / 1e9),
        "cpu_us_per_event": cpu * 1e6 / n,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| system | options | p50 µs | p95 µs | p99 µs | p99.9 µs | max ms | append ev/s "
        "| sustained ev/s | CPU µs/ev |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        opts = ", ".join(f"{k}={v}" for k, v in r["options"].items())
        lines.append(
            f"| {r['system']} | {opts} | {r['p50_us']:.1f} | {r['p95_us']:.1f} | {r['p99_us']:.1f} | "
            f"{r['p999_us']:.1f} | "
            f"{r['max_us'] / 1000:.1f} | {r['append_eps']:,.0f} | {r['sustained_eps']:,.0f} | "
            f"{r['cpu_us_per_event']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--text-bytes", type=int, default=200)
    parser.add_argument("--tune", action="store_true", help="also sweep linger_ms × batch_size")
    parser.add_argument(
        "--quick", action="store_true", help="only the durable default, append_many and the validating peer"
    )
    parser.add_argument(
        "--memory", action="store_true", help="with --quick: also the memory mode (durable=False)"
    )
    parser.add_argument(
        "--spool-write",
        action="store_true",
        help="also the durable default with the spool written by write(2) instead of a mapping",
    )
    args = parser.parse_args()
    kafka = KafkaSettings()
    data = records(args.events + 1, args.sessions, args.text_bytes)
    rows: list[dict[str, Any]] = []
    configs: list[dict[str, Any]] = [
        {"durable": True, "fsync": "interval"},
        {"durable": True, "fsync": "interval", "batch": 500},
    ]
    if not args.quick:
        configs += [{"durable": False}, {"durable": True, "fsync": "always"}]
    elif args.memory:
        configs.append({"durable": False})
    if args.spool_write:
        configs.insert(1, {"durable": True, "fsync": "interval", "io": "write"})
    if args.tune:
        configs += [
            {"durable": True, "linger_ms": linger, "batch_size": batch}
            for linger in (0, 5, 20)
            for batch in (64 * 1024, 256 * 1024, 1024 * 1024)
        ]
    for options in configs:
        subset = data if options.get("fsync") != "always" else data[: min(len(data), 5_001)]
        rows.append(run_backscroll(kafka, subset, **options))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    rows.append(run_kafka_python(kafka, data))
    print(table(rows[-1:]).splitlines()[-1], flush=True)
    for validate in (True,) if args.quick else (False, True):
        rows.append(run_confluent(kafka, data, validate=validate, linger_ms=5))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    ours = next(r for r in rows if r["system"] == "backscroll" and r["options"] == configs[0])
    many = next(r for r in rows if r["system"] == "backscroll append_many")
    peer_v = next(r for r in rows if r["system"] == "confluent-kafka + validation")
    ratio = {
        "sustained_vs_confluent_validated": ours["sustained_eps"] / peer_v["sustained_eps"],
        "append_many_vs_confluent_validated": many["sustained_eps"] / peer_v["sustained_eps"],
        "cpu_per_event_vs_confluent_validated": ours["cpu_us_per_event"] / peer_v["cpu_us_per_event"],
        "p50_vs_confluent_validated": ours["p50_us"] / peer_v["p50_us"],
    }
    client = next(r for r in rows if r["system"].startswith("kafka-python alone"))
    ratio["kafka_python_alone_vs_confluent_validated"] = client["sustained_eps"] / peer_v["sustained_eps"]
    ratio["sustained_vs_kafka_python_alone"] = ours["sustained_eps"] / client["sustained_eps"]
    peer = next((r for r in rows if r["system"] == "confluent-kafka (pre-encoded)"), None)
    if peer is not None:
        ratio["sustained_vs_confluent"] = ours["sustained_eps"] / peer["sustained_eps"]
    print()
    print(table(rows))
    print("\nratios (backscroll durable default / confluent):", json.dumps(ratio, indent=None))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"append-{args.events}-{stamp}.json"
    out.write_text(
        json.dumps(
            {
                "machine": {
                    "python": platform.python_version(),
                    "cpus": _cpus(),
                    "loadavg": _load(),
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                },
                "args": vars(args),
                "rows": rows,
                "ratios": ratio,
            },
            indent=2,
        )
    )
    print(f"written {out}")


def _load() -> list[float]:
    import os

    return [round(x, 2) for x in os.getloadavg()]


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
