"""The speed table in one on-demand run: every row, now and peer side by side, per size.

    python -m benchmarks.speed                          # 272,000 entries, every row
    python -m benchmarks.speed --entries 50000,272000,1000000
    python -m benchmarks.speed --quick                  # small sizes: checks the report's shape
    python -m benchmarks.speed report [--results FILE]  # re-render the doc from a result

Rows, each against its peer in the same run (the functions are in ``speed_rows``): appender
durable per process vs confluent-kafka with the same validation; indexer end to end vs raw
``parallel_bulk`` (and 1 vs 2 worker processes when ``bench_pipeline`` offers it);
``backscroll append FILE`` embedded and Kafka vs ``append_many``; load from empty to searchable on
both backends vs PostgreSQL COPY + GIN trigram build; search p50/p95/p99 by scope vs pg_trgm
word_similarity 0.4; on-disk size vs pg_trgm's table + indexes. Sizes of 1,000,000 entries and more
run only the search row (embedded and pg_trgm; the 1M targets are the embedded backend's).

Needs the ``[bench]`` extra, the local stack (``backscroll up``) and PostgreSQL from Debian's
packages (installed with apt-get when missing). The result goes to
``benchmarks/results/speed-<time>.json`` (git-ignored), then ``report`` writes the section
between ``<!-- BEGIN speed -->`` and ``<!-- END speed -->`` of docs/benchmarks.md and
docs/img/speed-*.png (``--no-report`` skips that).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.cpuacct import machine_seconds
from benchmarks.machine import machine_info, package_versions

__all__ = ["main", "run"]

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
BIG = 1_000_000
ROWS = ("append", "indexer", "cli", "load", "search")
QUICK_ENTRIES = "3000,10000"


def _sizes(text: str) -> list[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        scale = 1
        if part.endswith("k"):
            part, scale = part[:-1], 1000
        elif part.endswith("m"):
            part, scale = part[:-1], 1_000_000
        sizes.append(int(float(part) * scale))
    return sorted(set(sizes))


def _versions() -> dict[str, Any]:
    versions = package_versions()
    for dist in ("kafka-python", "confluent-kafka", "orjson", "psycopg"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    stack = ROOT / "deploy" / "local" / "stack.sh"
    found = (
        re.search(r"KAFKA_VERSION=([\w.]+)", stack.read_text(encoding="utf-8")) if stack.exists() else None
    )
    versions["kafka"] = found.group(1) if found else None
    return versions


def _step(
    console: Console, name: str, fn: Callable[..., dict[str, Any]], /, *args: Any, **kwargs: Any
) -> dict[str, Any]:
    """One row; a failure is recorded with its cause and the other rows still run."""
    console.rule(name)
    started = time.monotonic()
    load = list(os.getloadavg())
    busy, stolen = machine_seconds()
    try:
        row = fn(*args, **kwargs)
    except Exception as err:  # one broken row must not sink the others' numbers
        console.print(f"[red]{name} failed: {type(err).__name__}: {err}")
        traceback.print_exc()
        row = {"error": f"{type(err).__name__}: {err}"}
    row["seconds_taken"] = time.monotonic() - started
    row["loadavg"] = [load, list(os.getloadavg())]
    busy_after, stolen_after = machine_seconds()
    row["machine_cpu_s"] = {"busy": busy_after - busy, "stolen": stolen_after - stolen}
    console.print({k: v for k, v in row.items() if not isinstance(v, dict)})
    return row


def run(args: argparse.Namespace, command: str, console: Console) -> Path:
    """Every requested row for every size; returns the result file."""
    from benchmarks import speed_rows

    sizes = _sizes(args.entries)
    rows = tuple(r.strip() for r in args.rows.split(",") if r.strip())
    unknown = set(rows) - set(ROWS)
    if unknown:
        raise SystemExit(f"unknown rows {sorted(unknown)} (known: {', '.join(ROWS)})")
    started = datetime.now(UTC)
    t0 = time.monotonic()
    cpu_at_start = machine_seconds()
    result: dict[str, Any] = {
        "kind": "speed",
        "schema": 1,
        "quick": bool(args.quick),
        "seed": args.seed,
        "started_at": started.isoformat(timespec="seconds"),
        "command": command,
        "machine": machine_info() | {"loadavg_at_start": list(os.getloadavg())},
        "versions": _versions(),
        "runs": [],
    }
    out: Path = args.out
    if args.warm_servers and {"append", "indexer", "load"} & set(rows):
        warm = speed_rows.warm_servers
        result["warmup"] = _step(console, "warm-up (not measured)", warm, args.warm_servers, console)
    for entries in sizes:
        console.rule(f"[bold]{entries:,} entries")
        size: dict[str, Any] = {"entries": entries, "loadavg_at_start": list(os.getloadavg()), "rows": {}}
        result["runs"].append(size)
        big = entries >= BIG
        wanted = ("search",) if big else rows
        got = size["rows"]
        if "append" in wanted:
            events = min(entries, args.append_max)
            got["append"] = _step(console, "append", speed_rows.append_row, events)
        if "indexer" in wanted:
            got["indexer"] = _step(
                console, "indexer", speed_rows.indexer_row, entries, console, rounds=args.rounds
            )
        if "cli" in wanted:
            got["cli"] = _step(console, "cli append", speed_rows.cli_row, entries)
        if "load" in wanted:
            got["load"] = _step(console, "load", speed_rows.load_row, entries, args.seed, rounds=args.rounds)
        if "search" in wanted:
            systems = ("embedded",) if big else ("backscroll", "embedded")
            got["search"] = _step(
                console,
                "search",
                speed_rows.search_row,
                entries,
                args.seed,
                systems=systems,
                queries=args.queries,
                warmup=args.warmup,
                opensearch=args.opensearch,
                index_prefix=args.index_prefix,
                out=out / "speed-relevance",
                command=command,
                console=console,
            )
            for key in ("opensearch", "postgresql"):
                found = got["search"].get("versions", {}).get(key)
                if found:
                    result["versions"][key] = found
        size["loadavg_at_end"] = list(os.getloadavg())
    result["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    result["seconds"] = time.monotonic() - t0
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    busy, stolen = machine_seconds()
    result["machine"]["cpu_s"] = {"busy": busy - cpu_at_start[0], "stolen": stolen - cpu_at_start[1]}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"speed-{started:%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    console = Console()
    if argv[:1] == ["report"]:
        rep = argparse.ArgumentParser(prog="python -m benchmarks.speed report")
        rep.add_argument("--results", type=Path, default=RESULTS_DIR, help="a speed-*.json or its directory")
        rep.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks.md")
        rep.add_argument("--img", type=Path, default=None)
        args = rep.parse_args(argv[1:])
        from benchmarks.speed_report import write_docs

        docs, images = write_docs(args.results, args.docs, args.img)
        console.print(f"wrote {docs} and {', '.join(str(p) for p in images)}")
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.speed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--entries", default=None, help="corpus size(s), comma separated (default 272000)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: sizes {QUICK_ENTRIES}, few queries")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma list of {', '.join(ROWS)}")
    parser.add_argument("--append-max", type=int, default=None, help="appender events cap (default 100,000)")
    parser.add_argument(
        "--queries", type=int, default=None, help="queries per variant and scope (default 40)"
    )
    parser.add_argument("--warmup", type=int, default=None, help="unmeasured queries first (default 20)")
    parser.add_argument(
        "--warm-servers",
        type=int,
        default=None,
        help="events through the appender and the indexer first, not measured (default 30,000; 0: none)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="the indexer and load rows measure both sides this many times, alternating (default 2)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--opensearch", default=os.environ.get("BACKSCROLL_OPENSEARCH_URL", "http://127.0.0.1:9200")
    )
    parser.add_argument("--index-prefix", default="speedbench", help="OpenSearch prefix of the search row")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--no-report", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args(argv)
    args.entries = args.entries or (QUICK_ENTRIES if args.quick else "272000")
    args.append_max = args.append_max or (3000 if args.quick else 100_000)
    args.queries = args.queries or (4 if args.quick else 40)
    args.warmup = args.warmup if args.warmup is not None else (5 if args.quick else 20)
    args.rounds = args.rounds or (1 if args.quick else 2)
    if args.warm_servers is None:
        args.warm_servers = 1000 if args.quick else 30_000
    command = "python -m benchmarks.speed " + shlex.join(argv)
    path = run(args, command.strip(), console)
    console.print(f"result: {path}")
    if not args.no_report:
        from benchmarks.speed_report import write_docs

        docs, images = write_docs(path)
        console.print(f"wrote {docs} and {', '.join(str(p) for p in images)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
