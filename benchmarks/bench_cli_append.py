"""``backscroll append FILE`` throughput (the bulk paths), with its ceiling in the same run.

Run on demand (never collected by pytest); the Kafka rows need the local stack (``backscroll up``)::

    python -m benchmarks.bench_cli_append --events 200000

Writes ``--events`` wire records (~300 B each, ``bench_append.records``) to a JSONL file, then:

* **cli embedded**: ``backscroll append FILE`` in a subprocess into a fresh SQLite file;
* **ceiling embedded**: ``SQLiteEntryLog.append_many`` of the already-parsed dicts, 2,000 per call,
  into another fresh file (the peer in the speed table);
* **cli kafka**: ``backscroll append FILE`` into a fresh 4-partition topic (durable appender).

Each row reports records/s on the wall clock and per CPU second of the process (user + system),
which stays meaningful on a machine shared with other work. Results go to stdout as Markdown.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from backscroll.ingest import KafkaSettings
from backscroll.ingest.sqlite.log import SQLiteEntryLog
from benchmarks.bench_append import records, topic


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_cli(source: Path, env: dict[str, str], n: int) -> dict[str, float]:
    cpu0, t0 = _children_cpu(), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "backscroll.cli.main", "append", str(source), "--json"],
        env=env,
        capture_output=True,
        check=False,
    )
    wall, cpu = time.monotonic() - t0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"append failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    summary = orjson.loads(done.stdout)
    assert summary["appended"] == n, summary
    return {"wall_s": wall, "cpu_s": cpu, "rps_wall": n / wall, "rps_cpu": n / cpu}


def run_ceiling(data: list[dict[str, Any]], path: Path) -> dict[str, float]:
    cpu0, t0 = _self_cpu(), time.monotonic()
    with SQLiteEntryLog(path) as log:
        for start in range(0, len(data), 2000):
            log.append_many(data[start : start + 2000])
    wall, cpu = time.monotonic() - t0, _self_cpu() - cpu0
    return {"wall_s": wall, "cpu_s": cpu, "rps_wall": len(data) / wall, "rps_cpu": len(data) / cpu}


def measure(
    events: int, sessions: int = 2000, text_bytes: int = 200, *, kafka: bool = True
) -> list[tuple[str, dict[str, float]]]:
    """The rows of this benchmark, (path, wall/CPU seconds and records/s), in one run."""
    data = records(events, sessions, text_bytes)
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        source = directory / "records.jsonl"
        source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in data))
        base = {k: v for k, v in os.environ.items() if not k.startswith("BACKSCROLL_")}
        env = {**base, "BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(directory / "cli.db")}
        rows.append(("cli embedded", run_cli(source, env, len(data))))
        rows.append(("ceiling embedded (append_many)", run_ceiling(data, directory / "ceiling.db")))
        if kafka:
            with topic(KafkaSettings()) as settings:
                env = {
                    **base,
                    "BACKSCROLL_BACKEND": "kafka-opensearch",
                    "BACKSCROLL_KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
                    "BACKSCROLL_KAFKA_TOPIC": settings.topic,
                    "BACKSCROLL_APPENDER_SPOOL_DIR": str(directory / "spool"),
                }
                rows.append(("cli kafka (durable)", run_cli(source, env, len(data))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--text-bytes", type=int, default=200)
    parser.add_argument("--no-kafka", action="store_true")
    args = parser.parse_args()
    rows = measure(args.events, args.sessions, args.text_bytes, kafka=not args.no_kafka)
    load = os.getloadavg()[0]
    print(f"{args.events} records; load average {load:.1f} on {os.cpu_count()} CPUs")
    print("| path | wall s | rec/s (wall) | CPU s | rec/s (per CPU s) |")
    print("|---|---:|---:|---:|---:|")
    for name, row in rows:
        wall, cpu = f"{row['rps_wall']:,.0f}", f"{row['rps_cpu']:,.0f}"
        print(f"| {name} | {row['wall_s']:.1f} | {wall} | {row['cpu_s']:.1f} | {cpu} |")


if __name__ == "__main__":
    main()
