"""Bulk load: an empty system to searchable, through the product's own commands, next to PostgreSQL.

    python -m benchmarks.bench_load --entries 272000 [--systems embedded,kafka-opensearch,pg]

The corpus (the relevance benchmark's generator, seed 7) is written to a JSONL file first (not
timed). Then, each from nothing:

* **embedded**: ``backscroll append FILE`` into a new SQLite file, then ``backscroll index
  --until-idle`` (two CLI processes, ``BACKSCROLL_BACKEND=embedded``);
* **kafka-opensearch**: ``backscroll append FILE`` into a new topic, then ``backscroll index
  --until-idle`` into a new index prefix with a new consumer group (real servers, the configured
  addresses); optionally (``--rebuild``) ``backscroll rebuild`` of the same topic afterwards;
* **pg**: ``COPY`` of the searchable rows into a private PostgreSQL cluster, then the GIN trigram
  index (and the two b-tree indexes and ``VACUUM ANALYZE`` of the relevance baseline).

Each system ends searchable: one search through the product's provider must find a known entry.
Results go to benchmarks/results/load-*.json with the load average at start and at end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from benchmarks.corpus import Corpus, CorpusConfig
from benchmarks.cpuacct import CpuWindow
from benchmarks.machine import machine_info
from benchmarks.size_parts import pg_parts, sqlite_parts

RESULTS = Path(__file__).resolve().parent / "results"
SYSTEMS = ("embedded", "kafka-opensearch", "pg")


def _write_corpus(entries: int, seed: int, path: Path) -> tuple[int, int, dict[str, Any]]:
    """Write the corpus as JSONL; (records, bytes, one searchable event to look for)."""
    probe: dict[str, Any] | None = None
    count = 0
    with path.open("wb") as out:
        for record in Corpus(CorpusConfig(entries=entries, seed=seed)).records():
            out.write(orjson.dumps(record) + b"\n")
            count += 1
            text = record.get("text") or ""
            if (
                probe is None
                and record["kind"] == "event"
                and record["type"] == "user/message"
                and len(text) > 40
            ):
                probe = record
    assert probe is not None
    return count, path.stat().st_size, probe


def _cli(args: list[str], env: dict[str, str], cpu: dict[str, Any] | None = None) -> float:
    """Run one CLI command; its wall seconds. ``cpu``: filled with the CPU seconds the command and
    the local servers took meanwhile (``cpuacct``), and how busy the machine was."""
    window = CpuWindow.over_servers()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    window.start()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "from backscroll.cli.main import app; app()", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - started
    window.stop()
    if cpu is not None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        split = window.report()
        command = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
        split["command_cpu_s"] = command
        split["others_cpu_s"] = max(0.0, split["others_cpu_s"] - command)
        cpu.update(split)
    if done.returncode != 0:
        raise RuntimeError(f"backscroll {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    print(f"  backscroll {' '.join(args)}: {took:.1f}s  {done.stdout.strip()[-200:]}", flush=True)
    return took


def _find(provider: Any, probe: dict[str, Any]) -> bool:
    from backscroll.query import SessionQueryRequest

    words = " ".join(str(probe["text"]).split()[:6])
    request = SessionQueryRequest(session_id=probe["session_id"], query=words, limit=50)
    return any(m.seq == probe["seq"] for m in provider.search(request).matches)


def load_embedded(corpus: Path, probe: dict[str, Any], workdir: Path) -> dict[str, Any]:
    from backscroll.query import Scope
    from backscroll.query.sqlite.provider import SQLiteProvider

    path = workdir / "load.db"
    env = {"BACKSCROLL_BACKEND": "embedded", "BACKSCROLL_SQLITE_PATH": str(path)}
    index_cpu: dict[str, Any] = {}
    append_s = _cli(["append", str(corpus)], env)
    index_s = _cli(["index", "--until-idle"], env, index_cpu)
    with SQLiteProvider(Scope.session(probe["session_id"]), path) as provider:
        found = _find(provider, probe)
    size = sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists())
    return {
        "append_s": append_s,
        "index_s": index_s,
        "total_s": append_s + index_s,
        "found": found,
        "bytes": size,
        "parts": sqlite_parts(path),
        "index_cpu": index_cpu,
    }


def load_kafka_opensearch(
    corpus: Path, probe: dict[str, Any], partitions: int, rebuild: bool
) -> dict[str, Any]:
    from backscroll.indexer import OpenSearchSettings, OpenSearchView
    from backscroll.ingest import KafkaSettings
    from backscroll.query import OpenSearchProvider, Scope
    from benchmarks.pipeline_throughput import delete_topic

    run = uuid.uuid4().hex[:8]
    env = {
        "BACKSCROLL_BACKEND": "kafka-opensearch",
        "BACKSCROLL_KAFKA_TOPIC": f"bench.load.{run}",
        "BACKSCROLL_KAFKA_PARTITIONS": str(partitions),
        "BACKSCROLL_OPENSEARCH_INDEX_PREFIX": f"bench-load-{run}",
        "BACKSCROLL_INDEXER_GROUP_ID": f"bench-load-{run}",
    }
    kafka = KafkaSettings().model_copy(update={"topic": env["BACKSCROLL_KAFKA_TOPIC"]})
    opensearch = OpenSearchSettings().model_copy(
        update={"index_prefix": env["BACKSCROLL_OPENSEARCH_INDEX_PREFIX"]}
    )
    out: dict[str, Any] = {"partitions": partitions}
    try:
        out["append_s"] = _cli(["append", str(corpus)], env)
        out["index_cpu"] = {}
        out["index_s"] = _cli(["index", "--until-idle"], env, out["index_cpu"])
        out["total_s"] = out["append_s"] + out["index_s"]
        with OpenSearchProvider(Scope.session(probe["session_id"]), opensearch) as provider:
            out["found"] = _find(provider, probe)
        if rebuild:
            out["rebuild_s"] = _cli(["rebuild"], env)
            with OpenSearchProvider(Scope.session(probe["session_id"]), opensearch) as provider:
                out["found_after_rebuild"] = _find(provider, probe)
    finally:
        view = OpenSearchView(opensearch)
        view.drop()
        view.close()
        delete_topic(kafka)
    return out


def load_pg(corpus: Path) -> dict[str, Any]:
    from benchmarks.pg import PgCluster
    from benchmarks.sys_pgtrgm import TABLE, PgTrgmTable

    with PgCluster() as cluster:
        table = PgTrgmTable(cluster)
        with corpus.open("rb") as lines:
            table.load(orjson.loads(line) for line in lines)
        with cluster.connect() as conn:
            parts = pg_parts(conn, TABLE)
        return {
            "total_s": table.load_seconds,
            "bytes": table.size_bytes(),
            "parts": parts,
            "server": cluster.version,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=272_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma separated: {', '.join(SYSTEMS)}")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the new topic")
    parser.add_argument(
        "--rebuild", action="store_true", help="also time `backscroll rebuild` (kafka-opensearch)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    result: dict[str, Any] = {
        "kind": "load",
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": f"python -m benchmarks.bench_load --entries {args.entries} "
        f"--systems {','.join(systems)}" + (" --rebuild" if args.rebuild else ""),
        "machine": machine_info(),
        "systems": {},
    }
    with tempfile.TemporaryDirectory(prefix="backscroll-load-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        records, size, probe = _write_corpus(args.entries, args.seed, corpus)
        result.update(records=records, corpus_bytes=size)
        print(f"corpus: {records} records, {size / 1e6:.1f} MB", flush=True)
        for system in systems:
            print(f"{system}:", flush=True)
            if system == "embedded":
                row = load_embedded(corpus, probe, Path(tmp))
            elif system == "kafka-opensearch":
                row = load_kafka_opensearch(corpus, probe, args.partitions, args.rebuild)
            else:
                row = load_pg(corpus)
            row["loadavg_after"] = list(os.getloadavg())
            result["systems"][system] = row
            print(f"  {row}", flush=True)
    pg = result["systems"].get("pg", {}).get("total_s")
    if pg:
        for name, row in result["systems"].items():
            if name != "pg" and "total_s" in row:
                row["x_pg"] = row["total_s"] / pg
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"load-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
